"""Leaderboard submissions: limits, validation, and one state machine from upload to verdict.

`submit()` takes an upload. Refused before anything is stored, so the attempt does not count
toward the daily limit (`SubmissionError`): missing fields, a file over the size limit, the
daily limit reached, another submitter's model name, and a results file that is not a valid
submission (malformed lines, other evaluator version or config, missing or extra images:
`leaderboard.intake.results_check`).

A valid file is stored, and from then on every state is what the store holds:

    received ──→ validated ──→ verified   (the spot check agrees)        ranked
        │            ├───────→ held       (it agrees, but see below)     not ranked
        │            ├───────→ rejected   (the spot check disagrees)     not listed
        └→ rejected  └───────→ pending ──→ verified | held | rejected | pending
    (inconsistent                (the spot check could not run: images unreachable, the models
     results)                     missing here, a GPU quota or memory error; the reason says which)

held: the account had a submission rejected by a spot check, or the file has error rows
(`leaderboard.checks.full_rescore_policy`, the guarantee per account; a rejection also holds the account's sampled
verifications). `leaderboard.checks.full_rescore_run`'s full re-score makes held entries "verified (full re-score)".
A maintainer may withdraw any entry that is not rejected (`withdraw`): never ranked, its
verification job cancelled (`leaderboard.jobs.job_backends`). The rules are `leaderboard.store.states`.

The spot check re-scores `leaderboard.checks.spot_check_policy.spot_check_plan(images)` images (652 of 19,200),
drawn with a seed nobody knows before submitting; while it runs the entry is pending, saying so.

`advance()` moves one entry as far as it can go, its spot check as a claimed run
(`leaderboard.checks.verification_run`); `recheck()` advances every entry that is not final (`negt2ibench
leaderboard verify`), so a submission left pending, or half done by a crash, is finished later.
The Space stores and validates in the request (`submit(check=False)`) and never re-scores in its
own process: a verification job does (`negt2ibench leaderboard verify-job`, `leaderboard.jobs.verify_job`),
launched through the Space's backend (`leaderboard.jobs.job_backends`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dataset_builder.records import PromptIndex
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION, PRESETS, EvaluatorConfig
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import DEFAULT_LIMITS, PRESET, ScoreFn, SpotCheckSetup, SubmissionLimits
from leaderboard.checks.spot_check_policy import SpotCheckPlan
from leaderboard.checks.spot_check_run import spot_check
from leaderboard.checks.verification_run import advance, recheck
from leaderboard.intake.results_check import check_results
from leaderboard.store.image_sources import (
    ImageSource,
    ImageSourceFactory,
    ImagesUnreachable,
    ParquetImages,
    RevisionResolver,
    default_resolver,
    hub_commit,
    hub_images,
    unreachable_reason,
)
from leaderboard.store.sqlite_store import Entry, LeaderboardStore, OwnershipError, model_key_of, name_conflict
from leaderboard.store.states import AWAITING, TRANSITIONS, transition
from leaderboard.text.submitted_names import clean, clip, http_link, hub_repo_id, name_problem, revision_name
from negt2ibench.core.errors import NegT2IError, UserError
from negt2ibench.core.jsonl import JsonlError, gc_paused, stream_jsonl

__all__ = [
    "AWAITING",
    "PRESET",
    "TRANSITIONS",
    "ImageSource",
    "ImageSourceFactory",
    "ImagesUnreachable",
    "InvalidFileError",
    "ParquetImages",
    "RevisionResolver",
    "ScoreFn",
    "SpotCheckSetup",
    "SubmissionError",
    "SubmissionForm",
    "SubmissionLimits",
    "SubmissionStoredError",
    "SpotCheckPlan",
    "TRANSITIONS",
    "advance",
    "check_results",
    "hub_commit",
    "hub_images",
    "recheck",
    "spot_check",
    "submit",
    "transition",
    "withdraw",
]

log = logging.getLogger(__name__)
DAY_SECONDS = 24 * 60 * 60
NOT_COUNTED = "nothing was stored, and this attempt does not count toward the daily limit"


class SubmissionError(UserError, ValueError):
    """A submission refused before anything was stored (limits, ownership, fields, an invalid file)."""


class InvalidFileError(SubmissionError):
    """The upload was read and is not a valid submission (too big, malformed, incomplete, another
    evaluator version): refused, and counted toward the client's hourly limit of such uploads."""


class SubmissionStoredError(NegT2IError, RuntimeError):
    """A submission that was stored, then could not be moved on (e.g. the store's upload failed);
    `submission_id` names it: its stored state is the truth, and `recheck` takes it from there."""

    def __init__(self, submission_id: str, error: BaseException):
        super().__init__(f"stored as {submission_id[:8]}, then {type(error).__name__}: {error}")
        self.submission_id = submission_id


@dataclass(frozen=True)
class SubmissionForm:
    """What the submitter types in."""

    model_name: str
    link: str
    images_repo: str
    images_revision: str
    submitter: str


# -- an upload -----------------------------------------------------------------------------------------


def _load_results(path: Path, prompt_ids: Iterable[str]) -> list[ResultRecord]:
    """The upload's records, read one line at a time: a record scored twice, or more records than
    the benchmark has images, stops the reading there (a huge file of valid records repeated is
    refused after its first repeat, not after all of it). A malformed line, or a torn last line,
    is a ValueError that says so in words for the Space (the file's name, not where the server
    keeps it)."""
    expected = len(set(prompt_ids)) * SAMPLES_PER_PROMPT
    first_line: dict[tuple[str, int], int] = {}
    records: list[ResultRecord] = []
    try:
        with gc_paused(), path.open("rb") as handle:
            for number, record in stream_jsonl(
                handle, ResultRecord.model_validate_json, source=path.name, kind="result"
            ):
                key = (record.prompt_id, record.sample_index)
                first = first_line.setdefault(key, number)
                if first != number:
                    raise ValueError(
                        f"{path.name}:{number}: {clip(key[0], 60)} sample {key[1]} is scored again (first on line "
                        f"{first}); each image is scored once"
                    )
                records.append(record)
                if len(records) > expected:
                    raise ValueError(f"{path.name}:{number}: more records than the benchmark's {expected:,} images")
    except JsonlError as error:
        if "torn last line" in str(error):
            raise ValueError(
                f"{error}: the file ends in the middle of a record, as when `negt2ibench score` is "
                "interrupted; finish the run (the same command resumes it) or remove that line"
            ) from None
        raise
    return records


def _refused(reason: str, error: type[SubmissionError] = SubmissionError) -> SubmissionError:
    return error(f"{reason}; {NOT_COUNTED}")


@dataclass(frozen=True)
class _Fields:
    model_name: str
    model_key: str
    link: str
    images_repo: str
    revision: str


def _checked_form(form: SubmissionForm) -> _Fields:
    """The form's fields, checked (`name_problem`, an http(s) link, a revision name, a Hub repo id)."""
    problem = name_problem(form.model_name)
    if problem:
        raise _refused(problem)
    model_name = clean(form.model_name)
    images_repo = clean(form.images_repo)
    if not images_repo:
        raise _refused("name the images dataset (Hub repo id) so the scores can be spot-checked")
    try:
        return _Fields(
            model_name,
            model_key_of(model_name),
            http_link(form.link),
            hub_repo_id(images_repo),
            revision_name(form.images_revision),
        )
    except ValueError as error:
        raise _refused(f"{error}") from None


def _pinned(resolve: RevisionResolver, repo: str, revision: str) -> str:
    """The commit REVISION of REPO names now: what every later reader reads (`leaderboard.store.image_sources`)."""
    try:
        return resolve(repo, revision)
    except Exception as error:  # noqa: BLE001 - unreachable, missing, no such revision: refused, in our words
        raise _refused(f"{unreachable_reason(error, repo)} (its revision is pinned to a commit when stored)") from None


def submit(
    store: LeaderboardStore,
    form: SubmissionForm,
    results_path: str | Path,
    *,
    prompts: PromptIndex,
    score: ScoreFn | None,
    open_images: ImageSourceFactory = hub_images,
    resolve_revision: RevisionResolver | None = None,
    config: EvaluatorConfig = PRESETS[PRESET],
    limits: SubmissionLimits = DEFAULT_LIMITS,
    now: float | None = None,
    secret: bytes | None = None,
    check: bool = True,
) -> Entry:
    """Check an upload, store it, and advance it (validation, then the spot check unless `check=False`).

    Args:
        store: the leaderboard store the entry goes to.
        form: what the submitter typed: the name must pass `leaderboard.text.submitted_names.name_problem`, the link be
            http(s), the images repo a Hub repo id.
        results_path: the uploaded results JSONL (`negt2ibench score`'s), read one line at a time.
        prompts: the benchmark's prompts: the images the file must score, each exactly once.
        score: the scorer of the spot check (None: it cannot run here; the entry waits, pending).
        open_images: where the submitted images are read (the spot check's, and the jobs' plans).
        resolve_revision: pins the typed revision to the commit it names now (default
            `images.default_resolver(open_images)`: the Hub's commit for Hub images); that commit is stored
            and read from then on (`images_ref` keeps what was typed).
        config: the evaluator configuration the results must have been scored with.
        limits: the bounds on the file's size and on the submitter's submissions a day.
        now: the time of the submission (default: now).
        secret: the spot check's sample secret (default: NEGT2I_VERIFY_SECRET, else a drawn one).
        check: run the spot check now (False: store and validate only; a verification job checks it).

    Returns:
        The stored entry, as far as it advanced.

    Raises:
        SubmissionError: refused, nothing stored, not counted toward the daily limit
            (`InvalidFileError` when the file itself was the reason).
        SubmissionStoredError: stored, then the store could not be updated; the stored entry
            (named by its id) is what holds, and `recheck` continues it.
    """
    now = time.time() if now is None else now
    fields = _checked_form(form)
    path = _checked_upload(store, form.submitter, fields, Path(results_path), limits, now)
    results = _checked_results(path, prompts, config)
    revision = _pinned(resolve_revision or default_resolver(open_images), fields.images_repo, fields.revision)
    entry = _received_entry(form.submitter, fields, revision, config, now)
    setup = SpotCheckSetup(prompts, score, open_images, config, limits, secret)
    return _store_and_advance(store, entry, results, setup, check)


def _checked_upload(
    store: LeaderboardStore, submitter: str, fields: _Fields, path: Path, limits: SubmissionLimits, now: float
) -> Path:
    """PATH, once the file is there and within the size limit, the submitter within the daily limit,
    and the model's name not another submitter's."""
    if not path.is_file():
        raise _refused("upload the results JSONL written by `negt2ibench score`")
    size = path.stat().st_size
    if size > limits.max_bytes:
        limit = f"the limit is {limits.max_bytes / 2**20:.0f} MB"
        raise _refused(f"the results file is {size / 2**20:.1f} MB; {limit}", InvalidFileError)
    recent = store.count_recent(submitter, now - DAY_SECONDS)
    if recent >= limits.per_day:
        raise SubmissionError(
            f"{submitter} already made {recent} submissions in the last 24 hours (limit {limits.per_day}); "
            f"try again tomorrow ({NOT_COUNTED})"
        )
    conflict = name_conflict(store.list_entries(), fields.model_name, fields.model_key, submitter, now=now)
    if conflict:
        raise _refused(conflict)
    return path


def _checked_results(path: Path, prompts: PromptIndex, config: EvaluatorConfig) -> list[ResultRecord]:
    """The file's records, once they read (`_load_results`) and pass `check_results`."""
    try:
        results = _load_results(path, prompts.ids())
    except ValueError as error:
        raise _refused(f"malformed results file: {error}", InvalidFileError) from None
    problem = check_results(results, prompts.ids(), config=config)
    if problem:
        raise _refused(f"invalid results file: {problem}", InvalidFileError)
    return results


def _received_entry(submitter: str, fields: _Fields, revision: str, config: EvaluatorConfig, now: float) -> Entry:
    """The new entry, received: the form's fields, the pinned commit of its images, this evaluator's."""
    return Entry(
        model_name=fields.model_name,
        model_key=fields.model_key,
        submitter=submitter,
        link=fields.link,
        images_repo=fields.images_repo,
        images_revision=revision,
        images_ref=fields.revision,
        created_at=now,
        evaluator_version=EVALUATOR_VERSION,
        config_hash=config.config_hash,
        status="received",
        reason="received; validating",
    )


def _store_and_advance(
    store: LeaderboardStore, entry: Entry, results: list[ResultRecord], setup: SpotCheckSetup, check: bool
) -> Entry:
    """Store the entry with its records (refused: another's model), then advance it; once stored, a
    failure is a `SubmissionStoredError` naming it."""
    try:
        store.add_submission(entry, results)
    except OwnershipError as error:
        raise _refused(str(error)) from None
    try:
        return advance(store, entry, setup, results, check=check)
    except Exception as error:  # noqa: BLE001 - stored: say so, never "nothing was stored"
        raise SubmissionStoredError(entry.submission_id, error) from error


def withdraw(store: LeaderboardStore, entry: Entry, reason: str = "") -> Entry:
    """A maintainer takes ENTRY off: withdrawn (final, never ranked); a run still checking it loses
    its claim, so its outcome is not written. A rejected entry stays rejected (StaleEntryError)."""
    why = clip(clean(reason), 200)
    text = "withdrawn by a maintainer" + (f": {why}" if why else "")
    return transition(store, entry, "withdrawn", text, run=None)
