"""The prompt record (docs/records.md): one typed object carried by every part of the project."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .vocabulary import SETTING_NAMES


class Statement(BaseModel):
    """One requirement of a prompt: an attribute value of an object, or a relation A → B."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    polarity: Literal["positive", "negated"]
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
    category: Literal["color", "material", "directional", "proximity", "comparative", "depth"]
    kind: Literal["attribute", "relation"]
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


class PromptLookupError(KeyError):
    """A prompt id that the corpus does not contain."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown prompt id"


class PromptIndex:
    """Prompt records by id, with clear errors for unknown ids."""

    def __init__(self, records: Iterable[PromptRecord]):
        self._by_id: dict[str, PromptRecord] = {}
        for record in records:
            if record.prompt_id in self._by_id:
                raise ValueError(f"duplicate prompt id {record.prompt_id!r}")
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


def load_prompts(source: str | Path | None = None) -> list[PromptRecord]:
    """Read prompt records from a built dataset folder, a `prompts.jsonl`, or a parquet file.

    With no source, the corpus is built in memory with the default seed (deterministic,
    so it is the same corpus `negt2ibench build` writes).
    """
    if source is None:
        from .corpus import build_corpus

        return build_corpus()
    path = Path(source)
    if path.is_dir():
        if (path / "prompts.jsonl").is_file():
            path = path / "prompts.jsonl"
        else:
            parquet = sorted((path / "prompts").glob("*.parquet"))
            if not parquet:
                raise FileNotFoundError(f"{path} holds neither prompts.jsonl nor prompts/*.parquet")
            path = parquet[0]
    if not path.exists():
        raise FileNotFoundError(f"no prompts at {path}")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
        return [PromptRecord.model_validate(row) for row in rows]
    records = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(PromptRecord.model_validate(json.loads(line)))
            except Exception as error:  # noqa: BLE001 - re-raised with the line number
                raise ValueError(f"{path}:{line_number}: not a prompt record: {error}") from None
    return records
