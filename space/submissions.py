"""Leaderboard submissions: limits, validation, and one state machine from upload to verdict.

`submit()` takes an upload. Refused before anything is stored, so the attempt does not count
toward the daily limit (`SubmissionError`): missing fields, a file over the size limit, the
daily limit reached, another submitter's model name, and a results file that is not a valid
submission (malformed lines, other evaluator version or config, missing or extra images).

A valid file is stored, and from then on every state is what the store holds:

    received ──→ validated ──→ verified   (the spot check agrees)        ranked
        │            ├───────→ rejected   (the spot check disagrees)     not listed
        └→ rejected  └───────→ pending ──→ verified | rejected | pending
    (inconsistent                (the spot check could not run: images unreachable, the models
     results)                     missing here, a GPU quota or memory error; the reason says which)

`advance()` moves one entry as far as it can go; `recheck()` advances every entry that is not
final (at the Space's start-up, periodically while it runs, and by `negt2ibench leaderboard
recheck`), so a submission left pending, or half done by a crash, is finished later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_builder.records import PromptIndex
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION, PRESETS, EvaluatorConfig
from evaluator.results import ResultRecord
from negt2ibench.core.errors import NegT2IError, UserError

from .spotcheck import (
    ImageSource,
    ImageSourceFactory,
    ImagesUnreachable,
    ParquetImages,
    ScoreFn,
    hub_images,
    spot_check,
    spot_check_failure,
)
from .store import Entry, LeaderboardStore, OwnershipError, Status, model_key_of

__all__ = [
    "AWAITING",
    "TRANSITIONS",
    "ImageSource",
    "ImageSourceFactory",
    "ImagesUnreachable",
    "ParquetImages",
    "ScoreFn",
    "SpotCheckSetup",
    "SubmissionError",
    "SubmissionForm",
    "SubmissionLimits",
    "SubmissionStoredError",
    "advance",
    "check_results",
    "hub_images",
    "model_detail",
    "recheck",
    "spot_check",
    "submit",
]

log = logging.getLogger(__name__)
DAY_SECONDS = 24 * 60 * 60
# The state machine: what each status may become. verified and rejected are final.
TRANSITIONS: dict[str, frozenset[str]] = {
    "received": frozenset({"validated", "rejected"}),
    "validated": frozenset({"verified", "rejected", "pending"}),
    "pending": frozenset({"verified", "rejected", "pending"}),
    "verified": frozenset(),
    "rejected": frozenset(),
}
AWAITING: tuple[str, ...] = ("received", "validated", "pending")  # not final: `recheck` picks them up
NOT_COUNTED = "nothing was stored, and this attempt does not count toward the daily limit"


class SubmissionError(UserError, ValueError):
    """A submission refused before anything was stored (limits, ownership, fields, an invalid file)."""


class SubmissionStoredError(NegT2IError, RuntimeError):
    """A submission that was stored, then could not be moved on (e.g. the store's upload failed);
    `submission_id` names it: its stored state is the truth, and `recheck` takes it from there."""

    def __init__(self, submission_id: str, error: BaseException):
        super().__init__(f"stored as {submission_id[:8]}, then {type(error).__name__}: {error}")
        self.submission_id = submission_id


@dataclass(frozen=True)
class SubmissionLimits:
    max_bytes: int = 200 * 1024 * 1024  # 19,200 result lines are ~30-60 MB
    per_day: int = 5  # stored submissions per submitter per 24 hours (refused uploads do not count)
    spot_check_k: int = 8
    spot_check_tolerance: int = 1  # verdict flips allowed (GPU non-determinism at score margins)


@dataclass(frozen=True)
class SubmissionForm:
    """What the submitter types in."""

    model_name: str
    link: str
    images_repo: str
    images_revision: str
    submitter: str


@dataclass(frozen=True)
class SpotCheckSetup:
    """What advancing a submission needs: the prompts, the scorer (None: none here) and the images."""

    prompts: PromptIndex
    score: ScoreFn | None
    open_images: ImageSourceFactory = hub_images
    config: EvaluatorConfig = PRESETS["current"]
    limits: SubmissionLimits = SubmissionLimits()
    seed: int | None = None


def check_results(
    results: list[ResultRecord],
    prompt_ids: Iterable[str],
    *,
    config: EvaluatorConfig = PRESETS["current"],
    samples_per_prompt: int = SAMPLES_PER_PROMPT,
) -> str:
    """Why these results cannot go on the leaderboard, or "" when they can: one model key, this
    evaluator's version and config hash, and every prompt id × sample exactly once."""
    if not results:
        return "the results file holds no records"
    keys = sorted({r.model_key for r in results})
    if len(keys) != 1:
        return f"the results mix {len(keys)} model keys ({', '.join(keys[:5])}); submit one model per file"
    versions = Counter(r.evaluator_version for r in results)
    if set(versions) != {EVALUATOR_VERSION}:
        found = ", ".join(f"{v} ({n} records)" for v, n in versions.most_common(3))
        return f"evaluator version {found} does not match this Space's {EVALUATOR_VERSION}; re-score with it"
    hashes = Counter(r.config_hash for r in results)
    if set(hashes) != {config.config_hash}:
        found = ", ".join(hashes)
        return (
            f"config hash {found} does not match this Space's {config.config_hash} "
            f"(preset {config.name!r}); re-score with `negt2ibench score --preset {config.name}`"
        )
    expected = {(pid, s) for pid in prompt_ids for s in range(samples_per_prompt)}
    seen = Counter((r.prompt_id, r.sample_index) for r in results)
    unknown = sorted(k for k in seen if k not in expected)
    if unknown:
        pid, s = unknown[0]
        return f"{len(unknown)} records are not benchmark images (e.g. prompt {pid!r} sample {s})"
    duplicated = sorted(k for k, n in seen.items() if n > 1)
    if duplicated:
        pid, s = duplicated[0]
        return f"{len(duplicated)} images are scored more than once (e.g. {pid} sample {s})"
    missing = sorted(expected - set(seen))
    if missing:
        pid, s = missing[0]
        return (
            f"{len(missing)} of {len(expected)} images are missing (e.g. {pid} sample {s}); "
            f"a submission scores all prompts × {samples_per_prompt} samples"
        )
    return ""


def model_detail(results: Sequence[ResultRecord]) -> dict[str, Any]:
    """The per-model detail view: statement accuracy by category × polarity, failure causes by category."""
    from evaluator.report import failure_causes, statement_accuracy

    return {
        "statement_accuracy": statement_accuracy(results),
        "failure_causes": failure_causes(results)["by_category"],
    }


# -- the state machine ---------------------------------------------------------------------------------

_busy: set[str] = set()  # entries being advanced in this process (a submit and the rechecker never race)
_busy_lock = threading.Lock()


def transition(store: LeaderboardStore, entry: Entry, status: Status, reason: str, **fields: Any) -> Entry:
    """Move ENTRY to STATUS in the store, if the state machine allows it (a bug otherwise)."""
    if status not in TRANSITIONS[entry.status]:
        raise RuntimeError(f"submission {entry.submission_id[:8]}: {entry.status} cannot become {status}")
    return store.update_status(entry.submission_id, status, reason, **fields)


def _validate(store: LeaderboardStore, entry: Entry, results: list[ResultRecord]) -> Entry:
    """received → validated (its leaderboard row and detail computed) or rejected."""
    from evaluator.report import leaderboard_row

    try:
        row = dict(leaderboard_row(results, results[0].model_key))
        detail = model_detail(results)
    except ValueError as error:  # e.g. a failed statement without a cause
        return transition(store, entry, "rejected", f"inconsistent results: {error}")
    row["model"] = entry.model_name
    return transition(store, entry, "validated", "validated; spot check next", row=row, detail=detail)


def _spot_check(store: LeaderboardStore, entry: Entry, results: list[ResultRecord], setup: SpotCheckSetup) -> Entry:
    """validated | pending → verified, rejected, or pending with the reason the check could not run."""
    attempts, now = entry.attempts + 1, time.time()
    if setup.score is None:
        why = "no scorer here to re-score the images"
    elif entry.config_hash != setup.config.config_hash:
        why = f"it was scored with config {entry.config_hash}; this Space scores with {setup.config.config_hash}"
    else:
        try:
            split = results[0].model_key  # the images split is the results' model key
            images = setup.open_images(entry.images_repo, entry.images_revision, split)
            k = setup.limits.spot_check_k
            mismatches = spot_check(results, images, setup.prompts, setup.score, k=k, seed=setup.seed)
        except Exception as error:  # noqa: BLE001 - whatever stops the check, the entry waits for the next try
            why = spot_check_failure(error)
        else:
            checked = min(setup.limits.spot_check_k, len(results))
            if len(mismatches) > setup.limits.spot_check_tolerance:
                shown = "; ".join(mismatches[:3])
                reason = f"spot check: {len(mismatches)} of {checked} re-scored images disagree ({shown})"
                return transition(store, entry, "rejected", reason, attempts=attempts, checked_at=now)
            reason = f"spot check: {checked - len(mismatches)} of {checked} re-scored images agree"
            return transition(store, entry, "verified", reason, attempts=attempts, checked_at=now)
    reason = f"spot check waits (attempt {attempts}): {why}; it is retried automatically"
    return transition(store, entry, "pending", reason, attempts=attempts, checked_at=now)


def advance(
    store: LeaderboardStore, entry: Entry, setup: SpotCheckSetup, results: list[ResultRecord] | None = None
) -> Entry:
    """Move a stored submission through the state machine as far as it goes now; the stored entry.

    A final entry, or one another thread of this process is advancing, is returned as it is."""
    with _busy_lock:
        if entry.status not in AWAITING or entry.submission_id in _busy:
            return entry
        _busy.add(entry.submission_id)
    try:
        entry = store.get_entry(entry.submission_id)  # the stored state, not a stale copy
        if entry.status not in AWAITING:
            return entry
        if results is None:
            results = store.get_results(entry.submission_id)
        if not results:  # nothing to rank or re-score (only a hand-made entry can be so)
            return transition(store, entry, "rejected", "no results are stored with this submission")
        if entry.status == "received":
            entry = _validate(store, entry, results)
        if entry.status in ("validated", "pending"):
            entry = _spot_check(store, entry, results, setup)
        return entry
    finally:
        with _busy_lock:
            _busy.discard(entry.submission_id)


def recheck(store: LeaderboardStore, setup: SpotCheckSetup) -> list[Entry]:
    """Advance every submission that is not final (oldest first); the entries as stored afterwards.

    An entry that cannot be advanced (e.g. the store's upload fails) is logged and left as stored;
    the next recheck tries it again."""
    done = []
    for entry in awaiting(store.list_entries()):
        try:
            entry = advance(store, entry, setup)
        except Exception:  # noqa: BLE001 - one broken entry must not stop the others
            log.exception("could not advance submission %s", entry.submission_id)
        done.append(entry)
    return done


# -- an upload -----------------------------------------------------------------------------------------


def _load_results(path: Path) -> list[ResultRecord]:
    from evaluator.resultio import read_results

    return list(read_results(path, strict=True))


def _refused(reason: str) -> SubmissionError:
    return SubmissionError(f"{reason}; {NOT_COUNTED}")


def submit(
    store: LeaderboardStore,
    form: SubmissionForm,
    results_path: str | Path,
    *,
    prompts: PromptIndex,
    score: ScoreFn | None,
    open_images: ImageSourceFactory = hub_images,
    config: EvaluatorConfig = PRESETS["current"],
    limits: SubmissionLimits = SubmissionLimits(),
    now: float | None = None,
    seed: int | None = None,
) -> Entry:
    """Check an upload, store it, and advance it (validation, spot check); the stored entry.

    Raises:
        SubmissionError: refused, nothing stored, not counted toward the daily limit.
        SubmissionStoredError: stored, then the store could not be updated; the stored entry
            (named by its id) is what holds, and `recheck` continues it.
    """
    now = time.time() if now is None else now
    model_name = form.model_name.strip()
    if not model_name:
        raise _refused("enter the model's name")
    try:
        model_key = model_key_of(model_name)
    except ValueError as error:
        raise _refused(str(error)) from None
    path = Path(results_path)
    if not path.is_file():
        raise _refused("upload the results JSONL written by `negt2ibench score`")
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise _refused(f"the results file is {size / 2**20:.1f} MB; the limit is {limits.max_bytes / 2**20:.0f} MB")
    recent = store.count_recent(form.submitter, now - DAY_SECONDS)
    if recent >= limits.per_day:
        raise SubmissionError(
            f"{form.submitter} already made {recent} submissions in the last 24 hours (limit {limits.per_day}); "
            f"try again tomorrow ({NOT_COUNTED})"
        )
    for other in store.list_entries():
        if other.model_key == model_key and other.submitter != form.submitter and other.status != "rejected":
            raise _refused(f"model {model_name!r} was submitted by another user; choose another model name")
    images_repo = form.images_repo.strip()
    if not images_repo:
        raise _refused("name the images dataset (Hub repo id) so the scores can be spot-checked")
    try:
        results = _load_results(path)
    except ValueError as error:
        raise _refused(f"malformed results file: {str(error).replace(str(path), path.name)}") from None
    problem = check_results(results, prompts.ids(), config=config)
    if problem:
        raise _refused(f"invalid results file: {problem}")

    entry = Entry(
        model_name=model_name,
        model_key=model_key,
        submitter=form.submitter,
        link=form.link.strip(),
        images_repo=images_repo,
        images_revision=form.images_revision.strip() or "main",
        created_at=now,
        evaluator_version=EVALUATOR_VERSION,
        config_hash=config.config_hash,
        status="received",
        reason="received; validating",
    )
    try:
        store.add_submission(entry, results)
    except OwnershipError as error:
        raise _refused(str(error)) from None
    setup = SpotCheckSetup(prompts, score, open_images, config, limits, seed)
    try:
        return advance(store, entry, setup, results)
    except Exception as error:  # noqa: BLE001 - stored: say so, never "nothing was stored"
        raise SubmissionStoredError(entry.submission_id, error) from error


def awaiting(entries: Iterable[Entry]) -> list[Entry]:
    """The entries that are not final (what `recheck` would advance), oldest first."""
    return sorted((e for e in entries if e.status in AWAITING), key=lambda e: e.created_at)
