"""`negt2ibench leaderboard list|verify|recheck|verify-job|withdraw|publish|hub-check`: the leaderboard's
back end from the command line, without gradio (the Hub actions: `leaderboard.hub.hub_cli`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from leaderboard.checks.fresh_draw_policy import FRESH_PER_CELL
from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_home_option,
    add_limit_option,
    add_no_progress_flag,
    add_num_workers_option,
    add_weights_dir_option,
    positive_int,
)

HOME_HELP = "NEGT2I_HOME (where the SQLite leaderboard lives)"


def _leaderboard_list(args: argparse.Namespace) -> int:
    import time

    from leaderboard.store.sqlite_store import open_store

    store = open_store(args.home)
    entries = store.list_entries()
    print(f"{len(entries)} submission(s) in {store!r}")
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(entry.created_at))
        print(f"{entry.submission_id[:8]}  {when}  {entry.model_name}  {entry.status}  {entry.reason}")
    return 0


def _spot_setup(args: argparse.Namespace, evaluator=None):
    """The prompts, the evaluator (`evaluator`, else this machine's models) and the spot check's setup."""
    from dataset_builder.loading import prompt_index
    from leaderboard.checks.full_rescore_run import local_images
    from leaderboard.intake.submissions import PRESET, SpotCheckSetup, hub_images
    from negt2ibench.api import Evaluator

    if args.images_from is not None and not args.images_from.is_dir():
        raise UserError(f"--images-from {args.images_from}: no such folder")
    index = prompt_index(args.dataset)
    if evaluator is None:
        evaluator = Evaluator(
            PRESET, device=args.device, weights_dir=args.weights_dir, prompts=index, batch_size=args.batch_size
        )

    def score(images, prompts, model_key, sample_indices):
        return evaluator.score_many(
            images, prompts, model_key=model_key, sample_indices=sample_indices, progress=False, num_workers=0
        )

    images = local_images(args.images_from) if args.images_from is not None else hub_images
    return evaluator, SpotCheckSetup(index, score, images, config=evaluator.config)


def _work_dir(args: argparse.Namespace) -> Path:
    from leaderboard.store.sqlite_store import negt2i_home

    home = Path(args.home).expanduser() if args.home else negt2i_home()
    return args.work_dir or home / "verify"


def _leaderboard_verify(args: argparse.Namespace) -> int:
    from leaderboard.checks.full_rescore_run import verify_full
    from leaderboard.checks.verification_run import verify_sampled
    from leaderboard.store.sqlite_store import open_store

    evaluator, setup = _spot_setup(args)
    if not getattr(args, "full", False):
        verify_sampled(open_store(args.home), setup)
        return 0
    verify_full(
        lambda: open_store(args.home),
        setup,
        evaluator,
        work=_work_dir(args),
        images_from=args.images_from,
        limit=args.limit,
        progress=not args.no_progress,
        num_workers=args.num_workers,
    )
    return 0


def _open_named_store(args: argparse.Namespace):
    from leaderboard.store.sqlite_store import open_store, open_store_at

    return open_store_at(args.store, args.home) if args.store else open_store(args.home)


def generator_loader(device_name: str, download: bool):
    """The regeneration check's and the fresh draw's model loader: `load_generator` on this job's
    device (from the Hub too with `download`)."""

    def load(spec):
        from generation.backends import load_generator
        from generation.runner import resolve_device
        from negt2ibench.core.launch import Launch

        return load_generator(spec, resolve_device(device_name, Launch()), download=download)

    return load


def verify_job(args: argparse.Namespace, evaluator=None) -> int:
    """`leaderboard verify-job`: one entry's verification (`leaderboard.jobs.verify_job`). EVALUATOR: the
    scorer to use instead of this machine's models (a test's perception double)."""
    from leaderboard.jobs.verify_job import VerifyContext, verify_entry

    if args.full and args.fresh_draw:
        raise UsageError("pass --full or --fresh-draw, not both")
    store = _open_named_store(args)
    evaluator, setup = _spot_setup(args, evaluator)
    if args.download:
        from evaluator.models import weights

        weights.download(setup.config, args.weights_dir, echo=lambda line: print(line, flush=True))
    context = VerifyContext(
        store,
        setup,
        _work_dir(args),
        evaluator=evaluator,
        open_store=lambda: _open_named_store(args),
        images_from=args.images_from,
        progress=not args.no_progress,
        num_workers=args.num_workers,
        load_generator=generator_loader(args.device, args.download),
        fresh_per_cell=args.fresh_per_cell,
        deadline=time.monotonic() + args.stop_after if args.stop_after else None,
    )
    verify_entry(context, args.entry, "full" if args.full else "fresh" if args.fresh_draw else "spot")
    return 0


def _withdraw(args: argparse.Namespace) -> int:
    from leaderboard.intake.submissions import withdraw
    from leaderboard.jobs.verify_job import find_entry

    store = _open_named_store(args)
    entry = withdraw(store, find_entry(store, args.entry), args.reason)
    print(f"{entry.submission_id[:8]}  {entry.model_name}: {entry.status}: {entry.reason}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `leaderboard` and its actions (list, verify, recheck, verify-job, withdraw and the Hub's) to the
    main parser's sub-commands."""
    board = subparsers.add_parser(
        "leaderboard",
        help="list the leaderboard's submissions, verify those waiting, publish them to the Hub, check the Hub's",
        description=(
            "The leaderboard store the Space uses (SQLite under NEGT2I_HOME, or the Hub dataset repo named by "
            "NEGT2I_RESULTS_REPO). A submission waits (pending) until a verification job checks it: the Space "
            "launches `verify-job --entry ID` through its backend (NEGT2I_VERIFY_BACKEND: hf-jobs, local or none; "
            "docs/leaderboard.md), and a maintainer can run it anywhere. `verify` runs the spot check of every "
            "waiting submission here, and `verify --full` re-scores every image with this machine's models; "
            "`withdraw` takes an entry off (its job is cancelled); `publish` proposes a verified entry's "
            ".eval_results to its model repo and `hub-check` compares the Hub's leaderboard with the entries "
            "verified here (docs/hub.md)."
        ),
    )
    actions = board.add_subparsers(dest="action", metavar="ACTION", required=True)
    _register_list(actions)
    _register_verify(actions)
    _register_recheck(actions)
    _register_verify_job(actions)
    _register_withdraw(actions)
    from leaderboard.hub.hub_cli import register_hub_actions

    register_hub_actions(actions)


def _register_list(actions: argparse._SubParsersAction) -> None:
    """`leaderboard list`: its parser, options and handler."""
    listing = actions.add_parser("list", help="every submission with its status and reason")
    add_home_option(listing, HOME_HELP)
    listing.set_defaults(handler=_leaderboard_list)


def _register_verify(actions: argparse._SubParsersAction) -> None:
    """`leaderboard verify`: its parser, options and handler."""
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
    add_home_option(verify, HOME_HELP)
    _add_scoring_options(verify)
    _add_rescore_options(verify)
    add_limit_option(verify, "with --full: at most N submissions this run", at_least_one=True)
    verify.set_defaults(handler=_leaderboard_verify)


def _register_recheck(actions: argparse._SubParsersAction) -> None:
    """`leaderboard recheck`: its parser, options and handler."""
    again = actions.add_parser(
        "recheck",
        help="the same as `verify` without --full (kept for scripts)",
        description="Validate received submissions and re-run the spot check of validated and pending ones "
        "with this machine's models; prints each one's new status and reason.",
    )
    add_home_option(again, HOME_HELP)
    _add_scoring_options(again)
    again.set_defaults(handler=_leaderboard_verify)


def _register_verify_job(actions: argparse._SubParsersAction) -> None:
    """`leaderboard verify-job`: its parser, options and handler."""
    job = actions.add_parser(
        "verify-job",
        help="verify one submission (the job the Space launches; run it anywhere to settle a waiting entry)",
        description=(
            "Read one entry from the store (--store, else NEGT2I_RESULTS_REPO or SQLite under NEGT2I_HOME), "
            "validate it if it was only received, regenerate a seeded sample of its images from the model and seeds "
            "their records name (or mark it 'images not reproduced' when that model cannot be loaded), then run its "
            "spot check (or with --full re-score every image; with --fresh-draw score a verified entry's model on "
            "prompts drawn from a secret seed), and write the outcome back as one conditional write. It prints its "
            "plan (GPU-seconds) first. Idempotent: an entry with nothing left to do is "
            "left as it is. Resumable: rerun the same command after an interruption (the re-scored images are kept "
            "in --work-dir). Safe to run twice at once: each run claims the entry, a newer run takes the claim "
            "over, and only the holder's outcome lands."
        ),
        epilog="examples:\n"
        "  negt2ibench leaderboard verify-job --entry 3f2a9c1e\n"
        "  negt2ibench leaderboard verify-job --entry 3f2a9c1e --full --work-dir /scratch/verify\n"
        "  negt2ibench leaderboard verify-job --entry 3f2a9c1e --fresh-draw\n"
        "  negt2ibench leaderboard verify-job --entry 3f2a9c1e --store hub:org/negt2ibench-results",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_home_option(job, HOME_HELP)
    _add_entry_options(job)
    _add_verify_job_options(job)
    _add_scoring_options(job)
    _add_rescore_options(job)
    job.set_defaults(handler=verify_job)


def _add_verify_job_options(job: argparse.ArgumentParser) -> None:
    """`verify-job`'s own options: fetching what a fresh machine lacks, and the fresh draw."""
    job.add_argument(
        "--download",
        action="store_true",
        help="first fetch the evaluator's weights that are not here, and the generation model its images record "
        "(a fresh machine, e.g. a Hugging Face Job)",
    )
    job.add_argument(
        "--fresh-draw",
        action="store_true",
        help="the fresh draw of a verified entry whose images were reproduced: 432 prompts drawn from a secret "
        "seed, 4 images each generated with its model and scored (docs/leaderboard.md)",
    )
    job.add_argument(
        "--fresh-per-cell",
        type=positive_int,
        default=FRESH_PER_CELL,
        metavar="N",
        help=f"with --fresh-draw: prompts per category x setting cell (default {FRESH_PER_CELL}: a 95%% interval of "
        "at most +-5 points; fewer is cheaper and wider, and the entry's page says how many were drawn)",
    )
    job.add_argument(
        "--stop-after",
        type=positive_int,
        default=None,
        metavar="SECONDS",
        help="stop the regeneration check after SECONDS, keeping the pairs compared so far in the entry: one job "
        "of a plan split over several (the Space's job keeper sets it; the next run goes on)",
    )


def _register_withdraw(actions: argparse._SubParsersAction) -> None:
    """`leaderboard withdraw`: its parser, options and handler."""
    withdrawn = actions.add_parser(
        "withdraw",
        help="take a submission off the leaderboard (the Space cancels its verification job)",
        description="Mark one entry withdrawn: never ranked, its verification job cancelled at the Space's next "
        "pass, and a run still checking it writes nothing.",
    )
    add_home_option(withdrawn, HOME_HELP)
    _add_entry_options(withdrawn)
    withdrawn.add_argument("--reason", default="", help="why (shown on the entry)")
    withdrawn.set_defaults(handler=_withdraw)


def _add_entry_options(sub: argparse.ArgumentParser) -> None:
    """--entry and --store: which entry of which store (`verify-job`, `withdraw`)."""
    sub.add_argument("--entry", required=True, metavar="ID", help="the submission's id (or its first 8+ characters)")
    sub.add_argument(
        "--store",
        default=None,
        metavar="LOCATOR",
        help="sqlite:PATH or hub:ORG/NAME (default: NEGT2I_RESULTS_REPO, else SQLite under NEGT2I_HOME)",
    )


def _add_rescore_options(sub: argparse.ArgumentParser) -> None:
    """--full and what a full re-score reads: its work folder, decoding processes, progress bar."""
    sub.add_argument("--full", action="store_true", help="re-score every image, not a sample")
    sub.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where re-scored records and downloaded images go (default NEGT2I_HOME/verify); keep it to resume",
    )
    add_num_workers_option(sub, "with --full: image-decoding processes per model process (as `score --num-workers`)")
    add_no_progress_flag(sub)


def _add_scoring_options(*parsers: argparse.ArgumentParser) -> None:
    for sub in parsers:
        sub.add_argument(
            "--dataset",
            type=Path,
            default=None,
            help="built dataset folder with the prompts (default: built in memory)",
        )
        add_device_option(sub, "where the models run (default: auto)")
        add_weights_dir_option(sub, as_path=True)
        sub.add_argument(
            "--images-from",
            type=Path,
            default=None,
            metavar="DIR",
            help="read each submission's images from DIR/ORG/NAME (a dataset folder laid out as the Hub repo) "
            "instead of the Hub",
        )
        add_batch_size_option(sub, "images per model batch (default: 8)")
