"""The prompt record (docs/records.md): one typed object carried by every part of the project."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from negt2ibench.core.errors import UserError

from .vocabulary import SETTING_NAMES, Category, Kind, Polarity


class Statement(BaseModel):
    """One requirement of a prompt: an attribute value of an object, or a relation A → B."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    polarity: Polarity
    subject: str
    target: str | None = None  # None for attributes
    predicate: str  # attribute value ("red", "glass") or relation ("left of", "near", ...)
    text: str  # the words of the prompt that state it

    @property
    def negated(self) -> bool:
        return self.polarity == "negated"


class PromptRecord(BaseModel):
    """One benchmark prompt with the metadata the scorer reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_id: str
    group_id: str
    category: Category
    kind: Kind
    num_pos: int
    num_neg: int
    load: int
    setting: str
    prompt: str
    objects: list[str]
    statements: list[Statement]


def prompt_features():
    """The `datasets.Features` of the prompts config (statements as a list of structs)."""
    from datasets import Features, List, Value

    statement = {
        "index": Value("int32"),
        "polarity": Value("string"),
        "subject": Value("string"),
        "target": Value("string"),
        "predicate": Value("string"),
        "text": Value("string"),
    }
    return Features(
        {
            "prompt_id": Value("string"),
            "group_id": Value("string"),
            "category": Value("string"),
            "kind": Value("string"),
            "num_pos": Value("int32"),
            "num_neg": Value("int32"),
            "load": Value("int32"),
            "setting": Value("string"),
            "prompt": Value("string"),
            "objects": List(Value("string")),
            "statements": List(statement),
        }
    )


class DuplicatePromptError(UserError, ValueError):
    """Two prompt records with one id."""


class PromptLookupError(UserError, KeyError):
    """A prompt id that the corpus does not contain (a `UserError`, and a `KeyError` for callers that catch one)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown prompt id"


class PromptLookup(Protocol):
    """Prompt records by id: a `PromptIndex`, or any mapping of ids to records."""

    def __contains__(self, prompt_id: object) -> bool: ...

    def __getitem__(self, prompt_id: str) -> PromptRecord: ...


class PromptIndex:
    """Prompt records by id, with clear errors for unknown ids."""

    def __init__(self, records: Iterable[PromptRecord]):
        self._by_id: dict[str, PromptRecord] = {}
        self._by_text: dict[str, PromptRecord] | None = None
        for record in records:
            if record.prompt_id in self._by_id:
                raise DuplicatePromptError(f"duplicate prompt id {record.prompt_id!r}")
            self._by_id[record.prompt_id] = record

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self):
        return iter(self._by_id.values())

    def __contains__(self, prompt_id: object) -> bool:
        return prompt_id in self._by_id

    def __getitem__(self, prompt_id: str) -> PromptRecord:
        try:
            return self._by_id[prompt_id]
        except KeyError:
            raise PromptLookupError(
                f"unknown prompt id {prompt_id!r}: ids look like 'color_pos1_neg0_000' "
                f"(category, setting one of {', '.join(SETTING_NAMES)}, number 000-099)"
            ) from None

    def ids(self) -> list[str]:
        return list(self._by_id)

    def with_text(self, text: str) -> PromptRecord | None:
        """The record whose prompt text is TEXT exactly (the first, if two share it), else None."""
        if self._by_text is None:
            by_text: dict[str, PromptRecord] = {}
            for record in self._by_id.values():
                by_text.setdefault(record.prompt, record)
            self._by_text = by_text
        return self._by_text.get(text)
