"""Human annotations in the leaderboard store (docs/validation.md), for both backends.

Mixed into `leaderboard.store.sqlite_store.SQLiteStore` and `leaderboard.store.hub_store.HubStore`
(they provide the connection / commit machinery); the methods are the annotation half of the
`LeaderboardStore` protocol.
One record per image × annotator: storing a record for a pair that has one replaces it, so an
annotator can go back and change an answer. Every call writes at once (one SQLite transaction,
or one Hub commit), so nothing answered is lost on a restart.

- SQLite: table ``annotations``, keyed by (model_key, prompt_id, sample_index, annotator).
- Hub repo: ``annotations/<model_key>/<prompt_id>_<sample_index>/<annotator slug>.json``.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path

from validation.annotations import AnnotationRecord, ImageKey

ANNOTATIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS annotations (
    model_key TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record_json TEXT NOT NULL,
    PRIMARY KEY (model_key, prompt_id, sample_index, annotator)
);
CREATE INDEX IF NOT EXISTS annotations_by_annotator ON annotations (annotator);
"""

_UPSERT = (
    "INSERT INTO annotations VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (model_key, prompt_id, sample_index, annotator) "
    "DO UPDATE SET created_at = excluded.created_at, record_json = excluded.record_json"
)


def _unique(records: Iterable[AnnotationRecord]) -> list[AnnotationRecord]:
    """The records, the last one winning when a batch holds one image × annotator twice."""
    by_key = {(r.image_key, r.annotator): r for r in records}
    return list(by_key.values())


class SQLiteAnnotations:
    """Annotation methods of `SQLiteStore` (uses its `_lock` and `_connect`)."""

    _lock: threading.Lock
    _connect: Callable[[], AbstractContextManager[sqlite3.Connection]]

    def add_annotations(self, records: Iterable[AnnotationRecord]) -> int:
        """Store (or replace) records in one transaction; returns how many were written."""
        rows = [(*r.image_key, r.annotator, r.created_at.isoformat(), r.model_dump_json()) for r in _unique(records)]
        with self._lock, self._connect() as connection:
            connection.executemany(_UPSERT, rows)
        return len(rows)

    def add_annotation(self, record: AnnotationRecord) -> AnnotationRecord:
        self.add_annotations([record])
        return record

    def _select(self, where: str = "", parameters: tuple = ()) -> list[AnnotationRecord]:
        query = f"SELECT record_json FROM annotations {where} ORDER BY model_key, prompt_id, sample_index, annotator"
        with self._connect() as connection:
            rows: list[sqlite3.Row] = connection.execute(query, parameters).fetchall()
        return [AnnotationRecord.model_validate_json(row[0]) for row in rows]

    def annotations(self, annotator: str | None = None) -> list[AnnotationRecord]:
        """Every stored record (or one annotator's), by image then annotator."""
        if annotator is None:
            return self._select()
        return self._select("WHERE annotator = ?", (annotator,))

    def annotators_of(self, image_key: ImageKey) -> list[str]:
        records = self._select("WHERE model_key = ? AND prompt_id = ? AND sample_index = ?", tuple(image_key))
        return [r.annotator for r in records]

    def get_annotation(self, image_key: ImageKey, annotator: str) -> AnnotationRecord | None:
        found = self._select(
            "WHERE model_key = ? AND prompt_id = ? AND sample_index = ? AND annotator = ?", (*image_key, annotator)
        )
        return found[0] if found else None


def annotator_slug(annotator: str) -> str:
    """A file name for an annotator: readable, and unique through a hash of the exact name."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", annotator).strip("._")[:60] or "annotator"
    return f"{readable}-{hashlib.sha256(annotator.encode('utf-8')).hexdigest()[:10]}"


def _image_dir(image_key: ImageKey) -> str:
    model_key, prompt_id, sample_index = image_key
    return f"annotations/{model_key}/{prompt_id}_{sample_index}"


class HubAnnotations:
    """Annotation methods of `HubStore` (uses its `local_dir`, `_lock` and `_commit`)."""

    _lock: threading.Lock
    _commit: Callable[[dict[str, bytes], list[str], str], None]

    local_dir: Path

    def _annotation_rel(self, record: AnnotationRecord) -> str:
        return f"{_image_dir(record.image_key)}/{annotator_slug(record.annotator)}.json"

    def add_annotations(self, records: Iterable[AnnotationRecord]) -> int:
        """Store (or replace) records as one Hub commit; returns how many were written."""
        unique = _unique(records)
        if not unique:
            return 0
        writes = {self._annotation_rel(r): r.model_dump_json(indent=1).encode("utf-8") for r in unique}
        who = sorted({r.annotator for r in unique})
        message = f"annotations: {len(unique)} by {', '.join(who[:3])}{' …' if len(who) > 3 else ''}"
        with self._lock:
            self._commit(writes, [], message)
        return len(unique)

    def add_annotation(self, record: AnnotationRecord) -> AnnotationRecord:
        self.add_annotations([record])
        return record

    def _read(self, paths: Iterable[Path]) -> list[AnnotationRecord]:
        records = [AnnotationRecord.model_validate_json(p.read_text("utf-8")) for p in paths]
        return sorted(records, key=lambda r: (r.image_key, r.annotator))

    def annotations(self, annotator: str | None = None) -> list[AnnotationRecord]:
        records = self._read((self.local_dir / "annotations").glob("*/*/*.json"))
        return [r for r in records if annotator is None or r.annotator == annotator]

    def annotators_of(self, image_key: ImageKey) -> list[str]:
        return [r.annotator for r in self._read((self.local_dir / _image_dir(image_key)).glob("*.json"))]

    def get_annotation(self, image_key: ImageKey, annotator: str) -> AnnotationRecord | None:
        path = self.local_dir / _image_dir(image_key) / f"{annotator_slug(annotator)}.json"
        return AnnotationRecord.model_validate_json(path.read_text("utf-8")) if path.is_file() else None
