"""What the leaderboard store holds, whatever holds it: an `Entry` per submission, and the store's interface.

An entry is one submission: who sent it, for which model, its status with the reason
(`leaderboard.intake.submissions` moves it: received → validated → verified | rejected | pending | held,
or withdrawn by a maintainer), its leaderboard row once validated, its spot-check attempts, the
verification run that holds it now (`run`, `leaderboard.jobs.verify_job`) and the job the Space launched
for it (`job`, `leaderboard.jobs.job_backends`). Results are stored beside it.

Every change of a stored entry is `LeaderboardStore.modify`: the entry (and the others) read and the
change written as one step of the store (one SQLite write transaction; one Hub commit on the
commit read), so two processes that change one entry at once never lose each other's change, and a
check that fails writes nothing (`StaleEntryError`).
"""

from __future__ import annotations

import gzip
import hashlib
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from evaluator.results import ResultRecord
from leaderboard.text.submitted_names import confusable_key, name_key
from negt2ibench.core.errors import NegT2IError, UserError
from negt2ibench.core.jsonl import JsonlError, parse_jsonl
from negt2ibench.core.names import slug
from validation.annotations import AnnotationRecord, ImageKey

# received: stored with its results; validated: its leaderboard row computed, the spot check next;
# verified / rejected: final; pending: the spot check could not run yet (the reason says why);
# held: ranked only after a full re-score (`leaderboard.checks.full_rescore_policy`: the reason says why);
# withdrawn: taken off by a maintainer (its verification job cancelled), never ranked.
Status = Literal["received", "validated", "verified", "rejected", "pending", "held", "withdrawn"]
STATUSES: tuple[str, ...] = get_args(Status)
AWAITING: tuple[str, ...] = ("received", "validated", "pending")  # not final: `recheck` picks them up
# A submission not verified within this many days releases its name (and is withdrawn by the
# Space's pass, `leaderboard.jobs.job_keeper`): an unreachable images repo cannot hold a name forever.
NAME_HOLD_DAYS = 14
DAY_SECONDS = 24 * 60 * 60


class StoreError(NegT2IError, RuntimeError):
    """The store could not do what was asked (unknown id, taken model name, failed upload)."""


class OwnershipError(StoreError, UserError):
    """The model name belongs to another submitter's entry."""


class StaleEntryError(StoreError):
    """A conditional change found the stored entry other than expected (another run took it over,
    or it became final meanwhile): nothing was written."""


def model_key_of(model_name: str) -> str:
    """The split-safe key of a model name (`negt2ibench.core.names.slug`): lower case, runs of other
    characters as one `_`. A name with no letter or digit raises `SlugError` (a `ValueError`).

    A name with letters the slug cannot keep (Greek, Han, ...) gets 8 hex digits of the SHA-256 of
    its `name_key` after its slug ("u_" alone when none is left), so "画像 v2" and "中文 v2" are two models."""
    if model_name.isascii():
        return slug(model_name)
    digest = hashlib.sha256(name_key(model_name).encode("utf-8")).hexdigest()[:8]
    key = slug(model_name, fallback="u")
    return f"{key}_{digest}"


class Verification(BaseModel):
    """How a verified (or rejected) entry was checked: a sample (`spot_check_policy`'s plan) or every image."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["sampled", "full"]
    checked: int  # images re-scored
    disagreements: int  # of them, images whose verdicts differ from the submitted file's
    allowed: int | None = None  # the sampled plan's tolerance
    total: int  # images in the submission
    at: float = Field(default_factory=time.time)


class RegeneratedPair(BaseModel):
    """One sampled image of the regeneration check (`leaderboard.checks.regeneration_run`): how far it is from
    its regeneration, whether its verdicts moved, and (for the pairs shown on the entry's page) both as
    small JPEGs."""

    model_config = ConfigDict(extra="forbid")

    prompt_id: str
    sample_index: int
    # The share of the image's regions (each 2% of its area) within t (1.0: the model's own); an entry
    # checked before issue 51: SSIM of grey 64 px. None: not regenerated (its seed is not the benchmark's).
    similarity: float | None = None
    difference: float | None = None  # the worst region's mean CIEDE2000 (`regeneration_policy.own_image`)
    median: float | None = None  # the median region's (the image's drift)
    region: list[float] = Field(default_factory=list)  # the worst region: left, top, right, bottom (fractions)
    flip: int = 0  # +1: its verdicts moved toward the submission; -1: against it (`regeneration_policy.image_flip`)
    moved: int = 0  # its compared verdicts that differ from the submitted record's (0: they agree)
    own: bool
    why: str = ""  # why it is not the model's own
    submitted_jpeg: str = ""  # base64 thumbnails, for the pairs the page shows
    regenerated_jpeg: str = ""


class Regeneration(BaseModel):
    """The regeneration check's outcome: `reproduced` (the sample is the model's own and its verdicts did
    not move toward the submission), `rejected` (more of it is not than the plan allows, or the verdict
    test rejects), `inconclusive` (the pixel side could not decide on this machine: its drift is beyond
    the bound; a rerun on another machine decides), `partial` (a job's share of a split check: the pairs
    so far, which the next job goes on from), or `not_reproduced` (the model is not public or cannot be
    loaded: the reason says which; the entry is ranked with the mark *images not reproduced*)."""

    model_config = ConfigDict(extra="forbid")

    outcome: Literal["reproduced", "rejected", "not_reproduced", "inconclusive", "partial"]
    reason: str
    model_id: str = ""
    commit: str = ""
    checked: int = 0  # images regenerated (or found with another seed)
    not_own: int = 0
    allowed: int | None = None
    threshold: float | None = None
    measure: str = ""  # what `threshold` bounds ("" for an entry checked before issue 51: SSIM)
    favourable: int = 0  # images whose verdicts moved toward the submission (the sign test's F)
    unfavourable: int = 0  # ... and against it (U)
    sign_p: float | None = None  # the sign test's p (None: not run)
    drift: float | None = None  # the entry's own drift (`regeneration_policy.entry_drift`)
    inconclusive_runs: int = 0  # runs whose pixel side was inconclusive (a second one decides)
    pairs: list[RegeneratedPair] = Field(default_factory=list)
    at: float = Field(default_factory=time.time)


class FreshDraw(BaseModel):
    """The fresh draw's outcome (`leaderboard.checks.fresh_draw_policy`): accuracy (%) on prompts drawn from a
    secret seed, beside the public accuracy, each with its 95% interval, and the gap (fresh - public)."""

    model_config = ConfigDict(extra="forbid")

    seed: int  # revealed once the draw is done: anyone can repeat it
    prompts: int
    images: int
    accuracy: float
    interval: list[float]
    public: float
    public_interval: list[float]
    gap: float
    gap_interval: list[float]
    at: float = Field(default_factory=time.time)

    @property
    def flagged(self) -> bool:
        """Whether the gap's interval excludes 0."""
        low, high = self.gap_interval
        return low > 0 or high < 0


class RunClaim(BaseModel):
    """The verification run that holds an entry now (`leaderboard.jobs.verify_job`): only its outcome may land.
    A newer run takes the claim over; the older one's outcome is then dropped."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    mode: Literal["spot", "full"] = "spot"
    where: str = ""  # host and process, or the job's id
    started_at: float = Field(default_factory=time.time)


class JobRecord(BaseModel):
    """The verification job the Space launched for an entry, as its backend last reported it."""

    model_config = ConfigDict(extra="forbid")

    backend: str  # hf-jobs | local | none
    job_id: str = ""
    url: str = ""  # the job's page (its logs) on the Hub; a log file's path for `local`
    stage: str = ""  # SCHEDULING, RUNNING, COMPLETED, ERROR, CANCELED, DELETED, VANISHED ("" before a launch)
    message: str = ""  # the backend's message, or why no job runs
    mode: Literal["spot", "full", "fresh"] = "spot"
    plan: str = ""  # what the job does and its GPU-seconds, stated before it is launched
    plan_s: float = 0.0  # that plan's GPU-seconds
    launches: list[float] = Field(default_factory=list)  # when its jobs were launched (the newest few)
    launch_seconds: list[float] = Field(default_factory=list)  # each launch's planned GPU-seconds
    failures: int = 0  # jobs in a row that failed or vanished before writing an outcome
    last_error: str = ""  # the last failed job's last error line
    given_up: bool = False  # failures reached the bound: no automatic launch any more
    flavor: str = ""  # the flavour its last job ran on (`leaderboard.jobs.job_plan.flavour_for`)
    parts: int = 1  # the jobs its plan is split into (`leaderboard.jobs.job_plan`)
    progress: str = ""  # the entry's regeneration when its last job was launched: a job that ends with the
    # entry still waiting and this unchanged ended without an outcome, a failure
    updated_at: float = Field(default_factory=time.time)


# An entry's leaderboard row as stored: the report's `LeaderboardRow` (Table 3's columns, in the order of
# `evaluator.report.LEADERBOARD_COLUMNS`) after a JSON round trip, where a setting or category that none of
# the file's images has is None (the report's NaN: JSON has none). Every key is optional: an entry stored
# by an earlier version may lack a column, so readers use `.get`. tests/leaderboard/store/test_stores.py
# holds the keys to the report's.
EntryRow = TypedDict(
    "EntryRow",
    {
        "model": str,
        "1:0": float | None,
        "0:1": float | None,
        "2:0": float | None,
        "1:1": float | None,
        "0:2": float | None,
        "2:1": float | None,
        "1:2": float | None,
        "2:2": float | None,
        "color": float | None,
        "material": float | None,
        "comparative": float | None,
        "depth": float | None,
        "directional": float | None,
        "proximity": float | None,
        "overall": float | None,
        "polarity_gap": float | None,
        "coverage": float | None,
        "images": int,
    },
    total=False,
)


class EntryStatementAccuracy(TypedDict, total=False):
    """The report's `StatementAccuracy` of one category as stored: a polarity without statements is None."""

    positive: float | None
    positive_n: int
    negated: float | None
    negated_n: int


class ModelDetail(TypedDict, total=False):
    """A submission's model detail, as the Space shows and stores it (`Entry.detail`; computed by
    `leaderboard.checks.compared_fields.shown_numbers`). Every key is optional, as in `EntryRow`."""

    statement_accuracy: dict[str, EntryStatementAccuracy]  # by category (and `all`) × polarity
    failure_causes: dict[str, dict[str, int]]  # by category: {cause: count, "failed": total}
    # the overall accuracy's 95% bootstrap interval over prompts, [low, high] (not in entries stored before
    # intervals were computed)
    overall_interval: list[float]


# A stored row or detail keeps a key it does not know (a column an earlier or later version wrote), so
# an entry read and written again loses nothing; readers take the keys they know.
for _stored in (EntryRow, EntryStatementAccuracy, ModelDetail):
    setattr(_stored, "__pydantic_config__", ConfigDict(extra="allow"))  # noqa: B010 - pydantic reads it there


class Entry(BaseModel):
    """One submission and its state."""

    model_config = ConfigDict(extra="forbid")

    submission_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    model_name: str
    model_key: str
    submitter: str
    link: str = ""
    images_repo: str = ""
    images_revision: str = ""  # the commit the submitted revision named when stored (what is read)
    images_ref: str = ""  # the revision as typed (a branch, tag or commit), shown beside the commit
    created_at: float = Field(default_factory=time.time)
    status: Status = "received"
    reason: str = ""
    evaluator_version: str = ""
    config_hash: str = ""
    row: EntryRow | None = None  # leaderboard row (Table 3 columns) once validated
    detail: ModelDetail | None = None  # per-model detail: polarity × category, failure causes
    attempts: int = 0  # spot checks tried (a pending one is retried)
    checked_at: float | None = None  # when the last spot check was tried (epoch seconds)
    verification: Verification | None = None  # how it was verified (or rejected)
    claimed_row: EntryRow | None = None  # the submitted numbers, once a full re-score replaced `row`
    run: RunClaim | None = None  # the verification run holding it now
    job: JobRecord | None = None  # the Space's verification job for it
    regeneration: Regeneration | None = None  # whether its images are the model's own (None: not checked)
    fresh_draw: FreshDraw | None = None  # its model scored on a secret fresh draw (None: not done)
    synthetic: bool = False  # a demo's entry (`serve --demo`): shown, labelled, never ranked


def images_pin(entry: Entry) -> str:
    """Where the entry's images are read: "ORG/NAME at commit 0123abcd4567 (submitted as main)"."""
    revision = entry.images_revision or "main"
    at = f"commit {revision[:12]}" if len(revision) == 40 else f"revision {revision}"
    typed = f" (submitted as {entry.images_ref})" if entry.images_ref and entry.images_ref != revision else ""
    return f"{entry.images_repo or '(none)'} at {at}{typed}"


def changed(entry: Entry, changes: dict[str, Any]) -> Entry:
    """A copy of `entry` with `changes` (field → value; None clears an optional field), validated."""
    unknown = set(changes) - set(Entry.model_fields)
    if unknown:
        raise StoreError(f"an entry has no field {', '.join(sorted(unknown))}")
    dumped = {key: value.model_dump() if isinstance(value, BaseModel) else value for key, value in changes.items()}
    return Entry.model_validate({**entry.model_dump(), **dumped})


# decide(stored entry, every stored entry) -> the fields to change; raise StaleEntryError to write nothing.
Decide = Callable[[Entry, Sequence[Entry]], dict[str, Any]]
# check(stored entry) -> "" to go on, else why the change must not be written.
Check = Callable[[Entry], str]


def checked(check: Check | None, changes: dict[str, Any]) -> Decide:
    """A `Decide` that writes `changes` when `check` passes on the stored entry."""

    def decide(current: Entry, entries: Sequence[Entry]) -> dict[str, Any]:
        why = check(current) if check is not None else ""
        if why:
            raise StaleEntryError(f"submission {current.submission_id[:8]}: not changed: {why}")
        return changes

    return decide


@runtime_checkable
class LeaderboardStore(Protocol):
    """What the Space needs from a store, whatever holds the data."""

    def add_submission(self, entry: Entry, results: Iterable[ResultRecord] = ()) -> Entry:
        """Store an entry with its results atomically; nothing earlier is removed (the leaderboard
        shows each model's newest entry). Another submitter's model raises OwnershipError."""

    def modify(self, submission_id: str, decide: Decide) -> Entry:
        """Read the stored entry and every entry, and write `decide`'s changes to it, as one step
        no other writer interleaves with (a StaleEntryError from `decide` writes nothing)."""

    def update_entry(self, submission_id: str, check: Check | None = None, **changes: Any) -> Entry:
        """Write `changes` when `check` passes on the stored entry (`modify`)."""

    def locator(self) -> str:
        """Where another process finds this store (`leaderboard.store.sqlite_store.open_store_at`): ``sqlite:PATH``
        or ``hub:ORG/NAME``; "" when it cannot."""

    def get_entry(self, submission_id: str) -> Entry: ...

    def list_entries(self, status: Status | None = None) -> list[Entry]: ...

    def get_results(self, submission_id: str) -> list[ResultRecord]: ...

    def count_recent(self, submitter: str, since: float) -> int:
        """Submissions by `submitter` created at or after `since` (epoch seconds)."""

    # Human annotations (docs/validation.md; leaderboard/store/annotation_store.py): one record per image × annotator.
    def add_annotation(self, record: AnnotationRecord) -> AnnotationRecord:
        """Store at once; replaces the annotator's earlier record of that image (changed answers)."""

    def add_annotations(self, records: Iterable[AnnotationRecord]) -> int:
        """Store many as one transaction / one Hub commit (imports); same replacement rule."""

    def annotations(self, annotator: str | None = None) -> list[AnnotationRecord]: ...

    def annotators_of(self, image_key: ImageKey) -> list[str]: ...

    def get_annotation(self, image_key: ImageKey, annotator: str) -> AnnotationRecord | None: ...


def results_blob(results: Iterable[ResultRecord]) -> bytes:
    lines = (record.model_dump_json() + "\n" for record in results)
    return gzip.compress("".join(lines).encode("utf-8"), compresslevel=5)


def parse_results_blob(blob: bytes, source: str = "stored results") -> list[ResultRecord]:
    contents = parse_jsonl(gzip.decompress(blob), ResultRecord.model_validate_json, source=source, kind="result")
    if contents.torn:
        raise JsonlError(contents.torn)
    return contents.records


def name_expired(entry: Entry, now: float) -> bool:
    """Whether ENTRY still awaits verification NAME_HOLD_DAYS after it was submitted: its name is free."""
    return entry.status in AWAITING and now - entry.created_at > NAME_HOLD_DAYS * DAY_SECONDS


def expired_reason() -> str:
    return (
        f"withdrawn: not verified within {NAME_HOLD_DAYS} days of its submission, so its name is released; "
        "submit it again once its images can be read"
    )


def name_conflict(
    existing: Iterable[Entry], model_name: str, model_key: str, submitter: str, now: float | None = None
) -> str:
    """Why `model_name` cannot be this submitter's ("" when it can): the model belongs to another
    submitter, or the name looks like another model's (the same TR39 skeleton, `leaderboard.text.submitted_names`).
    Rejected and withdrawn entries own nothing, nor does one not verified within NAME_HOLD_DAYS
    (`name_expired`, at `now`, default the present)."""
    now = time.time() if now is None else now
    looks = confusable_key(model_name)
    for other in existing:
        if other.status in ("rejected", "withdrawn") or name_expired(other, now):
            continue
        if other.model_key == model_key:
            if other.submitter != submitter:
                return f"model {model_name!r} was submitted by another user; choose another model name"
        elif confusable_key(other.model_name) == looks:
            return f"{model_name!r} looks like the model {other.model_name!r}; choose a name that does not"
    return ""


def check_owner(existing: list[Entry], entry: Entry) -> None:
    """Raise if the entry's model belongs to another submitter or its name looks like another model's."""
    if entry.status == "rejected":
        return
    problem = name_conflict(existing, entry.model_name, entry.model_key, entry.submitter, now=entry.created_at)
    if problem:
        raise OwnershipError(problem)
