"""`negt2ibench reward serve`: the shell over `negt2ibench.reward_server` (flask and gunicorn are imported
by the handler only, so `--help` needs neither)."""

from __future__ import annotations

import argparse
import functools

from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_prompts_option,
    add_weights_dir_option,
    host,
    port,
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
            "types are refused); POST /json takes and answers the same as JSON with base64 images; POST\n"
            "/compute answers Flow-Factory's RemoteRewardClient ({prompt, image} -> {rewards}); GET /health\n"
            "says the worker is ready. One gunicorn worker per visible GPU (or --workers), each with its own\n"
            "models. Every request is bounded before a model runs; a failure is one line: 413 over a bound,\n"
            "400 for what the client sent wrong (no retry helps), 500 for a fault of the server."
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
    serve.add_argument(
        "--host", type=host, default=DEFAULT_HOST, help=f"address to bind (default: {DEFAULT_HOST}, this machine)"
    )
    serve.add_argument("--port", type=port, default=DEFAULT_PORT, help=f"port, 1 to 65535 (default: {DEFAULT_PORT})")
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
    register_audit(commands)


AUDIT_DESCRIPTION = """\
Audit a model trained on the negation reward for reward hacking. For each checkpoint, the images it
generated for training prompts and for a fresh draw (prompts of the same design it never saw) are scored
by the reward and by a second, independent judge (a VLM of `negt2ibench judge` in its statement mode,
pos). Means over prompts with 95% bootstrap intervals; a checkpoint is flagged when the reward on its
training prompts exceeds the reward on the fresh draw (train >> fresh), or when the reward rose more
than the judge since the first checkpoint (reward >> judge), by more than --margin. Writes audit.md,
audit.csv, audit.json and audit.png to --out. See docs/reward.md#the-audit."""


def register_audit(commands) -> None:
    audit = commands.add_parser(
        "audit",
        help="reward hacking: the reward and a second judge on training prompts and a fresh draw, per checkpoint",
        description=AUDIT_DESCRIPTION,
        epilog=(
            "examples:\n"
            "  negt2ibench reward audit --checkpoints runs/ckpts --fresh-seed 917 --judge qwen3_vl_8b --out audit/\n"
            "  negt2ibench reward audit --train out/train --fresh out/fresh --fresh-prompts build/fresh "
            "--judge-model-id DIR --out audit/\n\n"
            "--checkpoints DIR: one sub-folder per checkpoint (in the order of their names, step_500 before\n"
            "step_1000), each with train/ and fresh/ folders of {prompt_id}_{sample_index}.png images."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    images = audit.add_mutually_exclusive_group(required=True)
    images.add_argument("--checkpoints", metavar="DIR", help="a folder of checkpoints' images (see below)")
    images.add_argument("--train", metavar="DIR", help="one model's images of training prompts (with --fresh)")
    audit.add_argument("--fresh", metavar="DIR", help="with --train: its images of the fresh draw")
    audit.add_argument(
        "--train-prompts", metavar="SRC", help="the training prompts (default: `build --split train`'s, built in)"
    )
    fresh = audit.add_mutually_exclusive_group(required=True)
    fresh.add_argument(
        "--fresh-prompts", metavar="SRC", help="the fresh draw's prompts (a dataset folder or prompts.jsonl)"
    )
    fresh.add_argument("--fresh-seed", type=positive_int, metavar="N", help="the fresh draw's seed (ids fresh_...)")
    judge = audit.add_mutually_exclusive_group(required=True)
    judge.add_argument("--judge", metavar="KEY", help="a registered judge (`negt2ibench judge --list`)")
    judge.add_argument("--judge-model-id", metavar="HUB_ID", help="any transformers chat VLM (Hub id or folder)")
    audit.add_argument("--judge-batch-size", type=positive_int, default=8, metavar="N", help="judge's pairs per pass")
    audit.add_argument("--download", action="store_true", help="fetch the judge's weights when absent (internet)")
    audit.add_argument("--margin", type=float, default=0.05, help="flag a gap whose interval is above this (0.05)")
    audit.add_argument("--out", required=True, metavar="DIR", help="where audit.md/.csv/.json/.png are written")
    add_device_option(audit, "auto, cpu or cuda (default: auto)")
    add_batch_size_option(audit, "images scored at once", default=8)
    audit.add_argument("--preset", default="current", help="the negation reward's scorer preset (default: current)")
    add_weights_dir_option(audit)
    audit.set_defaults(handler=run_audit_command)


def run_audit_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dataset_builder.corpus import build_fresh_corpus, build_train_corpus
    from dataset_builder.records import PromptIndex
    from judges.registry import chosen_spec, required_adapter_class
    from negt2ibench.inputs import prompt_index
    from negt2ibench.reward import Reward
    from negt2ibench.reward_audit import audit_table, checkpoint_folders, run_audit

    if args.train and not args.fresh:
        raise UsageError("--train needs --fresh: the same model's images of the fresh draw")
    if args.checkpoints and args.fresh:
        raise UsageError("--fresh goes with --train; with --checkpoints each checkpoint has its fresh/ folder")
    checkpoints = (
        checkpoint_folders(args.checkpoints) if args.checkpoints else [("model", Path(args.train), Path(args.fresh))]
    )
    for folder in (folder for _, *folders in checkpoints for folder in folders):
        if not folder.is_dir():
            raise UserError(f"{folder} is not a folder of images")
    train = prompt_index(args.train_prompts) if args.train_prompts else PromptIndex(build_train_corpus())
    if args.fresh_seed is not None:
        try:
            fresh = PromptIndex(build_fresh_corpus(args.fresh_seed))
        except ValueError as error:
            raise UsageError(f"--fresh-seed: {error}") from None
    else:
        fresh = prompt_index(args.fresh_prompts)
    reward = Reward(("negation",), negation_preset=args.preset, device=args.device, weights_dir=args.weights_dir)
    reward.require_weights()  # both judges' weights looked for before either loads
    spec = chosen_spec(args.judge, model_id=args.judge_model_id, custom_key=None, revision="main", flag="--judge")
    judge_class = required_adapter_class(spec, download=args.download)
    options = {"download": True} if args.download else {}
    adapter = judge_class(spec, device=args.device, batch_size=args.judge_batch_size, **options)
    rows = run_audit(
        checkpoints, (train, fresh), reward, adapter, out=args.out, margin=args.margin, batch_size=args.batch_size
    )
    from negt2ibench.core.table import to_markdown

    print(to_markdown(audit_table(rows, margin=args.margin)))
    for row in rows:
        if row.flags:
            print(f"flagged: {row.checkpoint}: {', '.join(row.flags)}")
    print(f"wrote {Path(args.out) / 'audit.md'}, audit.csv, audit.json and audit.png")
    return 0


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
