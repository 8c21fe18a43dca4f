"""Reading prompt records from wherever they are: a dataset folder, prompts.jsonl, parquet, or the corpus.

The one way every command and the API load prompts: `load_prompts(source)` (records in file
order) or `prompt_index(source)` (by id). Every failure is a `UserError` that names the source, so
a command prints it as it is. Kept apart from `records` so the record types stay a leaf module:
reading with no source builds the corpus, and the corpus generator needs the record types.
"""

from __future__ import annotations

from pathlib import Path

from negt2ibench.core.errors import UserError
from negt2ibench.core.jsonl import JsonlError, read_jsonl

from .layout import prompt_file
from .records import PromptIndex, PromptRecord


class PromptFileError(JsonlError):
    """Prompt records that cannot be read (no such file, a malformed line, a bad parquet file)."""


class NoPromptsError(UserError, FileNotFoundError):
    """No prompt records where they were looked for."""


def load_prompts(source: str | Path | None = None) -> list[PromptRecord]:
    """Read prompt records from a built dataset folder, a `prompts.jsonl`, or a parquet file.

    With no source, the corpus is built in memory with the default seed (deterministic,
    so it is the same corpus `negt2ibench build` writes). A missing source raises
    `NoPromptsError` (also a `FileNotFoundError`); a malformed file raises `PromptFileError`
    (also a `ValueError`) naming the path and line. Both are `UserError`s.
    """
    if source is None:
        from .corpus import build_corpus

        return build_corpus()
    path = Path(source)
    if path.is_dir():
        found = prompt_file(path)
        if found is None:
            raise NoPromptsError(f"{path} holds neither prompts.jsonl nor prompts/*.parquet")
        path = found
    if not path.exists():
        raise NoPromptsError(f"no prompts at {path}")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(path).to_pylist()
            return [PromptRecord.model_validate(row) for row in rows]
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid and pydantic's errors are ValueErrors
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise PromptFileError(f"{path}: not a prompts parquet file ({first_line})") from None
    return read_jsonl(path, PromptRecord.model_validate_json, kind="prompt", error=PromptFileError)


def prompt_index(source: str | Path | None = None) -> PromptIndex:
    """`load_prompts(source)` by prompt id (a duplicate id is a `DuplicatePromptError`, a `UserError`)."""
    return PromptIndex(load_prompts(source))
