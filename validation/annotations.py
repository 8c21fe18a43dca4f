"""The annotation record (docs/validation.md) and the human verdict it implies.

One record per image × annotator. Every question was asked affirmatively (see `questions`), so
the record holds raw answers, not verdicts:

- ``objects``: {name: "is there a <name>?" answered yes};
- ``statements``: {"<index>": "is the <subject> <predicate> ...?" answered yes}.

The verdict of a statement is its answer for a positive statement and the negation of its answer
for a negated one; a statement whose objects the annotator did not see is unsatisfied. An
annotator passes the image when every object is seen and every statement satisfied.

Reading and writing ``annotations.jsonl`` lives here too (`read_annotations`, `write_annotations`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dataset_builder.records import PromptRecord
from negt2ibench.core.atomic import atomic_file
from negt2ibench.core.errors import UserError

ImageKey = tuple[str, str, int]  # (model_key, prompt_id, sample_index), the order of ResultRecord.key


class AnnotationError(UserError, ValueError):
    """An annotation that is malformed, duplicated, or does not match its prompt."""


def _now() -> datetime:
    return datetime.now(timezone.utc)


class AnnotationRecord(BaseModel):
    """One annotator's answers on one image (raw answers to affirmative questions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    model_key: str = Field(pattern=r"^[a-z0-9_]+$")  # the images split
    sample_index: int = Field(ge=0)
    annotator: str = Field(min_length=1, max_length=200)
    objects: dict[str, bool]
    statements: dict[str, bool]
    created_at: datetime = Field(default_factory=_now)

    @field_validator("annotator")
    @classmethod
    def _strip_annotator(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("annotator must not be blank")
        return value

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        """Times without a zone are taken as UTC, so records from anywhere sort together."""
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)

    @field_validator("statements")
    @classmethod
    def _index_keys(cls, value: dict[str, bool]) -> dict[str, bool]:
        for key in value:
            if not key.isdigit() or str(int(key)) != key:
                raise ValueError(f"statement keys are statement indices such as '0', got {key!r}")
        return value

    @property
    def image_key(self) -> ImageKey:
        return (self.model_key, self.prompt_id, self.sample_index)

    def same_answers(self, other: AnnotationRecord) -> bool:
        """Whether `other` is the same image, annotator and answers (whenever it was made)."""
        return self.model_dump(exclude={"created_at"}) == other.model_dump(exclude={"created_at"})


def check_against_prompt(record: AnnotationRecord, prompt: PromptRecord) -> None:
    """Raise `AnnotationError` unless the record answers exactly the prompt's questions.

    A mismatch means the annotation was made on another corpus (or another prompt).
    """
    if record.prompt_id != prompt.prompt_id:
        raise AnnotationError(f"annotation of {record.prompt_id!r} checked against prompt {prompt.prompt_id!r}")
    expected_objects = set(prompt.objects)
    expected_statements = {str(s.index) for s in prompt.statements}
    problems = []
    if set(record.objects) != expected_objects:
        problems.append(f"objects {sorted(record.objects)} but the prompt has {sorted(expected_objects)}")
    if set(record.statements) != expected_statements:
        problems.append(f"statements {sorted(record.statements)} but the prompt has {sorted(expected_statements)}")
    if problems:
        raise AnnotationError(
            f"annotation of {record.prompt_id} by {record.annotator!r} does not match the prompt "
            f"({'; '.join(problems)}): made on another corpus version?"
        )


def statement_verdicts(record: AnnotationRecord, prompt: PromptRecord) -> dict[int, bool]:
    """{index: satisfied} for every statement: the answer (positive) or its negation (negated),
    and False when the annotator did not see the statement's subject or target."""
    verdicts = {}
    for statement in prompt.statements:
        seen = record.objects[statement.subject] and (statement.target is None or record.objects[statement.target])
        answer = record.statements[str(statement.index)]
        verdicts[statement.index] = bool(seen and (answer != statement.negated))
    return verdicts


def element_verdicts(record: AnnotationRecord, prompt: PromptRecord) -> list[bool]:
    """Satisfied or not, per element: objects in prompt order, then statements by index."""
    by_index = statement_verdicts(record, prompt)
    return [bool(record.objects[name]) for name in prompt.objects] + [by_index[i] for i in sorted(by_index)]


def annotator_passes(record: AnnotationRecord, prompt: PromptRecord) -> bool:
    """True when the annotator saw every object and every statement is satisfied."""
    return all(element_verdicts(record, prompt))


def annotator_score(record: AnnotationRecord, prompt: PromptRecord) -> float:
    """The share of the image's elements (objects + statements) the annotator found satisfied."""
    verdicts = element_verdicts(record, prompt)
    return sum(verdicts) / len(verdicts)


# ------------------------------------------------------------------------------------------ files


def _reason(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg} at column {error.colno})"
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        if first.get("type") == "json_invalid":
            return "not JSON"
        where = ".".join(str(part) for part in first.get("loc", ())) or "record"
        return f"not an annotation record ({where}: {first.get('msg')})"
    return str(error)


def read_annotations(path: str | Path, *, allow_duplicates: bool = False) -> list[AnnotationRecord]:
    """Records of an ``annotations.jsonl``, in file order.

    A malformed line raises `AnnotationError` ("path:line: reason"). Two lines for the same
    image and annotator raise too (naming both lines) unless `allow_duplicates`.
    """
    path = Path(path)
    if not path.is_file():
        raise AnnotationError(f"{path}: no such annotations file")
    records: list[AnnotationRecord] = []
    first_line: dict[tuple[ImageKey, str], int] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = AnnotationRecord.model_validate_json(line)
            except (ValidationError, ValueError) as error:
                raise AnnotationError(f"{path}:{number}: {_reason(error)}") from None
            key = (record.image_key, record.annotator)
            if key in first_line and not allow_duplicates:
                raise AnnotationError(
                    f"{path}:{number}: duplicate annotator line: {record.annotator!r} already annotated "
                    f"{record.model_key}/{record.prompt_id}#{record.sample_index} on line {first_line[key]}"
                )
            first_line.setdefault(key, number)
            records.append(record)
    return records


def sort_key(record: AnnotationRecord) -> tuple:
    return (record.image_key, record.annotator)


def write_lines(lines: Iterable[str], path: str | Path) -> int:
    """Write one JSON text per line, atomically (`negt2ibench.core.atomic.atomic_file`); returns the line count."""
    count = 0
    with atomic_file(path, "w") as out:
        for line in lines:
            out.write(line + "\n")
            count += 1
    return count


def write_annotations(records: Iterable[AnnotationRecord], path: str | Path) -> int:
    """Write records as JSONL, sorted by image then annotator, atomically; returns the count."""
    return write_lines((record.model_dump_json() for record in sorted(records, key=sort_key)), path)
