"""`negt2ibench leaderboard verify-job --entry ID`: the verification of one entry, as a job that runs anywhere.

The Space launches it through a backend (`leaderboard.jobs.job_backends`: a Hugging Face Job, a
subprocess on its own machine, or none, when a maintainer runs it by hand). It reads the entry
from the store (`--store`, else the one `open_store` picks: NEGT2I_RESULTS_REPO or SQLite under
NEGT2I_HOME), runs the mode's steps, and writes each outcome as one conditional write of the store
(`leaderboard.checks.verification_run`):

- **idempotent**: an entry the mode has nothing left to do for (verified, rejected, held for the
  spot check; fully re-scored for `--full`) is left as it is, and the run says so;
- **resumable**: the spot check keeps each re-scored record in the work folder
  (``WORK/<id>.spot.<config>.jsonl``) and a rerun re-scores only the images not there; the full
  re-score resumes its results file (`leaderboard.checks.full_rescore_run`);
- **safe twice at once**: each run claims the entry (`RunClaim`); a newer run takes the claim
  over, and only the holder's outcome lands (the other run says its outcome was dropped).

Steps. A mode is a list of steps run in order (`STEPS`): each says whether it applies to the entry
as stored now, and runs on it. `spot`: validate, the regeneration check (`leaderboard.checks.regeneration_run`:
a seeded sample of the images regenerated from the recorded model and compared), then the spot
check; `full`: validate, then the full re-score; `fresh`: the fresh draw of a verified entry whose
images were reproduced (`leaderboard.checks.fresh_draw_run`). Before its steps a run prints its plan: what it
generates and re-scores, in GPU-seconds (`leaderboard.jobs.job_plan`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from PIL import Image

from dataset_builder.records import PromptRecord
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import ScoreFn, SpotCheckSetup
from leaderboard.checks.fresh_draw_policy import FRESH_PER_CELL, fresh_draw_due
from leaderboard.checks.fresh_draw_run import run_fresh_draw
from leaderboard.checks.full_rescore_run import full_candidates, verify_full
from leaderboard.checks.model_source import ModelResolver, hub_model
from leaderboard.checks.regeneration_run import RegenerationRun, run_regeneration
from leaderboard.checks.verification_run import advance, new_run, run_spot_check
from leaderboard.jobs.job_plan import JobPlan, plan_job
from leaderboard.store.entries import FreshDraw
from leaderboard.store.image_sources import ImagesUnreachable
from leaderboard.store.sqlite_store import Entry, LeaderboardStore, StaleEntryError, StoreError
from leaderboard.store.states import AWAITING
from leaderboard.text.submitted_names import quoted_entry_id, typed_entry_id
from negt2ibench.core.errors import UserError

Mode = Literal["spot", "full", "fresh"]
Say = Callable[[str], None]
MIN_PREFIX = 8  # an entry may be named by this many leading characters of its id (as the tables show it)


@dataclass
class VerifyContext:
    """What the steps run with: the store, the spot check's setup, the work folder, and for `full`
    the evaluator whose `score_source` re-scores every image."""

    store: LeaderboardStore
    setup: SpotCheckSetup
    work: Path
    evaluator: Any = None
    open_store: Callable[[], LeaderboardStore] | None = None  # `full` under a launcher: each process's own
    images_from: Path | None = None
    progress: bool = True
    num_workers: int | None = None
    say: Say = print
    # Loads a recorded model for the regeneration check and the fresh draw (a `ModelSpec` -> an
    # `ImageGenerator`; `generation.backends.load_generator` on the job's device); None: none here.
    load_generator: Callable[[Any], Any] | None = None
    fresh_per_cell: int = FRESH_PER_CELL
    # Resolves the model the images name to a public commit (`leaderboard.checks.model_source.hub_model`).
    resolve_model: ModelResolver = hub_model
    # `clock()` by which a split plan's job stops, keeping its progress (`--stop-after`); None: none.
    deadline: float | None = None
    clock: Callable[[], float] = time.monotonic


class VerifyStep(Protocol):
    name: str

    def applies(self, entry: Entry) -> bool:
        """Whether the step has work on the entry as stored now."""

    def run(self, context: VerifyContext, entry: Entry) -> Entry:
        """Do it; the entry as stored afterwards. StaleEntryError: another run holds the entry now."""


class Validate:
    name = "validate"

    def applies(self, entry: Entry) -> bool:
        return entry.status == "received"

    def run(self, context: VerifyContext, entry: Entry) -> Entry:
        return advance(context.store, entry, context.setup, check=False)


class SpotCache:
    """The spot check's scorer with its records kept in a result file (`evaluator.resultio`): a rerun
    re-scores only the images not there. Another live run writing the file: no cache for this one."""

    def __init__(self, score: ScoreFn, path: Path):
        from evaluator.resultio import ResultFileError, ResultWriter, read_results

        self.score, self.path = score, path
        self.writer: ResultWriter | None = ResultWriter(path)
        try:
            self.writer.open()
            kept = read_results(path, strict=False)
        except ResultFileError:
            self.writer, kept = None, []
        self.kept = {record.key: record for record in kept if record.error is None}
        self.reused = 0

    def __call__(
        self, images: list[Image.Image], prompts: list[PromptRecord], model_key: str, sample_indices: list[int]
    ) -> list[ResultRecord]:
        keys = [(model_key, prompt.prompt_id, index) for prompt, index in zip(prompts, sample_indices, strict=True)]
        todo = [i for i, key in enumerate(keys) if key not in self.kept]
        if todo:
            fresh = self.score(
                [images[i] for i in todo], [prompts[i] for i in todo], model_key, [sample_indices[i] for i in todo]
            )
            for record in fresh:
                self.kept[record.key] = record
                if self.writer is not None and record.error is None:
                    self.writer.write(record)
        self.reused += len(keys) - len(todo)
        return [self.kept[key] for key in keys]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def regeneration_unfinished(entry: Entry) -> bool:
    """Whether the entry's regeneration check has not decided yet (not run, split and part done, or
    inconclusive on one machine): the spot check waits for it."""
    check = entry.regeneration
    return check is None or check.outcome in ("partial", "inconclusive")


class SpotCheck:
    name = "spot check"

    def applies(self, entry: Entry) -> bool:
        unfinished = entry.regeneration is not None and entry.regeneration.outcome in ("partial", "inconclusive")
        return entry.status in ("validated", "pending") and not unfinished

    def run(self, context: VerifyContext, entry: Entry) -> Entry:
        results = context.store.get_results(entry.submission_id)
        setup = context.setup
        cache = None
        if setup.score is not None:
            kept = context.work / f"{entry.submission_id}.spot.{setup.config.config_hash}.jsonl"
            cache = SpotCache(setup.score, kept)
            setup = SpotCheckSetup(setup.prompts, cache, setup.open_images, setup.config, setup.limits, setup.secret)
        try:
            entry = run_spot_check(context.store, entry, results, setup, new_run("spot"))
        finally:
            if cache is not None:
                cache.close()
                if cache.reused:
                    context.say(f"{entry.submission_id[:8]}: {cache.reused} re-scored images read from {cache.path}")
        return entry


class FullRescore:
    name = "full re-score"

    def applies(self, entry: Entry) -> bool:
        return bool(full_candidates([entry])) and entry.status != "received"

    def run(self, context: VerifyContext, entry: Entry) -> Entry:
        if context.evaluator is None:
            raise UserError("a full re-score needs the evaluator (`verify-job --full` builds it)")
        verify_full(
            context.open_store or (lambda: context.store),
            context.setup,
            context.evaluator,
            work=context.work,
            images_from=context.images_from,
            only=entry.submission_id,
            progress=context.progress,
            num_workers=context.num_workers,
            say=context.say,
        )
        return context.store.get_entry(entry.submission_id)


class Regenerate:
    name = "regeneration check"

    def applies(self, entry: Entry) -> bool:
        return entry.status in ("validated", "pending") and regeneration_unfinished(entry)

    def run(self, context: VerifyContext, entry: Entry) -> Entry:
        setup = context.setup
        run = RegenerationRun(
            prompts=setup.prompts,
            open_images=setup.open_images,
            load=context.load_generator,
            run=new_run("spot"),
            work=context.work,
            secret=setup.secret,
            say=context.say,
            score=setup.score,  # the scorer itself: the spot check's cache keeps submitted images only
            resolve_model=context.resolve_model,
            deadline=context.deadline,
            clock=context.clock,
        )
        return run_regeneration(context.store, entry, context.store.get_results(entry.submission_id), run)


class FreshDrawStep:
    name = "fresh draw"

    def applies(self, entry: Entry) -> bool:
        return fresh_draw_due(entry)

    def run(self, context: VerifyContext, entry: Entry) -> Entry:
        setup = context.setup
        cache = None
        if setup.score is not None:
            cache = SpotCache(
                setup.score, context.work / f"{entry.submission_id}.fresh.{setup.config.config_hash}.jsonl"
            )
        try:
            return run_fresh_draw(
                context.store,
                entry,
                open_images=setup.open_images,
                load=context.load_generator,
                score=cache,
                work=context.work,
                secret=setup.secret,
                per_cell=context.fresh_per_cell,
                progress=context.progress,
                say=context.say,
            )
        finally:
            if cache is not None:
                cache.close()


STEPS: dict[str, list[VerifyStep]] = {
    "spot": [Validate(), Regenerate(), SpotCheck()],
    "full": [Validate(), FullRescore()],
    "fresh": [FreshDrawStep()],
}


def find_entry(store: LeaderboardStore, name: str) -> Entry:
    """The entry whose id is NAME, or starts with it (at least MIN_PREFIX characters, one match); NAME
    is cut to `MAX_ENTRY_ID` characters, as the app cuts it, and quoted so in the errors."""
    text = typed_entry_id(name)
    name = quoted_entry_id(name)
    try:
        return store.get_entry(text)
    except StoreError:
        pass
    matches = [e for e in store.list_entries() if len(text) >= MIN_PREFIX and e.submission_id.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UserError(f"--entry {name}: {len(matches)} submissions start with it; give more of the id")
    raise UserError(f"--entry {name}: no such submission in {store!r} (`negt2ibench leaderboard list` shows them)")


def verify_entry(context: VerifyContext, name: str, mode: Mode = "spot") -> Entry:
    """Run the mode's steps on one entry; the entry as stored afterwards."""
    say = context.say
    entry = find_entry(context.store, name)
    short = entry.submission_id[:8]
    context.work.mkdir(parents=True, exist_ok=True)
    ran = False
    for step in STEPS[mode]:
        entry = context.store.get_entry(entry.submission_id)
        if not step.applies(entry):
            continue
        if not ran:
            say(f"{short}  {entry.model_name}: {job_plan(context, entry, mode).describe()}")
        ran = True
        say(f"{short}  {entry.model_name}: {step.name} ...")
        try:
            entry = step.run(context, entry)
        except StaleEntryError as error:
            entry = context.store.get_entry(entry.submission_id)
            say(f"{short}  {entry.model_name}: this run's outcome was dropped ({error}); it is {entry.status}")
            return entry
    if not ran:
        left = {"full": "nothing to re-score", "fresh": "no fresh draw due"}.get(mode, "nothing to check")
        say(f"{short}  {entry.model_name}: {left}: it is {entry.status} ({entry.reason})")
        return entry
    if mode == "fresh" and entry.fresh_draw is not None:
        say(f"{short}  {entry.model_name}: {fresh_draw_line(entry.fresh_draw)}")
        return entry
    waiting = " (it waits for the next run)" if entry.status in AWAITING else ""
    say(f"{short}  {entry.model_name}: {entry.status}{waiting}: {entry.reason}")
    return entry


def job_plan(context: VerifyContext, entry: Entry, mode: Mode) -> JobPlan:
    """What this run will generate and re-score, in GPU-seconds (`leaderboard.jobs.job_plan`)."""
    record = None
    results = context.store.get_results(entry.submission_id)
    if mode != "full" and results:
        try:
            source = context.setup.open_images(entry.images_repo, entry.images_revision, results[0].model_key)
            reader = getattr(source, "first_record", None)
            record = reader() if reader is not None else None
        except ImagesUnreachable:
            record = None
    return plan_job(mode, len(results), record, per_cell=context.fresh_per_cell)


def fresh_draw_line(draw: FreshDraw) -> str:
    """The fresh draw in one line: both accuracies with their intervals, the gap, and the seed."""
    flag = "; the gap's interval excludes 0" if draw.flagged else ""
    return (
        f"fresh draw (seed {draw.seed}, {draw.prompts} prompts, {draw.images} images): {draw.accuracy:.1f}% "
        f"[{draw.interval[0]:.1f}, {draw.interval[1]:.1f}] against {draw.public:.1f}% "
        f"[{draw.public_interval[0]:.1f}, {draw.public_interval[1]:.1f}] on the public prompts; gap "
        f"{draw.gap:+.1f} [{draw.gap_interval[0]:+.1f}, {draw.gap_interval[1]:+.1f}]{flag}"
    )
