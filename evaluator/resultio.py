"""Result files: one `ResultRecord` per line (JSONL), safe to append to and to resume.

- `read_results(path)` reads a file; a malformed line raises `ResultFileError` with "path:line:".
- `ResultWriter(path)` appends; on opening it reads what is there, so a re-run skips keys
  ``(model_key, prompt_id, sample_index)`` already written, and a torn last line left by a
  killed run is cut away (with a warning) instead of being merged with the next record.
- `merge_results(paths, out)` joins the files of several processes, one record per key.

Each takes `record_type`: the scorer's `ResultRecord` by default, or another pydantic record with
a `key`, an `evaluator_version` and a `config_hash` (GenEval's lines, `evaluator.geneval.records`).

A *torn* line is a last line without its trailing newline that is not a whole record (the
writer ends every record with a newline in the same write, so only an interrupted write leaves
one). A last line without a newline that is a whole record is kept. Lines are read by
`negt2ibench.core.jsonl`, the project's one JSONL reader; the writer's lock is filelock's.

The lock (flock) belongs to the open file, which a forked child shares: a loader worker forked
while a writer is open would keep the file locked after its writer died (a killed run's rerun
would be refused until the orphaned workers go). So a forked child lets go of every open
writer's file at once (`os.register_at_fork`).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from pydantic import BaseModel

from negt2ibench.core.atomic import atomic_file
from negt2ibench.core.jsonl import JsonlContents, JsonlError, parse_jsonl, read_jsonl, require_file

from .results import ResultRecord

log = logging.getLogger(__name__)

PathLike = str | Path
Key = tuple[str, str, int]
RecordType = type[BaseModel]


class KeyedRecord(Protocol):
    """What result files need of a record (`ResultRecord`, GenEval's lines): its key, the version
    and config of the evaluator that wrote it, and its JSON line."""

    @property
    def key(self) -> Key: ...

    @property
    def evaluator_version(self) -> str: ...

    @property
    def config_hash(self) -> str: ...

    def model_dump_json(self) -> str: ...


class ResultFileError(JsonlError):
    """A result file that cannot be read or appended to as it is; the message names path and line.

    A `UserError` (the CLI prints one line, exit 1) and a `ValueError`."""


_OPEN_WRITERS: weakref.WeakSet[ResultWriter] = weakref.WeakSet()


def _release_in_forked_child() -> None:
    """In a forked child: point each open writer's descriptor at /dev/null (the parent's lock and
    file stay as they are) and forget it, so the child neither holds the lock nor writes."""
    for writer in list(_OPEN_WRITERS):
        handle, writer._handle = writer._handle, None
        try:
            descriptor = handle.fileno() if handle is not None else -1
        except (OSError, ValueError):  # its file was closed behind the writer's back: nothing held
            continue
        if descriptor >= 0:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, descriptor)  # the result file's description loses this process's reference
            os.close(null)
    _OPEN_WRITERS.clear()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_release_in_forked_child)


def _parse(path: Path, record_type: RecordType = ResultRecord) -> JsonlContents:
    return parse_jsonl(
        path.read_bytes(), record_type.model_validate_json, source=str(path), kind="result", error=ResultFileError
    )


def _require_file(path: Path) -> None:
    require_file(path, kind="result", error=ResultFileError)


def read_results(path: PathLike, *, strict: bool = True, record_type: RecordType = ResultRecord) -> list:
    """All records of a JSONL result file, in file order (`negt2ibench.core.jsonl.read_jsonl`).

    A malformed line raises `ResultFileError` ("path:line: reason"). A torn last line (a killed
    writer) raises too when `strict`, else it is dropped with a warning.
    """
    return read_jsonl(path, record_type.model_validate_json, strict=strict, kind="result", error=ResultFileError)


def _version(record: KeyedRecord) -> tuple[str, str]:
    return (record.evaluator_version, record.config_hash)


def check_appendable(
    path: PathLike,
    evaluator_version: str,
    config_hash: str,
    *,
    what: str = "--out",
    record_type: RecordType = ResultRecord,
) -> Path:
    """PATH if results of this evaluator version and config can be appended to it, else a
    `ResultFileError` now (`score` checks before any model loads): a folder, a file with a
    malformed line, or a file holding other versions or configs. A torn last line is fine (the
    writer cuts it); a missing file is fine (the writer creates it)."""
    path = Path(path)
    if path.is_dir():
        example = path / "results.jsonl"
        raise ResultFileError(f"{what} {path} is a folder; give the results file to write, e.g. {example}")
    if path.parent.exists() and not path.parent.is_dir():
        raise ResultFileError(f"{what} {path}: {path.parent} is not a folder")
    if not path.is_file():
        return path
    versions = {_version(record) for record in read_results(path, strict=False, record_type=record_type)}
    if len(versions) > 1:
        listed = ", ".join(f"evaluator {v} config {h}" for v, h in sorted(versions))
        raise ResultFileError(f"{what} {path} holds results of several evaluator configurations ({listed})")
    if versions and versions != {(evaluator_version, config_hash)}:
        (version, held), *_ = versions
        raise ResultFileError(
            f"{what} {path} holds results of evaluator {version} config {held}, but this run scores with "
            f"evaluator {evaluator_version} config {config_hash}: write to another file, or score with the "
            f"preset that made it"
        )
    return path


class ResultWriter:
    """Append-safe writer of one result file; use as a context manager.

    On opening, existing rows are read (`done` holds their keys), a torn last line is cut away
    with a warning, and an advisory lock keeps a second writer off the file. `write` skips a
    key already in the file (returns False), refuses a record scored with another evaluator
    version or config than the file's, and flushes each line (fsync too when asked).
    """

    def __init__(self, path: PathLike, *, fsync: bool = False, record_type: RecordType = ResultRecord):
        self.path = Path(path)
        self.fsync = fsync
        self.record_type = record_type
        self.done: set[Key] = set()
        self.version: tuple[str, str] | None = None  # (evaluator_version, config_hash) of the file
        self.written = 0
        self._handle: BinaryIO | None = None

    def __enter__(self) -> ResultWriter:
        self.open()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def open(self) -> None:
        from filelock import lock_descriptor

        if self._handle is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "ab+")
        except OSError as error:
            raise ResultFileError(f"{self.path}: cannot open for appending ({error.strerror or error})") from None
        try:
            # filelock's native lock on the file itself (flock on POSIX): no lock file beside the results.
            if not lock_descriptor(handle.fileno(), blocking=False):
                raise ResultFileError(f"{self.path}: another process is writing this result file")
            parsed = _parse(self.path, self.record_type)
            if parsed.torn:
                log.warning("cutting away %s", parsed.torn)
                handle.truncate(parsed.good_bytes)
            elif parsed.missing_newline:
                handle.write(b"\n")
                handle.flush()
            versions = {_version(record) for record in parsed.records}
            if len(versions) > 1:
                raise ResultFileError(
                    f"{self.path}: holds records of several evaluator versions/configs "
                    f"({', '.join(f'{v} {h}' for v, h in sorted(versions))}); write to a new file"
                )
            self.version = next(iter(versions), None)
            self.done = {record.key for record in parsed.records}
        except BaseException:
            handle.close()
            raise
        self._handle = handle
        _OPEN_WRITERS.add(self)

    def write(self, record: KeyedRecord) -> bool:
        """Append `record` unless its key is already in the file; True when written."""
        if self._handle is None:
            raise RuntimeError("ResultWriter is not open; use it as `with ResultWriter(path) as writer:`")
        if record.key in self.done:
            return False
        version = _version(record)
        if self.version is not None and version != self.version:
            raise ResultFileError(
                f"{self.path}: holds results of evaluator {self.version[0]} config {self.version[1]}, "
                f"but this record is evaluator {version[0]} config {version[1]}; "
                f"write it to another file (or delete the old one to rescore)"
            )
        self._handle.write(record.model_dump_json().encode("utf-8") + b"\n")
        self._handle.flush()
        if self.fsync:
            os.fsync(self._handle.fileno())
        self.version = version
        self.done.add(record.key)
        self.written += 1
        return True

    def close(self) -> None:
        _OPEN_WRITERS.discard(self)
        if self._handle is not None:
            self._handle.close()  # closing releases the lock
            self._handle = None


@dataclass
class MergeSummary:
    """What `merge_results` did."""

    inputs: list[str]
    records_in: int = 0
    records_out: int = 0
    duplicates: int = 0  # identical copies of a key, dropped
    conflicts: dict[Key, list[str]] = field(default_factory=dict)  # key → files that disagree; first kept
    torn_dropped: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = (
            f"merged {len(self.inputs)} file(s): {self.records_in} records in, {self.records_out} out, "
            f"{self.duplicates} identical duplicate(s) dropped"
        )
        if self.conflicts:
            text += f", {len(self.conflicts)} conflicting key(s) (first file's record kept)"
        if self.torn_dropped:
            text += f", {len(self.torn_dropped)} torn last line(s) dropped"
        return text


def merge_results(
    paths: Iterable[PathLike],
    out: PathLike,
    *,
    strict: bool = True,
    overwrite: bool = False,
    record_type: RecordType = ResultRecord,
) -> MergeSummary:
    """Join result files into `out`, one record per key, sorted by (model_key, prompt_id, sample_index).

    Identical duplicates are dropped; duplicates that differ are reported in `conflicts` (the
    record of the earliest file wins). Files of different evaluator versions/configs are
    refused. With `strict=False` a torn last line of an input is dropped and reported.
    `out` is written atomically; it may be one of the inputs, otherwise it must not exist
    unless `overwrite`.
    """
    files = [Path(p) for p in paths]
    out = Path(out)
    if not files:
        raise ResultFileError("merge needs at least one result file")
    if out.exists() and not overwrite and all(out.resolve() != p.resolve() for p in files):
        raise ResultFileError(f"{out} exists; choose another output or allow overwriting")
    summary = MergeSummary(inputs=[str(p) for p in files])
    kept: dict[Key, tuple[KeyedRecord, str]] = {}
    versions: dict[tuple[str, str], str] = {}
    for path in files:
        _require_file(path)
        parsed = _parse(path, record_type)
        if parsed.torn:
            if strict:
                raise ResultFileError(parsed.torn + "; merge with strict=False to drop it")
            summary.torn_dropped.append(parsed.torn)
        for record in parsed.records:
            summary.records_in += 1
            versions.setdefault(_version(record), str(path))
            previous = kept.get(record.key)
            if previous is None:
                kept[record.key] = (record, str(path))
            elif previous[0] == record:
                summary.duplicates += 1
            else:
                summary.conflicts.setdefault(record.key, [previous[1]]).append(str(path))
    if len(versions) > 1:
        listed = "; ".join(f"evaluator {v} config {h} (first in {p})" for (v, h), p in versions.items())
        raise ResultFileError(f"cannot merge results of different evaluator versions/configs: {listed}")
    with atomic_file(out) as handle:
        for key in sorted(kept):
            handle.write(kept[key][0].model_dump_json().encode("utf-8") + b"\n")
    summary.records_out = len(kept)
    return summary
