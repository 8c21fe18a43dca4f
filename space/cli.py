"""`negt2ibench serve` (the Space on this machine, or `--demo`) and `negt2ibench deploy-space` (the
Space folder and its upload). `negt2ibench leaderboard ...` is registered by `leaderboard/cli.py`."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
import time
from pathlib import Path

from dataset_builder.layout import DEFAULT_DATASET_DIR
from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import (
    add_home_option,
    add_weights_dir_option,
    host,
    port,
    repo_id,
)

DEFAULT_DATASET = DEFAULT_DATASET_DIR


def _say(stage: str) -> None:
    """One line of `serve`'s progress, on stderr as it happens (stdout keeps what was chosen)."""
    print(f"serve: {stage}", file=sys.stderr, flush=True)


def _check_free(host: str, port: int) -> None:
    """Refuse now, before the app loads, a port another server listens on or a host that names no
    address of this machine; the probe binds as the server will (uvicorn: IPv6 when the host has a
    colon, SO_REUSEADDR, so only a listener counts), then lets go."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except (socket.gaierror, UnicodeError) as error:
            raise UserError(f"--host {host}: no such host here ({error})") from None
        except OSError as error:
            if error.errno == errno.EADDRNOTAVAIL:
                raise UserError(f"--host {host}: not an address of this machine") from None
            reason = "in use (another server listens there)" if error.errno == errno.EADDRINUSE else error.strerror
            raise UserError(f"--port {port} on {host}: {reason}; pick another port") from None


def _serve_demo(args: argparse.Namespace) -> int:
    """`serve --demo`: the Space on the shipped synthetic examples, in a temporary folder removed at the end."""
    started = time.monotonic()
    given = [
        flag
        for flag, value in (("--dataset", args.dataset), ("--home", args.home), ("--images-from", args.images_from))
        if value is not None
    ]
    given += ["--annotation-sample"] if args.annotation_sample is not None else []
    if given:
        raise UsageError(f"--demo brings its own prompts, store and sample: drop {', '.join(given)}")
    _check_free(args.host, args.port)
    import tempfile

    _say("writing the synthetic examples and the demo's leaderboard store, beside the import …")
    from .demo import start_demo

    with tempfile.TemporaryDirectory(prefix="negt2i_demo_") as folder:
        # all the demo keeps (its store, the salt of visitors' hashed addresses) goes with its folder
        os.environ["NEGT2I_HOME"] = folder
        demo_written = start_demo(folder)
        _say("importing gradio and the app …")
        from .app import LAUNCH_KWARGS, build_app
        from .serving import serve

        _say("waiting for the synthetic examples and the store …")
        setup = demo_written()
        print(f"demo: synthetic examples and a leaderboard store in {folder} (removed when it stops)", flush=True)
        _say("building the app …")
        demo = build_app(
            forwarded_allow_ips=args.forwarded_allow_ips, weights_dir=args.weights_dir, **setup.app_kwargs()
        )
        serve(demo, args.host, args.port, LAUNCH_KWARGS, _say, started)
    return 0


def _check_serve_inputs(args: argparse.Namespace) -> Path | None:
    """The dataset `serve` reads (None: the corpus built in memory), after the checks that need no
    loading: the folders and files named, the judge's key, the port."""
    dataset = args.dataset
    if dataset is not None and not Path(dataset).exists():
        raise UserError(f"no dataset at {dataset}: run `negt2ibench build --out {dataset}` first, or omit --dataset")
    if dataset is None and DEFAULT_DATASET.exists():
        dataset = DEFAULT_DATASET
    if args.images_from is not None and not args.images_from.is_dir():
        raise UserError(f"--images-from {args.images_from}: no such folder")
    if args.annotation_sample is not None and not args.annotation_sample.is_file():
        raise UserError(
            f"no annotation sample at {args.annotation_sample}: draw one with `negt2ibench annotation-sample`"
        )
    if args.judge:
        from judges.registry import get_spec

        get_spec(args.judge)  # an unknown key fails now, before the app is built
    _check_free(args.host, args.port)
    return Path(dataset) if dataset is not None else None


def _serve(args: argparse.Namespace) -> int:
    started = time.monotonic()
    if args.demo:
        return _serve_demo(args)
    if args.home:
        os.environ["NEGT2I_HOME"] = str(args.home)
    dataset = _check_serve_inputs(args)
    from dataset_builder.loading import load_prompts
    from leaderboard.store.sqlite_store import open_store

    _say(f"loading the prompts ({dataset or 'the corpus, built in memory'}) …")
    prompts = load_prompts(dataset)  # unreadable prompts: a one-line UserError
    _say("opening the leaderboard store …")
    store = open_store()
    print(f"prompts: {dataset or 'built in memory (default seed)'}; leaderboard store: {store!r}", flush=True)
    if args.annotation_sample:
        print(f"annotation sample: {args.annotation_sample} (the Annotate tab)")
    if args.judge:
        print(f"judge beside the scorer: {args.judge} ({args.judge_mode or 'pos'} mode)", flush=True)
    _say("importing gradio and the app …")
    from .app import LAUNCH_KWARGS, build_app
    from .serving import serve

    _say("building the app …")
    demo = build_app(  # an unreadable sample or an unknown judge: a one-line UserError
        forwarded_allow_ips=args.forwarded_allow_ips,
        prompts=prompts,
        dataset=dataset,
        store=store,
        annotation_sample=args.annotation_sample,
        annotation_images=args.annotation_images,
        judge=args.judge,
        judge_mode=args.judge_mode,
        weights_dir=args.weights_dir,
        images_from=args.images_from,
    )
    serve(demo, args.host, args.port, LAUNCH_KWARGS, _say, started)
    return 0


def _deploy(args: argparse.Namespace) -> int:
    from .deploy import deploy_space, hardware_hint

    out = Path(args.out)
    files, url = deploy_space(args.repo_id, out, dry_run=args.dry_run, hardware=args.hardware)
    for path in files:
        print(path)
    if args.dry_run:
        print(f"dry run: {len(files)} files assembled in {out}; nothing uploaded")
    else:
        print(f"uploaded {len(files)} files to https://huggingface.co/spaces/{args.repo_id} ({url})")
    if args.hardware and not args.dry_run:
        print(f"requested {args.hardware} hardware for {args.repo_id}: the Space restarts on it")
    else:
        print(hardware_hint(args.repo_id))
    return 0


def _hardware(value: str) -> str:
    """A Space hardware flavour huggingface_hub knows (`SpaceHardware`), e.g. zero-a10g for ZeroGPU."""
    from huggingface_hub import SpaceHardware

    flavours = [hardware.value for hardware in SpaceHardware]
    if value not in flavours:
        raise argparse.ArgumentTypeError(f"must be a Space hardware flavour ({', '.join(flavours)}), got {value!r}")
    return value


def _forwarded(value: str) -> str:
    from leaderboard.intake.identity import check_forwarded_allow_ips

    try:
        return check_forwarded_allow_ips(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `serve` and `deploy-space` to the main parser's sub-commands."""
    _register_serve(subparsers)
    _register_deploy_space(subparsers)


def _register_serve(subparsers: argparse._SubParsersAction) -> None:
    """`serve`: its parser, options and handler."""
    serve = subparsers.add_parser(
        "serve",
        help="serve the Space (explore, score an upload, leaderboard, submit, annotate) on this machine",
        description=(
            "Run the Gradio app locally. Prompts come from --dataset (default build/negt2ibench when it exists, "
            "else the corpus is built in memory); the leaderboard is SQLite under NEGT2I_HOME "
            "(default ~/.cache/negt2ibench), or the Hub dataset repo named by NEGT2I_RESULTS_REPO. "
            "Scoring loads the evaluator's models on first use. --annotation-sample opens the Annotate tab on a "
            "sample from `negt2ibench annotation-sample`; answers go to the same store "
            "(`negt2ibench annotations export` writes them out)."
        ),
    )
    _add_network_options(serve)
    _add_content_options(serve)
    serve.set_defaults(handler=_serve)


def _add_network_options(serve: argparse.ArgumentParser) -> None:
    """Where `serve` listens, and which proxies it believes."""
    serve.add_argument(  # argparse checks a text default with `type` too: a bad GRADIO_SERVER_PORT is refused
        "--port",
        type=port,
        default=os.environ.get("GRADIO_SERVER_PORT", "7860"),
        help="port to listen on, 1 to 65535 (default $GRADIO_SERVER_PORT, else 7860)",
    )
    serve.add_argument(
        "--host",
        type=host,
        default="127.0.0.1",
        help="address to bind: an IP address or a host name (default 127.0.0.1; 0.0.0.0 to share on the LAN)",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        type=_forwarded,
        default=None,
        metavar="IPS",
        help="proxies whose X-Forwarded-For is believed, comma-separated addresses or networks (uvicorn's "
        "convention; default $FORWARDED_ALLOW_IPS, else none: the socket peer is the client)",
    )


def _add_content_options(serve: argparse.ArgumentParser) -> None:
    """What `serve` shows: the demo or the dataset, store, weights, images, annotation sample and judge."""
    serve.add_argument(
        "--demo",
        action="store_true",
        help="every tab filled from the shipped synthetic examples (a verified and a pending entry, images in the "
        "Gallery and Compare, an annotation sample), each marked synthetic; no weights, no network; "
        "its store is a temporary folder",
    )
    serve.add_argument("--dataset", type=Path, default=None, help="built dataset folder (from `negt2ibench build`)")
    add_home_option(serve, "NEGT2I_HOME for this run (the SQLite leaderboard lives there)")
    add_weights_dir_option(
        serve,
        "folder filled by `negt2ibench download-models --dir DIR` (default: the Hugging Face cache and $RF_HOME)",
        as_path=True,
    )
    serve.add_argument(
        "--images-from",
        type=Path,
        default=None,
        metavar="DIR",
        help="read submissions' images from DIR/ORG/NAME (dataset folders laid out as the Hub repos) instead of the "
        "Hub, here and in the local verification jobs (a mirror, or images not on the Hub)",
    )
    serve.add_argument(
        "--annotation-sample",
        type=Path,
        default=os.environ.get("NEGT2I_ANNOTATION_SAMPLE") or None,
        metavar="FILE",
        help="sample.jsonl for the Annotate tab (default $NEGT2I_ANNOTATION_SAMPLE; none: the tab says how)",
    )
    serve.add_argument(
        "--annotation-images",
        default=None,
        metavar="DATASET",
        help="dataset folder or Hub dataset repo holding the sample's images, when not where its lines say",
    )
    serve.add_argument(
        "--judge",
        metavar="KEY",
        default=None,
        help="also show this VLM judge's answers in 'Score an image' (see `negt2ibench judge --list`; "
        "default $NEGT2I_JUDGE; off: a judge needs GPU memory)",
    )
    serve.add_argument(
        "--judge-mode",
        choices=("pos", "neg", "whole"),
        default=None,
        help="the judge's questions: pos (negated statements asked affirmatively, default), neg, or whole",
    )


def _register_deploy_space(subparsers: argparse._SubParsersAction) -> None:
    """`deploy-space`: its parser, options and handler."""
    deploy = subparsers.add_parser(
        "deploy-space",
        help="assemble the Space folder and upload it to a Hugging Face Space",
        description=(
            "Write the Space folder (app.py, the project's packages, requirements.txt pinned for ZeroGPU's Python "
            "3.12 and torch 2.11, README.md with the Space YAML) to --out and upload it with huggingface_hub "
            "(token: HF_TOKEN or `hf auth login`). --hardware zero-a10g then asks the Hub to run it on ZeroGPU "
            "(HfApi.request_space_hardware); without it, pick ZeroGPU in the Space's settings. "
            "--dry-run lists the files and uploads nothing."
        ),
    )
    deploy.add_argument("--repo-id", required=True, type=repo_id, metavar="ORG/NAME", help="the Space, as ORG/NAME")
    deploy.add_argument("--dry-run", action="store_true", help="assemble and list the files; no network")
    deploy.add_argument("--out", default="build/space", help="where to assemble the folder (default build/space)")
    deploy.add_argument(
        "--hardware",
        type=_hardware,
        default=None,
        metavar="FLAVOUR",
        help="after the upload, request this hardware for the Space (zero-a10g: ZeroGPU; needs an account that "
        "may host ZeroGPU Spaces)",
    )
    deploy.set_defaults(handler=_deploy)
