"""The regeneration check of a submission: regenerate a seeded sample of its images from the model its
records name, compare each pair, and test the verdicts.

The policy (k images, at most m not the model's own, the measure and its threshold t, the verdict
test, the drift bound) is `leaderboard.checks.regeneration_policy`. Here it runs on a stored entry, as
a step of the verification job (`leaderboard.jobs.verify_job`), before the spot check:

1. the sample is drawn with the entry's own seed (`regeneration_seed`); its images and their records
   (seed, model, params) are read from the submitted images dataset (`ParquetImages.image_records`);
2. the model comes from the records' **model id** (`generation.reproduce.regeneration_spec`: their
   settings when usable, else the registry's or diffusers' defaults for that id), and the job resolves
   it on the Hub to a commit (`leaderboard.checks.model_source`, injected). Only an id that names no
   public repo (a closed model, a private repo, a local folder), or a model the job cannot load, gives
   `not_reproduced`, its reason saying which: the entry goes on to the spot check and, verified, is
   ranked with the mark *images not reproduced*. Odd recorded parameters do not opt out;
3. otherwise the run claims the entry, loads the model (`GeneratorLoader`), regenerates each image
   with the benchmark's seed for its sample, measures the pair (`own_image`) and scores the
   regeneration with the entry's scorer (`regeneration_pairs.Comparer`). The outcome
   (`regeneration_verdict`): **rejected** when more than m are not the model's own or the verdict
   test rejects (the account's sampled verifications are held, as after a spot check);
   **inconclusive** when the pixel side rejects but the entry's drift is beyond the bound (it waits
   for a rerun on another machine); else `reproduced`, and the spot check runs next.

A run given a deadline (`--stop-after`, a split plan's job) stores the pairs so far as a `partial`
outcome and the next job goes on from them. An image refused for its size ends the entry
(`verification_run.end_refused`). Pairs are kept in the work folder too, so a rerun regenerates only
the rest.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import ScoreFn, verification_secret
from leaderboard.checks.model_source import ModelNotPublic, ModelResolver, ModelUnreachable, hub_model
from leaderboard.checks.regeneration_outcome import write_outcome, write_partial
from leaderboard.checks.regeneration_pairs import Comparer, KeptPairs, measure_tag, thumbnail
from leaderboard.checks.regeneration_policy import (
    RegenerationPlan,
    draw_regeneration_sample,
    regeneration_plan,
    regeneration_seed,
)
from leaderboard.checks.spot_check_policy import results_digest
from leaderboard.checks.verification_run import claim_for, end_refused
from leaderboard.store.entries import Entry, Regeneration, RunClaim
from leaderboard.store.image_sources import GenerationRecord, ImageSource, ImagesRefused, ImagesUnreachable
from leaderboard.store.ranking import NOT_REPRODUCED
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.store.states import transition
from negt2ibench.core.errors import NegT2IError

__all__ = ["BATCH", "NOT_REPRODUCED", "GeneratorLoader", "RegenerationRun", "run_regeneration", "thumbnail"]

# Loads the recorded model for regeneration: a `generation.registry.ModelSpec` -> an `ImageGenerator`.
GeneratorLoader = Callable[[Any], Any]
BATCH = 4  # images per generation call


def regeneration_sample(
    entry: Entry, results: Sequence[ResultRecord], secret: bytes | None
) -> tuple[RegenerationPlan, list]:
    """The plan and the keys of the entry's regeneration sample.

    Args:
        entry: the entry checked.
        results: its records, in stored order.
        secret: the server's secret (default: `verification_secret()`).

    Returns:
        The plan for the file's size, and the sampled images' (prompt_id, sample_index) keys in
        stored order.
    """
    plan = regeneration_plan(len(results))
    digest = results_digest(record.model_dump_json() for record in results)
    seed = regeneration_seed(secret or verification_secret(), entry.submission_id, digest)
    chosen = [results[position] for position in draw_regeneration_sample(len(results), plan, seed)]
    return plan, [(record.prompt_id, record.sample_index) for record in chosen]


@dataclass
class RegenerationRun:
    """What a regeneration check runs with, beside the store and the entry."""

    prompts: PromptIndex
    open_images: Callable[[str, str, str], ImageSource]
    load: GeneratorLoader | None  # None: this run has no generation step (the images are not reproduced)
    run: RunClaim
    work: Path
    secret: bytes | None = None
    say: Callable[[str], None] = print
    score: ScoreFn | None = None  # the entry's scorer, for the verdict test (None: it does not run)
    resolve_model: ModelResolver = hub_model
    deadline: float | None = None  # `clock()` by which a split plan's job stops, keeping its pairs
    clock: Callable[[], float] = time.monotonic


class _NotReproduced(Exception):
    """Why the entry's images cannot be regenerated, and the model its records name ("" when none)."""

    def __init__(self, why: str, model_id: str = ""):
        super().__init__(why)
        self.model_id = model_id


@dataclass(frozen=True)
class _Model:
    recorded: Any  # the spec the records name (`regeneration_spec`), unresolved: every record must name it
    spec: Any  # ... at the resolved commit: what is loaded
    notes: tuple[str, ...]  # what the reason says of how the model was found


def _recorded(record: GenerationRecord) -> Any:
    from generation.reproduce import NotReproducible, regeneration_spec

    try:
        return regeneration_spec(record.model_id, record.model_key, record.params)
    except NotReproducible as error:
        why = record.params_problem or error.one_line()
        raise _NotReproduced(
            f"{why}; {record.model_id[:100] or 'its model'} names no model on the Hub", record.model_id
        ) from None


def _same_model(first: Any) -> Callable[[GenerationRecord], str]:
    def check(record: GenerationRecord) -> str:
        try:
            found = _recorded(record).spec
        except _NotReproduced:
            found = None
        return "" if found == first else "its record names another model or other settings than the rest of the sample"

    return check


def _write_not_reproduced(store: LeaderboardStore, entry: Entry, why: str, model_id: str = "") -> Entry:
    """The outcome `not_reproduced`, written while the entry still waits for its checks and has none."""
    outcome = Regeneration(outcome="not_reproduced", reason=f"{NOT_REPRODUCED}: {why}", model_id=model_id)

    def check(current: Entry) -> str:
        unfinished = current.regeneration is None or current.regeneration.outcome in ("partial", "inconclusive")
        if current.status not in ("validated", "pending") or not unfinished:
            return f"it is {current.status}, its regeneration {'done' if current.regeneration else 'not due'}"
        return ""

    return store.update_entry(entry.submission_id, check, regeneration=outcome)


def _resolved(recorded: Any, resolve: ModelResolver) -> tuple[Any, tuple[str, ...]]:
    """The recorded model at the commit the Hub resolves it to; _NotReproduced for a repo that is not public."""
    try:
        found = resolve(recorded.spec.hub_id, recorded.spec.revision)
    except ModelNotPublic as error:
        raise _NotReproduced(error.one_line(), recorded.spec.hub_id) from None
    notes = tuple(note for note in (recorded.fallback, found.note) if note)
    gated = ("it is gated on the Hub: loaded with this job's token",) if found.gated else ()
    return replace(recorded.spec, revision=found.commit), notes + gated


def _open(entry: Entry, split: str, keys: list, context: RegenerationRun) -> tuple[_Model, Any, Iterator[Any]]:
    """The model the records name, its generator, and the sampled rows (read lazily: the check may stop
    early). Raises _NotReproduced, ImagesUnreachable, ModelUnreachable."""
    images = context.open_images(entry.images_repo, entry.images_revision, split)
    reader = getattr(images, "image_records", None)
    if reader is None:
        raise _NotReproduced("its images' source records no generation parameters")
    rows = reader(keys)
    first = next(rows)
    recorded = _recorded(first[2])
    model_id = recorded.spec.hub_id
    if context.load is None:
        raise _NotReproduced("this verification run has no generation step", model_id)
    spec, notes = _resolved(recorded, context.resolve_model)
    try:
        generator = context.load(spec)
    except NegT2IError as error:  # the weights could not be loaded (a gated repo without access ...)
        raise _NotReproduced(f"{model_id} is public but could not be loaded: {error.one_line()}", model_id) from None
    except (ImportError, AttributeError, TypeError, ValueError, OSError) as error:  # no pipeline diffusers loads
        why = f"{model_id} is public but is no pipeline diffusers loads ({type(error).__name__})"
        raise _NotReproduced(why, model_id) from None
    return _Model(recorded.spec, spec, notes), generator, itertools.chain([first], rows)


def run_regeneration(
    store: LeaderboardStore, entry: Entry, results: list[ResultRecord], context: RegenerationRun
) -> Entry:
    """Regeneration-check one entry: validated | pending → pending with its `regeneration`, or rejected.

    Args:
        store: the leaderboard's store.
        entry: the entry to check.
        results: its records, in stored order.
        context: the prompts, images, model loader and resolver, scorer, claim, work folder and deadline.

    Returns:
        The entry as stored afterwards (reproduced or not reproduced, rejected, inconclusive, partial,
        waiting, or rejected for a refused image). Images or a Hub that cannot be reached leave it
        waiting (the next run tries again).

    Raises:
        StaleEntryError: another run holds the entry.
    """
    plan, keys = regeneration_sample(entry, results, context.secret)
    try:
        model, generator, rows = _open(entry, results[0].model_key, keys, context)
    except _NotReproduced as why:
        return _write_not_reproduced(store, entry, str(why), why.model_id)
    except ImagesRefused as refused:
        return end_refused(store, entry, refused, None)
    except (ImagesUnreachable, ModelUnreachable) as error:
        if isinstance(error, ImagesUnreachable):
            return entry  # the spot check, next, says why the entry waits
        return _waits(store, entry, error.one_line())
    running = f"regeneration check running since {{started}} ({context.run.where}): {plan.describe()}"
    entry = claim_for(store, entry, context.run, running, attempt=False)
    earlier = entry.regeneration
    runs = earlier.inconclusive_runs if earlier is not None else 0
    stored = earlier.pairs if earlier is not None and earlier.outcome == "partial" else ()
    kept = KeptPairs(context.work / f"{entry.submission_id}.regen.{runs}.jsonl", measure_tag(plan), stored)
    if kept.pairs:
        context.say(f"{entry.submission_id[:8]}: {len(kept.pairs)} compared images read back")
    submitted = {(record.prompt_id, record.sample_index): record for record in results}
    comparer = Comparer(
        generator, context.prompts, plan, kept, keys=keys, same_model=_same_model(model.recorded),
        submitted=submitted, score=context.score, split=results[0].model_key,
    )  # fmt: skip
    try:
        finished = _compare_in_batches(comparer, plan, rows, context)
    except ImagesRefused as refused:
        return end_refused(store, entry, refused, context.run.run_id)
    except ImagesUnreachable as error:
        return _waits(store, entry, str(error), context.run.run_id)
    if not finished:
        return write_partial(store, entry, plan, comparer, model.spec, context.run)
    return write_outcome(store, entry, plan, comparer, model, context.run, runs)


def _compare_in_batches(
    comparer: Comparer, plan: RegenerationPlan, rows: Iterable[Any], context: RegenerationRun
) -> bool:
    """Compare ROWS in batches of BATCH, stopping once more images than the plan allows are not the
    model's own; False when the deadline came first (the pairs so far are kept)."""
    batch: list[Any] = []
    for row in rows:
        if row[0] in comparer.kept.pairs:
            comparer.compare([row])  # read back: only its thumbnail is taken
            continue
        if context.deadline is not None and context.clock() > context.deadline:
            return False
        batch.append(row)
        if len(batch) >= BATCH:
            comparer.compare(batch)
            batch = []
            if not plan.accepts(comparer.not_own()):
                return True
    if batch and plan.accepts(comparer.not_own()):
        comparer.compare(batch)
    return True


def _waits(store: LeaderboardStore, entry: Entry, why: str, run_id: str | None = None) -> Entry:
    """The images or the Hub could not be read: the entry waits (pending, saying why) for the next run."""
    reason = f"regeneration check waits: {why}; it is retried automatically"
    return transition(store, entry, "pending", reason, run_id=run_id, run=None)
