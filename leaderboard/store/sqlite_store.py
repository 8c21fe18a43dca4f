"""Leaderboard store: one interface (`LeaderboardStore`, `leaderboard.store.entries`), two backends.

- `SQLiteStore`: a single SQLite file under ``NEGT2I_HOME`` (default, embedded). Every write is
  one transaction that takes the database's write lock before it reads (``BEGIN IMMEDIATE``), so
  a crash mid-submission leaves no half entry, and two processes changing one entry (the Space
  and a verification job) never lose each other's change.
- `HubStore` (`leaderboard.store.hub_store`): a Hub dataset repo of results (``NEGT2I_RESULTS_REPO``).

`open_store` picks one from the environment; `open_store_at` opens the one a `locator()` names
(how a verification job started by the Space finds the Space's store).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evaluator.results import ResultRecord
from leaderboard.store.annotation_store import ANNOTATIONS_SCHEMA, SQLiteAnnotations
from leaderboard.store.entries import (
    AWAITING,
    NAME_HOLD_DAYS,
    STATUSES,
    Check,
    Decide,
    Entry,
    JobRecord,
    LeaderboardStore,
    OwnershipError,
    RunClaim,
    StaleEntryError,
    Status,
    StoreError,
    Verification,
    changed,
    check_owner,
    checked,
    expired_reason,
    images_pin,
    model_key_of,
    name_conflict,
    name_expired,
    parse_results_blob,
    results_blob,
)
from leaderboard.store.hub_store import HubRemote, HubStore, UploadFn, hub_api, hub_uploader
from negt2ibench.core.errors import UserError

__all__ = [
    "AWAITING",
    "NAME_HOLD_DAYS",
    "STATUSES",
    "Check",
    "Decide",
    "Entry",
    "HubRemote",
    "HubStore",
    "JobRecord",
    "LeaderboardStore",
    "OwnershipError",
    "RunClaim",
    "SQLiteStore",
    "StaleEntryError",
    "Status",
    "StoreError",
    "UploadFn",
    "Verification",
    "hub_api",
    "hub_uploader",
    "expired_reason",
    "images_pin",
    "model_key_of",
    "name_conflict",
    "name_expired",
    "negt2i_home",
    "open_store",
    "open_store_at",
]

DEFAULT_HOME = Path("~/.cache/negt2ibench")


class SQLiteStore(SQLiteAnnotations):
    """Entries, results and annotations in one SQLite file; every write is a single transaction."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as connection:
            connection.executescript(
                """
                CREATE TABLE IF NOT EXISTS entries (
                    submission_id TEXT PRIMARY KEY,
                    model_key TEXT NOT NULL,
                    submitter TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    status TEXT NOT NULL,
                    entry_json TEXT NOT NULL
                );
                CREATE INDEX IF NOT EXISTS entries_by_submitter ON entries (submitter, created_at);
                CREATE TABLE IF NOT EXISTS results (
                    submission_id TEXT PRIMARY KEY REFERENCES entries (submission_id) ON DELETE CASCADE,
                    jsonl_gz BLOB NOT NULL
                );
                """
                + ANNOTATIONS_SCHEMA
            )

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection whose block is one transaction (commit on success, rollback on error)."""
        connection = sqlite3.connect(self.path, timeout=30)
        try:
            connection.execute("PRAGMA foreign_keys = ON")
            with connection:
                yield connection
        finally:
            connection.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database's write lock from its first read (``BEGIN
        IMMEDIATE``: another process's writer waits, up to 30 s), so what it read is still true
        when it writes; commit on success, rollback on error."""
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        finally:
            connection.close()

    def locator(self) -> str:
        return f"sqlite:{self.path.resolve()}"

    def refresh(self) -> None:
        """Nothing to do: every read is of the file itself."""

    def _all(self, connection: sqlite3.Connection) -> list[Entry]:
        rows = connection.execute("SELECT entry_json FROM entries ORDER BY created_at").fetchall()
        return [Entry.model_validate_json(row[0]) for row in rows]

    def add_submission(self, entry: Entry, results: Iterable[ResultRecord] = ()) -> Entry:
        with self._lock, self._write() as connection:
            check_owner(self._all(connection), entry)
            connection.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                (
                    entry.submission_id,
                    entry.model_key,
                    entry.submitter,
                    entry.created_at,
                    entry.status,
                    entry.model_dump_json(),
                ),
            )
            # Serialised inside the transaction: a failure while reading the results undoes the entry.
            connection.execute("INSERT INTO results VALUES (?, ?)", (entry.submission_id, results_blob(results)))
        return entry

    def modify(self, submission_id: str, decide: Decide) -> Entry:
        with self._lock, self._write() as connection:
            current = self._get(connection, submission_id)
            entry = changed(current, decide(current, self._all(connection)))
            connection.execute(
                "UPDATE entries SET status = ?, entry_json = ? WHERE submission_id = ?",
                (entry.status, entry.model_dump_json(), submission_id),
            )
        return entry

    def update_entry(self, submission_id: str, check: Check | None = None, **changes: Any) -> Entry:
        return self.modify(submission_id, checked(check, changes))

    def _get(self, connection: sqlite3.Connection, submission_id: str) -> Entry:
        row = connection.execute("SELECT entry_json FROM entries WHERE submission_id = ?", (submission_id,)).fetchone()
        if row is None:
            raise StoreError(f"no submission {submission_id!r}")
        return Entry.model_validate_json(row[0])

    def get_entry(self, submission_id: str) -> Entry:
        with self._connect() as connection:
            return self._get(connection, submission_id)

    def list_entries(self, status: Status | None = None) -> list[Entry]:
        with self._connect() as connection:
            entries = self._all(connection)
        return [e for e in entries if status is None or e.status == status]

    def get_results(self, submission_id: str) -> list[ResultRecord]:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT jsonl_gz FROM results WHERE submission_id = ?", (submission_id,)
            ).fetchone()
        if row is None:
            raise StoreError(f"no results for submission {submission_id!r}")
        return parse_results_blob(row[0])

    def count_recent(self, submitter: str, since: float) -> int:
        with self._connect() as connection:
            (count,) = connection.execute(
                "SELECT COUNT(*) FROM entries WHERE submitter = ? AND created_at >= ?", (submitter, since)
            ).fetchone()
        return int(count)


def negt2i_home() -> Path:
    """``NEGT2I_HOME`` or ``~/.cache/negt2ibench``."""
    return Path(os.environ.get("NEGT2I_HOME") or DEFAULT_HOME).expanduser()


def open_store(home: str | Path | None = None) -> LeaderboardStore:
    """The Hub backend when ``NEGT2I_RESULTS_REPO`` is set, else SQLite under the home folder."""
    root = Path(home).expanduser() if home else negt2i_home()
    repo_id = os.environ.get("NEGT2I_RESULTS_REPO")
    if repo_id:
        return HubStore.from_repo(repo_id, root / "results_repo")
    return SQLiteStore(root / "leaderboard.sqlite")


def open_store_at(locator: str, home: str | Path | None = None) -> LeaderboardStore:
    """The store a `locator()` names: ``sqlite:PATH``, or ``hub:ORG/NAME`` (cloned under the home
    folder's ``results_repo``, token HF_TOKEN)."""
    kind, _, where = locator.partition(":")
    if kind == "sqlite" and where:
        path = Path(where).expanduser()
        if not path.is_file():
            raise UserError(f"--store {locator}: no leaderboard database at {path}")
        return SQLiteStore(path)
    if kind == "hub" and where:
        from negt2ibench.core.options import REPO_ID

        if not REPO_ID.match(where):
            raise UserError(f"--store {locator}: the results repo must be a Hub repo id ORG/NAME")
        root = Path(home).expanduser() if home else negt2i_home()
        return HubStore.from_repo(where, root / "results_repo")
    raise UserError(f"--store {locator!r}: expected sqlite:PATH or hub:ORG/NAME")
