"""The maintainer's verification backend behind `negt2ibench leaderboard verify` (as the Open LLM
Leaderboard's backend: a machine with a GPU pulls the waiting submissions from the store).

- `verify_sampled` (`leaderboard.checks.verification_run`): the spot check of every submission that
  waits, with this machine's models, the Space's own state machine and policy.
- `verify_full`: every image of each submission not fully re-scored yet (held first, then
  waiting, or verified by a sample), through `Evaluator.score_source`, the engine of `negt2ibench score`: resumable (one
  results file per submission under the work folder; a rerun scores only what is missing, and
  images that failed are tried again), and split over the processes of `accelerate launch`. The
  project's records then replace the submitted numbers (`row`, `detail`; the submitted ones are
  kept as `claimed_row`) and the entry is "verified (full re-score)", with how many images of the
  submitted file disagreed. Only the main process reads the store and writes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_builder.layout import has_images
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import SpotCheckSetup
from leaderboard.checks.compared_fields import disagreement, shown_numbers
from leaderboard.checks.verification_run import Say, advance, new_run
from leaderboard.store.image_sources import ImagesUnreachable, ParquetImages, hub_images, images_token, source_problem
from leaderboard.store.sqlite_store import Entry, LeaderboardStore, RunClaim, StaleEntryError, Verification
from leaderboard.store.states import AWAITING, transition
from negt2ibench.core.atomic import write_atomic
from negt2ibench.core.errors import UserError

if TYPE_CHECKING:
    from negt2ibench.core.launch import Launch


@dataclass(frozen=True)
class Job:
    """One submission to re-score in full, as every process needs it."""

    submission_id: str
    model_name: str
    images_repo: str
    images_revision: str
    split: str  # the results' model key, the images split


def local_images(root: Path):
    """An `ImageSourceFactory` reading ROOT/ORG/NAME (a dataset folder laid out as the Hub repo).

    Args:
        root: the folder holding one dataset folder per images repo (ORG/NAME).

    Returns:
        A function (repo id, revision, split) -> that folder's `ParquetImages` of the split.
    """

    def open_images(repo_id: str, revision: str, split: str):
        return ParquetImages.from_folder(root / repo_id, split)

    return open_images


def full_candidates(entries: Sequence[Entry]) -> list[Entry]:
    """Entries a full re-score would change: not rejected and not fully re-scored.

    Args:
        entries: the stored entries.

    Returns:
        Those entries, held ones first (only a full re-score ranks them,
        `leaderboard.checks.full_rescore_policy`), each group oldest first.
    """
    chosen = [
        e
        for e in entries
        if e.status in AWAITING
        or e.status == "held"
        or (e.status == "verified" and (e.verification is None or e.verification.method != "full"))
    ]
    return sorted(chosen, key=lambda e: (e.status != "held", e.created_at))


def plan_jobs(store: LeaderboardStore, setup: SpotCheckSetup, limit: int | None, only: str | None = None) -> list[Job]:
    """Validate what was only received, then the jobs of the entries to re-score.

    Args:
        store: the leaderboard's store.
        setup: what advancing a submission needs (its config: only entries scored with it are re-scored).
        limit: at most this many jobs (None: every candidate).
        only: only this submission id, when given.

    Returns:
        One `Job` per entry to re-score, in `full_candidates` order.
    """
    jobs: list[Job] = []
    for entry in full_candidates(store.list_entries()):
        if only is not None and entry.submission_id != only:
            continue
        if limit is not None and len(jobs) >= limit:
            break
        if entry.status == "received":
            entry = advance(store, entry, setup, check=False)
            if entry.status == "rejected":
                continue
        if entry.config_hash != setup.config.config_hash:
            continue  # scored with another config: only a re-score with that config could compare
        results = store.get_results(entry.submission_id)
        split = results[0].model_key
        jobs.append(Job(entry.submission_id, entry.model_name, entry.images_repo, entry.images_revision, split))
    return jobs


def images_folder(job: Job, images_from: Path | None, work: Path) -> Path:
    """The dataset folder holding the job's images split.

    Args:
        job: the submission to re-score.
        images_from: a folder of dataset folders (ROOT/ORG/NAME) to read instead of the Hub, when given.
        work: the work folder a download of just that split, at the submitted revision, goes to.

    Returns:
        The dataset folder.

    Raises:
        ImagesUnreachable: the download failed, or the folder holds no images of the split.
    """
    if images_from is not None:
        folder = images_from / job.images_repo
    else:
        from huggingface_hub import snapshot_download

        problem = source_problem(job.images_repo, job.images_revision, job.split)
        if problem:
            raise ImagesUnreachable(f"images not reachable: {problem}")
        folder = work / "images" / job.submission_id
        try:
            snapshot_download(
                job.images_repo,
                repo_type="dataset",
                token=images_token(),
                revision=job.images_revision,
                allow_patterns=[f"images/{job.split}-*.parquet"],
                local_dir=str(folder),
            )
        except Exception as error:  # noqa: BLE001 - offline, private, missing ...
            raise ImagesUnreachable(f"images not reachable: {type(error).__name__}: {error}") from None
    if not has_images(folder):
        raise ImagesUnreachable(f"images not reachable: no images/{job.split}-*.parquet in {folder}")
    return folder


def drop_error_rows(path: Path) -> int:
    """Remove a re-score's error rows (an image that could not be read then), so the next run scores them again.

    Args:
        path: the re-score's results file (absent: nothing to remove).

    Returns:
        How many rows were removed.
    """
    if not path.exists():
        return 0
    from evaluator.resultio import read_results

    records = read_results(path, strict=False)
    kept = [record for record in records if record.error is None]
    if len(kept) < len(records):
        write_atomic(path, "".join(record.model_dump_json() + "\n" for record in kept).encode("utf-8"))
    return len(records) - len(kept)


def claim_full(store: LeaderboardStore, submission_id: str, run: RunClaim) -> Entry:
    """Hold the entry for this full re-score; a newer run takes the claim over, and only the holder's numbers land.

    Its status is unchanged: a verified entry stays ranked meanwhile.

    Args:
        store: the leaderboard's store.
        submission_id: the entry to hold.
        run: this re-score's claim.

    Returns:
        The entry as stored, held by `run`.

    Raises:
        StaleEntryError: the entry has nothing to re-score now; nothing is written.
    """

    def check(current: Entry) -> str:
        return "" if current in full_candidates([current]) else f"it is {current.status}: nothing to re-score"

    return store.update_entry(submission_id, check, run=run)


def record_full(
    store: LeaderboardStore,
    entry: Entry,
    submitted: Sequence[ResultRecord],
    rescored: Sequence[ResultRecord],
    run_id: str | None = None,
) -> Entry:
    """Write a complete re-score's numbers into the entry: verified (full re-score).

    Args:
        store: the leaderboard's store.
        entry: the entry re-scored.
        submitted: the submitted records.
        rescored: this re-score's records, one per submitted image.
        run_id: when given, the run that must still hold the entry (its claim is then released).

    Returns:
        The entry as stored: its ranked numbers are the re-score's, the submitted ones `claimed_row`.

    Raises:
        StaleEntryError: the entry cannot become verified now, or the run no longer holds it.
    """
    ours = {(r.prompt_id, r.sample_index): r for r in rescored}
    differing = [
        why for theirs in submitted if (why := disagreement(theirs, ours[theirs.prompt_id, theirs.sample_index]))
    ]
    row, detail = shown_numbers(rescored)
    row["model"] = entry.model_name
    share = 100 * len(differing) / len(submitted)
    reason = (
        f"full re-score: all {len(submitted)} images re-scored here; the submitted file disagreed on "
        f"{len(differing)} ({share:.1f}%); the ranked numbers are this re-score's"
    )
    verification = Verification(
        method="full", checked=len(rescored), disagreements=len(differing), total=len(submitted)
    )
    return transition(
        store,
        entry,
        "verified",
        reason,
        row=row,
        detail=detail,
        claimed_row=entry.claimed_row or entry.row,
        verification=verification,
        run_id=run_id,
        **({"run": None} if run_id is not None else {}),
    )


def _finish(store: LeaderboardStore, job: Job, out: Path, say: Say, run: RunClaim) -> Entry | None:
    from evaluator.resultio import read_results

    entry = store.get_entry(job.submission_id)
    submitted = store.get_results(job.submission_id)
    rescored = [r for r in read_results(out, strict=False) if r.model_key == job.split]
    failed = [r for r in rescored if r.error is not None]
    missing = {(r.prompt_id, r.sample_index) for r in submitted} - {(r.prompt_id, r.sample_index) for r in rescored}
    if failed or missing:
        first = failed[0].error if failed else f"{len(missing)} images not in the images dataset"
        say(
            f"{job.submission_id[:8]}  {job.model_name}: not complete: {len(failed)} images could not be "
            f"re-scored, {len(missing)} missing (e.g. {first}); rerun to try them again"
        )
        return None
    try:
        entry = record_full(store, entry, submitted, rescored, run.run_id)
    except StaleEntryError as error:
        say(f"{job.submission_id[:8]}  {job.model_name}: not written: {error}")
        return None
    say(f"{job.submission_id[:8]}  {job.model_name}: {entry.reason}")
    return entry


def verify_full(
    open_store: Callable[[], LeaderboardStore],
    setup: SpotCheckSetup,
    evaluator,
    *,
    work: Path,
    images_from: Path | None = None,
    limit: int | None = None,
    only: str | None = None,
    progress: bool = True,
    num_workers: int | None = None,
    say: Say = print,
) -> list[Entry]:
    """Re-score every image of the submissions `full_candidates` picks, each held by this run
    (`claim_full`) while it is re-scored; under `accelerate launch` every process scores its share and
    only the main process reads and writes the store.

    Args:
        open_store: opens the leaderboard store (called on the main process only).
        setup: the spot check's setup: the prompts and the evaluator configuration the entries must have.
        evaluator: the `Evaluator` that re-scores (`score_source`, the engine of `negt2ibench score`).
        work: the work folder: the plan, each submission's re-scored records (kept: a rerun resumes) and
            downloaded images.
        images_from: a folder holding the submissions' images as DIR/ORG/NAME, read instead of the Hub.
        limit: at most this many submissions this run.
        only: only the submission of this id.
        progress: show the scoring's progress bars.
        num_workers: image-decoding processes per model process (as `score --num-workers`).
        say: where the run's lines go (one per submission).

    Returns:
        The entries written (on the main process; [] elsewhere). A submission whose images cannot be
        read, or whose re-score is incomplete or was taken over, is skipped with a line saying why.

    Raises:
        NegT2IError: `open_store` or the store's reads and writes failed (e.g. its Hub repo is
            unreachable); a submission's own problems are skipped with a line, not raised.
    """
    from negt2ibench.core.launch import Launch, launched_world_size

    launch = Launch.detect() if launched_world_size() > 1 else Launch()
    work.mkdir(parents=True, exist_ok=True)
    store = open_store() if launch.is_main else None
    jobs = _planned_jobs(launch, store, setup, work, limit, only)
    if launch.is_main:
        say(f"{len(jobs)} submission(s) to re-score in full in {store!r}" + (" ..." if jobs else ""))
    run = _FullRun(launch, store, evaluator, work, images_from, new_run("full"), progress, num_workers, say)
    written = [entry for job in jobs if (entry := _rescore(run, job)) is not None]
    launch.barrier()
    return written


def _planned_jobs(
    launch: Launch,
    store: LeaderboardStore | None,
    setup: SpotCheckSetup,
    work: Path,
    limit: int | None,
    only: str | None,
) -> list[Job]:
    """The jobs the main process plans (`plan_jobs`), written to WORK/jobs.json and read by every process."""
    plan_path = work / "jobs.json"

    def plan() -> None:
        assert store is not None  # on_main runs this on the main process, which holds the store
        jobs = plan_jobs(store, setup, limit, only)
        write_atomic(plan_path, json.dumps([asdict(job) for job in jobs]).encode("utf-8"))

    launch.on_main(plan)
    return [Job(**item) for item in json.loads(plan_path.read_text("utf-8"))]


@dataclass(frozen=True)
class _FullRun:
    """What every job of one `verify_full` run shares."""

    launch: Launch
    store: LeaderboardStore | None  # the main process's; None on the others
    evaluator: Any
    work: Path
    images_from: Path | None
    claim: RunClaim
    progress: bool
    num_workers: int | None
    say: Say


def _rescore(run: _FullRun, job: Job) -> Entry | None:
    """One submission: claimed and its images found (main process), re-scored (every process), then
    recorded (main process); the entry written, or None when it was skipped."""
    out = run.work / f"{job.submission_id}.jsonl"
    shared = _prepared(run, job, out)
    if "error" in shared:
        if run.launch.is_main:
            run.say(f"{job.submission_id[:8]}  {job.model_name}: skipped: {shared['error']}")
        return None
    try:
        run.evaluator.score_source(
            shared["images"],
            out=out,
            split=job.split,
            model_key=job.split,
            progress=run.progress,
            num_workers=run.num_workers,
        )
    except UserError as error:
        if run.launch.is_main:
            run.say(f"{job.submission_id[:8]}  {job.model_name}: skipped: {error}")
        return None
    if run.store is None:  # not the main process
        return None
    return _finish(run.store, job, out, run.say, run.claim)


def _prepared(run: _FullRun, job: Job, out: Path) -> dict[str, str]:
    """The main process claims the entry and finds its images folder (or the reason it cannot), and
    writes that to WORK/ID.folder, which every process reads."""
    folders: dict[str, Path | str] = {}

    def prepare() -> None:
        assert run.store is not None  # on_main runs this on the main process, which holds the store
        try:
            claim_full(run.store, job.submission_id, run.claim)
            folders["images"] = images_folder(job, run.images_from, run.work)
        except (ImagesUnreachable, StaleEntryError) as error:
            folders["error"] = str(error)
        drop_error_rows(out)
        write_atomic(run.work / f"{job.submission_id}.folder", json.dumps(folders, default=str).encode())

    run.launch.on_main(prepare)
    return json.loads((run.work / f"{job.submission_id}.folder").read_text())


__all__ = [
    "Job",
    "claim_full",
    "full_candidates",
    "hub_images",
    "local_images",
    "record_full",
    "verify_full",
]
