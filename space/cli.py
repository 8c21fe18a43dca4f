"""`negt2ibench serve`, `negt2ibench deploy-space` and `negt2ibench leaderboard list|verify|recheck`
(and `publish|hub-check`, `space.hub_cli`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dataset_builder.layout import DEFAULT_DATASET_DIR
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import device, non_negative_int, positive_int, repo_id

DEFAULT_DATASET = DEFAULT_DATASET_DIR


def _serve(args: argparse.Namespace) -> int:
    if args.home:
        os.environ["NEGT2I_HOME"] = str(args.home)
    dataset = args.dataset
    if dataset is not None and not Path(dataset).exists():
        raise UserError(f"no dataset at {dataset}: run `negt2ibench build --out {dataset}` first, or omit --dataset")
    if dataset is None and DEFAULT_DATASET.exists():
        dataset = DEFAULT_DATASET
    if args.annotation_sample is not None and not args.annotation_sample.is_file():
        raise UserError(
            f"no annotation sample at {args.annotation_sample}: draw one with `negt2ibench annotation-sample`"
        )
    if args.judge:
        from judges.registry import get_spec

        get_spec(args.judge)  # an unknown key fails now, before the app is built
    from .app import LAUNCH_KWARGS, build_app
    from .store import open_store

    store = open_store()
    print(f"prompts: {dataset or 'built in memory (default seed)'}; leaderboard store: {store!r}")
    if args.annotation_sample:
        print(f"annotation sample: {args.annotation_sample} (the Annotate tab)")
    if args.judge:
        print(f"judge beside the scorer: {args.judge} ({args.judge_mode or 'pos'} mode)")
    demo = build_app(  # unreadable prompts, sample or an unknown judge: a one-line UserError
        forwarded_allow_ips=args.forwarded_allow_ips,
        dataset=dataset,
        store=store,
        annotation_sample=args.annotation_sample,
        annotation_images=args.annotation_images,
        judge=args.judge,
        judge_mode=args.judge_mode,
        weights_dir=args.weights_dir,
    )
    demo.launch(server_name=args.host, server_port=args.port, **LAUNCH_KWARGS)
    return 0


def _deploy(args: argparse.Namespace) -> int:
    from .deploy import deploy_space

    out = Path(args.out)
    files, url = deploy_space(args.repo_id, out, dry_run=args.dry_run)
    for path in files:
        print(path)
    if args.dry_run:
        print(f"dry run: {len(files)} files assembled in {out}; nothing uploaded")
    else:
        print(f"uploaded {len(files)} files to https://huggingface.co/spaces/{args.repo_id} ({url})")
    return 0


def _leaderboard_list(args: argparse.Namespace) -> int:
    import time

    from .store import open_store

    store = open_store(args.home)
    entries = store.list_entries()
    print(f"{len(entries)} submission(s) in {store!r}")
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(entry.created_at))
        print(f"{entry.submission_id[:8]}  {when}  {entry.model_name}  {entry.status}  {entry.reason}")
    return 0


def _forwarded(value: str) -> str:
    from .identity import check_forwarded_allow_ips

    try:
        return check_forwarded_allow_ips(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _leaderboard_verify(args: argparse.Namespace) -> int:
    from dataset_builder.loading import prompt_index
    from negt2ibench.api import Evaluator

    from .app import PRESET
    from .rescore import local_images, verify_full, verify_sampled
    from .store import negt2i_home, open_store
    from .submissions import SpotCheckSetup, hub_images

    if args.images_from is not None and not args.images_from.is_dir():
        raise UserError(f"--images-from {args.images_from}: no such folder")
    index = prompt_index(args.dataset)
    evaluator = Evaluator(
        PRESET, device=args.device, weights_dir=args.weights_dir, prompts=index, batch_size=args.batch_size
    )

    def score(images, prompts, model_key, sample_indices):
        return evaluator.score_many(
            images, prompts, model_key=model_key, sample_indices=sample_indices, progress=False, num_workers=0
        )

    images = local_images(args.images_from) if args.images_from is not None else hub_images
    setup = SpotCheckSetup(index, score, images, config=evaluator.config)
    if not getattr(args, "full", False):
        verify_sampled(open_store(args.home), setup)
        return 0
    home = Path(args.home).expanduser() if args.home else negt2i_home()
    verify_full(
        lambda: open_store(args.home),
        setup,
        evaluator,
        work=args.work_dir or home / "verify",
        images_from=args.images_from,
        limit=args.limit,
        progress=not args.no_progress,
        num_workers=args.num_workers,
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
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
    serve.add_argument(
        "--port",
        type=positive_int,
        default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)),
        help="port to listen on (default 7860)",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 to share on the LAN)"
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        type=_forwarded,
        default=None,
        metavar="IPS",
        help="proxies whose X-Forwarded-For is believed, comma-separated addresses or networks (uvicorn's "
        "convention; default $FORWARDED_ALLOW_IPS, else none: the socket peer is the client)",
    )
    serve.add_argument("--dataset", type=Path, default=None, help="built dataset folder (from `negt2ibench build`)")
    serve.add_argument(
        "--home", type=Path, default=None, help="NEGT2I_HOME for this run (the SQLite leaderboard lives there)"
    )
    serve.add_argument(
        "--weights-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder filled by `negt2ibench download-models --dir DIR` (default: the Hugging Face cache and $RF_HOME)",
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
    serve.set_defaults(handler=_serve)

    deploy = subparsers.add_parser(
        "deploy-space",
        help="assemble the Space folder and upload it to a Hugging Face Space",
        description=(
            "Write the Space folder (app.py, the project's packages, requirements.txt, README.md with the Space YAML: "
            "gradio SDK, ZeroGPU hardware) to --out and upload it with huggingface_hub "
            "(token: HF_TOKEN or `hf auth login`). "
            "--dry-run lists the files and uploads nothing."
        ),
    )
    deploy.add_argument("--repo-id", required=True, type=repo_id, metavar="ORG/NAME", help="the Space, as ORG/NAME")
    deploy.add_argument("--dry-run", action="store_true", help="assemble and list the files; no network")
    deploy.add_argument("--out", default="build/space", help="where to assemble the folder (default build/space)")
    deploy.set_defaults(handler=_deploy)

    board = subparsers.add_parser(
        "leaderboard",
        help="list the leaderboard's submissions, verify those waiting, publish them to the Hub, check the Hub's",
        description=(
            "The leaderboard store the Space uses (SQLite under NEGT2I_HOME, or the Hub dataset repo named by "
            "NEGT2I_RESULTS_REPO). A submission whose spot check could not run (images unreachable, no GPU) is "
            "pending; the Space retries it at start-up and every 30 minutes. `verify` runs the spot check here, "
            "and `verify --full` re-scores every image with this machine's models (docs/leaderboard.md); `publish` "
            "proposes a verified entry's .eval_results to its model repo and `hub-check` compares the Hub's "
            "leaderboard with the entries verified here (docs/hub.md)."
        ),
    )
    actions = board.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every submission with its status and reason")
    verify = actions.add_parser(
        "verify",
        help="verify waiting submissions here: their spot check, or with --full every image re-scored",
        description=(
            "Without --full: validate received submissions and run the spot check of validated and pending ones "
            "with this machine's models (the Space's policy: 652 of 19,200 images, at most 5 may disagree). "
            "With --full: re-score every image of each submission that is held (taken first), waits, or was "
            "verified by a sample, through "
            "the engine of `negt2ibench score` (resumable: rerun the same command after an interruption; "
            "multi-GPU: `accelerate launch -m negt2ibench leaderboard verify --full`), and write this re-score's "
            "numbers as the entry's ranked ones: verified (full re-score). Prints each submission's new status."
        ),
        epilog="examples:\n"
        "  negt2ibench leaderboard verify\n"
        "  negt2ibench leaderboard verify --full --limit 1\n"
        "  accelerate launch --multi_gpu --num_processes 4 -m negt2ibench leaderboard verify --full",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    again = actions.add_parser(
        "recheck",
        help="the same as `verify` without --full (kept for scripts)",
        description="Validate received submissions and re-run the spot check of validated and pending ones "
        "with this machine's models; prints each one's new status and reason.",
    )
    for sub in (listing, verify, again):
        sub.add_argument("--home", type=Path, default=None, help="NEGT2I_HOME (where the SQLite leaderboard lives)")
    for sub in (verify, again):
        sub.add_argument(
            "--dataset",
            type=Path,
            default=None,
            help="built dataset folder with the prompts (default: built in memory)",
        )
        sub.add_argument("--device", type=device, default="auto", help="where the models run (default: auto)")
        sub.add_argument(
            "--weights-dir",
            type=Path,
            default=None,
            metavar="DIR",
            help="folder filled by `negt2ibench download-models --dir DIR`",
        )
        sub.add_argument(
            "--images-from",
            type=Path,
            default=None,
            metavar="DIR",
            help="read each submission's images from DIR/ORG/NAME (a dataset folder laid out as the Hub repo) "
            "instead of the Hub",
        )
        sub.add_argument(
            "--batch-size", type=positive_int, default=8, metavar="N", help="images per model batch (default: 8)"
        )
    verify.add_argument("--full", action="store_true", help="re-score every image, not a sample")
    verify.add_argument(
        "--limit", type=positive_int, default=None, metavar="N", help="with --full: at most N submissions this run"
    )
    verify.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --full: where the re-scored records and downloaded images go (default NEGT2I_HOME/verify); "
        "keep it to resume",
    )
    verify.add_argument(
        "--num-workers",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="with --full: image-decoding processes per model process (as `score --num-workers`)",
    )
    verify.add_argument("--no-progress", action="store_true", help="no progress bar")
    from .hub_cli import register_hub_actions

    register_hub_actions(actions)
    listing.set_defaults(handler=_leaderboard_list)
    verify.set_defaults(handler=_leaderboard_verify)
    again.set_defaults(handler=_leaderboard_verify)
