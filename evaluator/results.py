"""The result record (docs/records.md): one per scored image, written as JSONL."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from negt2ibench.core.frozen import frozen_twin, thaw, twin_parser

Cause = Literal["subject_missing", "target_missing", "forbidden_rendered", "wrong_value", "dead_zone"]
CAUSES: tuple[str, ...] = get_args(Cause)  # in this order in every table and plot
Verdict = Literal["pass", "fail", "error"]
VERDICTS: tuple[str, ...] = get_args(Verdict)


class ObjectResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    present: bool
    confidence: float
    box: list[float] | None = None  # x0, y0, x1, y1 in pixels
    # Present, but its mask came back empty: no relation is measured for its pairs (evaluator.verdict).
    # Written only when True, so records without such objects keep their bytes.
    mask_empty: bool = False

    @model_serializer(mode="wrap")
    def _omit_false_mask_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not self.mask_empty:
            data.pop("mask_empty", None)
        return data


class StatementResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    polarity: Literal["positive", "negated"]
    satisfied: bool
    cause: Cause | None = None  # exactly one when not satisfied, None when satisfied
    observed: list[str] = Field(default_factory=list)  # predicates / values measured
    measurements: dict[str, Any] = Field(default_factory=dict)
    dead_zone_pass: bool = False  # negated relation passed because nothing was emitted


class QuestionResult(BaseModel):
    """One question a VLM judge answered about one element of the prompt (judge records only)."""

    model_config = ConfigDict(extra="forbid")

    element: str  # "prompt" | "object:<name>" | "statement:<index>"
    question: str  # the exact words asked
    p_yes: float  # P("yes") from the next-token logits, restricted to the yes/no tokens
    p_satisfied: float  # p_yes, or 1 - p_yes when "no" satisfies the element


class _ResultProperties:
    """What a result record derives from its fields: shared by `ResultRecord` and its frozen twin."""

    __slots__ = ()
    if TYPE_CHECKING:  # the fields it reads, for the type checker only (at run time they would be fields here)
        passed: bool
        score: float | None
        error: str | None
        objects: list[ObjectResult]
        statements: list[StatementResult]
        model_key: str
        prompt_id: str
        sample_index: int

    @property
    def image_score(self) -> float | None:
        """`score`, or the share of satisfied elements for records that predate it (None on error rows)."""
        if self.score is not None or is_error_row(self):
            return self.score
        elements = [obj.present for obj in self.objects] + [s.satisfied for s in self.statements]
        return sum(elements) / len(elements) if elements else None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.model_key, self.prompt_id, self.sample_index)


def is_error_row(record: _ResultProperties) -> bool:
    """Whether RECORD (a `ResultRecord` or its frozen twin) is an error row, an image that could not
    be scored: its `error` is set, to any text, "" included (the text says why; only its presence
    counts). Every reader asks this: the report leaves such a row out of every accuracy, the spot
    check compares its state, the Gallery shows it as "error"."""
    return record.error is not None


def record_verdict(record: _ResultProperties) -> Verdict:
    """The verdict on one image, the one the report, the leaderboard, the spot check, the Gallery and
    Compare show: "error" for an error row (`is_error_row`, whatever `passed` says), else "pass" or
    "fail" (`passed`)."""
    if is_error_row(record):
        return "error"
    return "pass" if record.passed else "fail"


class ResultRecord(_ResultProperties, BaseModel):
    """The verdict on one image. `error` is set (and `passed` False) when it could not be scored."""

    model_config = ConfigDict(extra="forbid")

    prompt_id: str
    model_key: str
    sample_index: int
    passed: bool
    objects: list[ObjectResult] = Field(default_factory=list)
    statements: list[StatementResult] = Field(default_factory=list)
    evaluator_version: str
    config_hash: str
    error: str | None = None
    # Who judged: "negt2ibench/<preset>" for this scorer, "<judge key>/<mode>" for a VLM judge.
    evaluator: str = "negt2ibench"
    # Continuous image score in [0, 1] (for rank agreement with people): the share of the image's
    # elements (objects + statements) satisfied for this scorer; a judge's mean probability.
    # None on error rows and on records written before the field existed (see `image_score`).
    score: float | None = None
    # A VLM judge's questions and answers, one per element; empty (and left out of the JSON, so
    # the scorer's records keep their exact bytes) for the detector-based scorer.
    questions: list[QuestionResult] = Field(default_factory=list)
    # When the scorer wrote this verdict (ISO 8601 UTC, to the second: `scored_now`); what a Hub
    # `.eval_results` entry's `date` is. None (and left out of the JSON, so older files keep their
    # exact bytes) on records written before the field existed and on records not scored here.
    scored_at: str | None = None

    @model_serializer(mode="wrap")
    def _omit_empty_questions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not self.questions:
            data.pop("questions", None)
        if self.scored_at is None:
            data.pop("scored_at", None)
        return data


def scored_now() -> str:
    """This moment as a record's `scored_at`: ISO 8601 UTC to the second (`2026-12-03T17:19:00Z`).

    With SOURCE_DATE_EPOCH set (the reproducible-builds convention: seconds since 1970), that moment
    instead, so two runs on the same inputs write the same bytes."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    moment = datetime.fromtimestamp(int(fixed), tz=timezone.utc) if fixed.isdigit() else datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# The same record as a frozen, slotted dataclass validated by the same schema (`negt2ibench.core.frozen`):
# a quarter of a ResultRecord's memory, for readers that keep hundreds of thousands and only read them
# (`negt2ibench report`). It has every field and property of a ResultRecord, read-only, and none of
# pydantic's methods (`thaw_result` gives the model back); to the type checker it is a ResultRecord.
if TYPE_CHECKING:
    FrozenResultRecord = ResultRecord
else:
    FrozenResultRecord = frozen_twin(ResultRecord, bases=(_ResultProperties,))
parse_frozen_result = twin_parser(ResultRecord, bases=(_ResultProperties,))


def thaw_result(record: ResultRecord) -> ResultRecord:
    """A `ResultRecord` of RECORD (a frozen twin, or a ResultRecord, returned as it is)."""
    return record if isinstance(record, ResultRecord) else thaw(ResultRecord, record)
