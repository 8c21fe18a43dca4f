"""`negt2ibench reward serve`: the shell over `negt2ibench.reward_server` (flask and gunicorn are imported
by the handler only, so `--help` needs neither)."""

from __future__ import annotations

import argparse
import functools

from negt2ibench.core.errors import UsageError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_prompts_option,
    add_weights_dir_option,
    positive_int,
)
from negt2ibench.reward_server import DEFAULT_HOST, DEFAULT_PORT


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reward",
        help="GenEval's and NegT2IBench's rewards for RL training (a Flow-GRPO-compatible server)",
        description=(
            "Serve GenEval's reward (reward-server's, exactly, on this project's detectors: no mmdet) and the\n"
            "negation reward (the share of a NegT2IBench prompt's satisfied elements) to a training job.\n"
            "See docs/reward.md."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="reward_command", metavar="COMMAND")
    parser.set_defaults(handler=lambda args: parser.print_help() or 0)
    serve = commands.add_parser(
        "serve",
        help="serve the reward on a port (Flow-GRPO's geneval_score client works unchanged)",
        description=(
            "Serve the reward over HTTP, as yifan123/reward-server does: POST / takes a pickle of\n"
            "{images: [JPEG bytes], meta_datas: [...], only_strict: bool} and answers a pickle of scores,\n"
            "rewards, strict_rewards, group_rewards and group_strict_rewards (pickles of anything but plain\n"
            "types are refused with 400); POST /json takes and answers the same as JSON with base64 images;\n"
            "GET /health says the worker is ready. One gunicorn worker per visible GPU (or --workers), each\n"
            "with its own models; an error is answered 500 with one line and the server goes on."
        ),
        epilog=(
            "examples:\n"
            "  negt2ibench reward serve                                  # GenEval's reward on 127.0.0.1:18085\n"
            "  negt2ibench reward serve --reward negation --port 18086   # NegT2IBench's\n"
            "  negt2ibench reward serve --reward geneval negation --workers 2 --device cuda"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--reward",
        nargs="+",
        choices=("geneval", "negation"),
        default=["geneval"],
        help="which metadata it scores: geneval (GenEval's), negation (NegT2IBench's), or both (default: geneval)",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default: {DEFAULT_HOST}, this machine)")
    serve.add_argument("--port", type=positive_int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    serve.add_argument(
        "--workers", type=positive_int, metavar="N", help="worker processes (default: one per visible GPU, else 1)"
    )
    add_device_option(serve, "auto, cpu or cuda (default: auto)")
    add_batch_size_option(serve, "images per model batch", default=64)
    serve.add_argument("--geneval-preset", default="geneval", metavar="PRESET", help="GenEval's preset (geneval)")
    serve.add_argument(
        "--options", nargs="*", default=[], metavar="KEY=VALUE", help="GenEval's --options (e.g. model=DIR)"
    )
    serve.add_argument("--preset", default="current", help="the negation reward's scorer preset (default: current)")
    add_prompts_option(serve, "where prompt ids are looked up (default: the test prompts)", metavar="SRC")
    add_weights_dir_option(serve)
    serve.add_argument("--timeout", type=positive_int, default=300, metavar="S", help="gunicorn's worker timeout")
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from evaluator.geneval.config import parse_options
    from negt2ibench.reward import Reward

    if args.device.startswith("cuda:") or args.device == "mps":
        raise UsageError("--device is auto, cpu or cuda: each worker takes its own GPU (CUDA_VISIBLE_DEVICES)")
    reward = functools.partial(
        Reward,
        tuple(args.reward),
        geneval_preset=args.geneval_preset,
        geneval_options=parse_options(args.options),
        negation_preset=args.preset,
        weights_dir=args.weights_dir,
        prompts=args.prompts,
        batch_size=args.batch_size,
    )
    # Every missing weight of every reward asked for: one line and exit 2, before torch is imported (to
    # count the GPUs) and before any worker starts. A look at the disk, made on the CPU: CUDA must not
    # start in the master, whose workers are forked from it.
    reward(device="cpu").require_weights()
    from negt2ibench.reward_server import serve, visible_gpus

    gpus = visible_gpus() if args.device != "cpu" else []
    if args.device == "cuda" and not gpus:
        raise UsageError("--device cuda but no GPU is visible")
    workers = args.workers or max(1, len(gpus))
    if gpus and workers > len(gpus):
        raise UsageError(f"--workers {workers} but {len(gpus)} GPUs are visible: one worker per GPU")
    build = functools.partial(reward, device="cuda" if gpus else "cpu")
    where = f"{len(gpus[:workers])} GPU(s)" if gpus else "the CPU"
    rewards = " + ".join(args.reward)
    print(f"reward {rewards}: {workers} worker(s) on {where}, http://{args.host}:{args.port}/", flush=True)
    serve(build, host=args.host, port=args.port, workers=workers, gpus=gpus[:workers] or None, timeout=args.timeout)
    return 0
