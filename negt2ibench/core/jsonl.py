"""The one JSONL reader: records with their line numbers, and a torn last line told apart.

Every JSONL file of the project (result files, prompts.jsonl, a submission's results) is read
here, so every malformed line is reported the same way, ``path:line: reason``.

A *torn* line is a last line without its trailing newline that is not a whole record: a writer
killed in the middle of a write leaves one (writers end every record with a newline in the same
write). A last line without a newline that *is* a whole record is kept. `parse_jsonl` reports
where the whole lines end (`good_bytes`), so an appending writer can cut the torn rest away.

A file is parsed with the cyclic garbage collector paused (`gc_paused`): every record parsed is
kept, so the collections that tens of thousands of new objects trigger would walk all the records
read so far again and again for nothing (19,200 records: parsed in a third of the time). A command
that reads many files and then exits (`negt2ibench report`) pauses it around all of them and then
freezes what it read (`gc_paused(freeze=True)`), so no later collection walks the records again.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Generic, TypeVar

from .errors import UserError

log = logging.getLogger(__name__)

T = TypeVar("T")


class JsonlError(UserError, ValueError):
    """A JSONL file that cannot be read as it is; the message names the path and line."""


@dataclass(frozen=True)
class JsonlContents(Generic[T]):
    """What `parse_jsonl` found."""

    records: list[T]
    good_bytes: int  # bytes up to the end of the last whole line: what a writer keeps of the file
    torn: str | None  # "path:line: torn last line (...)" when the last line is torn
    missing_newline: bool  # the last line is a whole record but has no newline
    lines: list[int] = field(default_factory=list)  # the line number of each record, in order
    bad: list[str] = field(default_factory=list)  # "path:line: reason" of lines skipped (`skip_bad`)


def line_reason(error: Exception, kind: str = "JSONL") -> str:
    """One readable phrase for a line that failed to parse (JSON syntax or pydantic validation)."""
    from pydantic import ValidationError

    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg} at column {error.colno})"
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        if first.get("type") == "json_invalid":
            return f"not JSON ({first.get('ctx', {}).get('error', first.get('msg'))})"
        where = ".".join(str(part) for part in first.get("loc", ())) or "record"
        return f"not a {kind} record ({where}: {first.get('msg')}; {error.error_count()} error(s))"
    return str(error)


@contextlib.contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """The cyclic garbage collector off for the block, then on again as it was: for bulk reads that
    keep what they build (nested blocks leave it off until the outermost ends). With `freeze`,
    everything alive is then moved to the collector's permanent generation (`gc.freeze`), which its
    collections never walk (else the first one after the block walks every object the block made,
    and each later full one again). For a process that ends soon after: objects frozen are still
    freed by reference counting, but a reference cycle among them never is."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


def parse_jsonl(
    data: bytes,
    parse: Callable[[bytes], T],
    *,
    source: str,
    kind: str = "JSONL",
    error: type[JsonlError] = JsonlError,
    skip_bad: bool = False,
) -> JsonlContents[T]:
    """Parse every non-blank line of DATA with PARSE (e.g. `Model.model_validate_json`; a JSON parser:
    it gets a line without its newline, or with it once a file has a bad line).

    A bad complete line raises ERROR ("SOURCE:LINE: reason"), or with `skip_bad` is left out
    and listed in `bad` (a reader that reports what it can, e.g. `negt2ibench report`); a bad
    last line without a newline is a torn line, reported in the result and not raised (the
    caller decides). KIND names the records in messages ("result" → "not a result record (...)").
    """
    with gc_paused():
        whole = _parse_whole(data, parse)
        if whole is not None:
            return whole
        return _parse_lines(data, parse, source=source, kind=kind, error=error, skip_bad=skip_bad)


def _parse_whole(data: bytes, parse: Callable[[bytes], T]) -> JsonlContents[T] | None:
    """Every line of DATA parsed in one comprehension, or None at the first bad one (then
    `_parse_lines` parses the file again line by line, to say where and why): most files have no
    bad line, and the line-by-line loop took a tenth of the parsing time of 211,200 records.
    Without its newline a line parses as with it (JSON ignores whitespace around a value)."""
    pieces = data.split(b"\n")  # the last piece: empty, or a last line without its newline
    try:
        records = [parse(piece) for piece in pieces if piece.strip()]
    except ValueError:
        return None
    if len(records) == len(pieces) - (not pieces[-1]):  # no blank line: the records are lines 1, 2, ...
        lines = list(range(1, len(records) + 1))
    else:
        lines = [number for number, piece in enumerate(pieces, start=1) if piece.strip()]
    return JsonlContents(records, len(data), None, bool(pieces[-1]), lines)


def _parse_lines(
    data: bytes, parse: Callable[[bytes], T], *, source: str, kind: str, error: type[JsonlError], skip_bad: bool
) -> JsonlContents[T]:
    records: list[T] = []
    lines: list[int] = []
    bad: list[str] = []
    offset, good_bytes, line_number = 0, 0, 0
    while offset < len(data):
        end = data.find(b"\n", offset)
        complete = end != -1
        stop = end + 1 if complete else len(data)
        raw = data[offset:stop]  # with its newline: a JSON error's line and column are as they always were
        line_number += 1
        offset = stop
        if raw.strip():
            try:
                records.append(parse(raw))
                lines.append(line_number)
            except ValueError as problem:  # json and pydantic errors are ValueErrors
                if not complete:
                    torn = (
                        f"{source}:{line_number}: torn last line "
                        f"({len(raw)} bytes without a newline: {line_reason(problem, kind)})"
                    )
                    return JsonlContents(records, good_bytes, torn, False, lines, bad)
                if not skip_bad:
                    raise error(f"{source}:{line_number}: {line_reason(problem, kind)}") from None
                bad.append(f"{source}:{line_number}: {line_reason(problem, kind)}")
        if complete:
            good_bytes = stop
    missing_newline = good_bytes < len(data)  # a whole record without its newline
    return JsonlContents(records, len(data), None, missing_newline, lines, bad)


def stream_jsonl(
    stream: IO[bytes],
    parse: Callable[[bytes], T],
    *,
    source: str,
    kind: str = "JSONL",
    error: type[JsonlError] = JsonlError,
) -> Iterator[tuple[int, T]]:
    """(line number, record) of each non-blank line of a binary STREAM, read one line at a time, so
    a reader can stop at the first record it refuses without reading (or holding) the rest. A bad
    complete line raises ERROR ("SOURCE:LINE: reason"); a bad last line without a newline raises
    ERROR saying it is torn (as `parse_jsonl` reports one)."""
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            record = parse(raw)
        except ValueError as problem:  # json and pydantic errors are ValueErrors
            if raw.endswith(b"\n"):
                raise error(f"{source}:{number}: {line_reason(problem, kind)}") from None
            torn = (
                f"{source}:{number}: torn last line ({len(raw)} bytes without a newline: {line_reason(problem, kind)})"
            )
            raise error(torn) from None
        yield number, record


def require_file(path: str | Path, *, kind: str = "JSONL", error: type[JsonlError] = JsonlError) -> Path:
    """PATH if it is a file; a folder or a missing path raises ERROR naming it."""
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, not a {kind} file")
    if not path.is_file():
        raise error(f"{path}: no such {kind} file")
    return path


def read_jsonl(
    path: str | Path,
    parse: Callable[[bytes], T],
    *,
    strict: bool = True,
    kind: str = "JSONL",
    error: type[JsonlError] = JsonlError,
) -> list[T]:
    """All records of a JSONL file, in file order.

    A malformed line raises ERROR ("path:line: reason"). A torn last line raises too when
    `strict`, else it is dropped with a warning. A missing path or a folder raises ERROR.
    """
    path = require_file(path, kind=kind, error=error)
    contents = parse_jsonl(path.read_bytes(), parse, source=str(path), kind=kind, error=error)
    if contents.torn:
        if strict:
            raise error(contents.torn + "; pass strict=False to drop it")
        log.warning("dropping %s", contents.torn)
    return contents.records
