"""Leaderboard store: one interface (`LeaderboardStore`), two backends.

- `SQLiteStore`: a single SQLite file under ``NEGT2I_HOME`` (default, embedded). Every write is
  one transaction, so a crash mid-submission leaves no half entry.
- `HubStore`: a Hub dataset repo of results (``NEGT2I_RESULTS_REPO``). Writes go into a local
  clone folder (temp file + rename, the entry file last, so it is the commit point) and are
  uploaded as one Hub commit; if the upload fails the local files are removed again.

An entry is one submission: who sent it, for which model, its status with the reason
(`leaderboard.submissions` moves it: received → validated → verified | rejected | pending | held), its
leaderboard row once validated, and its spot-check attempts. Results are stored beside it.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from evaluator.results import ResultRecord
from negt2ibench.core.atomic import write_atomic
from negt2ibench.core.errors import NegT2IError, UserError
from negt2ibench.core.jsonl import JsonlError, parse_jsonl
from negt2ibench.core.names import slug
from validation.annotations import AnnotationRecord, ImageKey

from .annotation_store import ANNOTATIONS_SCHEMA, HubAnnotations, SQLiteAnnotations
from .names import confusable_key

# received: stored with its results; validated: its leaderboard row computed, the spot check next;
# verified / rejected: final; pending: the spot check could not run yet (the reason says why);
# held: ranked only after a full re-score (`leaderboard.holds`: the reason says why).
Status = Literal["received", "validated", "verified", "rejected", "pending", "held"]
STATUSES: tuple[str, ...] = get_args(Status)
DEFAULT_HOME = Path("~/.cache/negt2ibench")


class StoreError(NegT2IError, RuntimeError):
    """The store could not do what was asked (unknown id, taken model name, failed upload)."""


class OwnershipError(StoreError, UserError):
    """The model name belongs to another submitter's entry."""


def model_key_of(model_name: str) -> str:
    """The split-safe key of a model name (`negt2ibench.core.names.slug`): lower case, runs of other
    characters as one `_`. A name with no letter or digit raises `SlugError` (a `ValueError`)."""
    return slug(model_name)


class Verification(BaseModel):
    """How a verified (or rejected) entry was checked: a sample (`leaderboard.verification`'s plan) or every image."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["sampled", "full"]
    checked: int  # images re-scored
    disagreements: int  # of them, images whose verdicts differ from the submitted file's
    allowed: int | None = None  # the sampled plan's tolerance
    total: int  # images in the submission
    at: float = Field(default_factory=time.time)


class Entry(BaseModel):
    """One submission and its state."""

    model_config = ConfigDict(extra="forbid")

    submission_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    model_name: str
    model_key: str
    submitter: str
    link: str = ""
    images_repo: str = ""
    images_revision: str = ""
    created_at: float = Field(default_factory=time.time)
    status: Status = "received"
    reason: str = ""
    evaluator_version: str = ""
    config_hash: str = ""
    row: dict[str, Any] | None = None  # leaderboard row (Table 3 columns) once validated
    detail: dict[str, Any] | None = None  # per-model detail: polarity × category, failure causes
    attempts: int = 0  # spot checks tried (a pending one is retried)
    checked_at: float | None = None  # when the last spot check was tried (epoch seconds)
    verification: Verification | None = None  # how it was verified (or rejected)
    claimed_row: dict[str, Any] | None = None  # the submitted numbers, once a full re-score replaced `row`


def with_status(
    entry: Entry,
    status: Status,
    reason: str = "",
    *,
    row: dict | None = None,
    detail: dict | None = None,
    **fields: Any,
) -> Entry:
    """A copy of `entry` with a new status and reason (and its row/detail and other fields, e.g.
    `attempts`, when given): both backends' update. The copy is validated as an `Entry`."""
    changes: dict[str, Any] = {"status": status, "reason": reason, **fields}
    if row is not None:
        changes["row"] = row
    if detail is not None:
        changes["detail"] = detail
    return Entry.model_validate({**entry.model_dump(), **changes})


@runtime_checkable
class LeaderboardStore(Protocol):
    """What the Space needs from a store, whatever holds the data."""

    def add_submission(self, entry: Entry, results: Iterable[ResultRecord] = ()) -> Entry:
        """Store an entry with its results atomically; nothing earlier is removed (the leaderboard
        shows each model's newest entry). Another submitter's model raises OwnershipError."""

    def update_status(self, submission_id: str, status: Status, reason: str = "", **fields: Any) -> Entry:
        """Set an entry's status and reason, and the other fields given (`with_status`: `row`,
        `detail`, `attempts` ...); one write."""

    def get_entry(self, submission_id: str) -> Entry: ...

    def list_entries(self, status: Status | None = None) -> list[Entry]: ...

    def get_results(self, submission_id: str) -> list[ResultRecord]: ...

    def count_recent(self, submitter: str, since: float) -> int:
        """Submissions by `submitter` created at or after `since` (epoch seconds)."""

    # Human annotations (docs/validation.md; leaderboard/annotation_store.py): one record per image × annotator.
    def add_annotation(self, record: AnnotationRecord) -> AnnotationRecord:
        """Store at once; replaces the annotator's earlier record of that image (changed answers)."""

    def add_annotations(self, records: Iterable[AnnotationRecord]) -> int:
        """Store many as one transaction / one Hub commit (imports); same replacement rule."""

    def annotations(self, annotator: str | None = None) -> list[AnnotationRecord]: ...

    def annotators_of(self, image_key: ImageKey) -> list[str]: ...

    def get_annotation(self, image_key: ImageKey, annotator: str) -> AnnotationRecord | None: ...


def _results_blob(results: Iterable[ResultRecord]) -> bytes:
    lines = (record.model_dump_json() + "\n" for record in results)
    return gzip.compress("".join(lines).encode("utf-8"), compresslevel=5)


def _parse_results_blob(blob: bytes, source: str = "stored results") -> list[ResultRecord]:
    contents = parse_jsonl(gzip.decompress(blob), ResultRecord.model_validate_json, source=source, kind="result")
    if contents.torn:
        raise JsonlError(contents.torn)
    return contents.records


def name_conflict(existing: Iterable[Entry], model_name: str, model_key: str, submitter: str) -> str:
    """Why `model_name` cannot be this submitter's ("" when it can): the model belongs to another
    submitter, or the name looks like another model's (the same TR39 skeleton, `leaderboard.names`).
    Rejected entries own nothing."""
    looks = confusable_key(model_name)
    for other in existing:
        if other.status == "rejected":
            continue
        if other.model_key == model_key:
            if other.submitter != submitter:
                return f"model {model_name!r} was submitted by another user; choose another model name"
        elif confusable_key(other.model_name) == looks:
            return f"{model_name!r} looks like the model {other.model_name!r}; choose a name that does not"
    return ""


def _check_owner(existing: list[Entry], entry: Entry) -> None:
    """Raise if the entry's model belongs to another submitter or its name looks like another model's."""
    if entry.status == "rejected":
        return
    problem = name_conflict(existing, entry.model_name, entry.model_key, entry.submitter)
    if problem:
        raise OwnershipError(problem)


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

    def _all(self, connection: sqlite3.Connection) -> list[Entry]:
        rows = connection.execute("SELECT entry_json FROM entries ORDER BY created_at").fetchall()
        return [Entry.model_validate_json(row[0]) for row in rows]

    def add_submission(self, entry: Entry, results: Iterable[ResultRecord] = ()) -> Entry:
        with self._lock, self._connect() as connection:
            _check_owner(self._all(connection), entry)
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
            connection.execute("INSERT INTO results VALUES (?, ?)", (entry.submission_id, _results_blob(results)))
        return entry

    def update_status(self, submission_id: str, status: Status, reason: str = "", **fields: Any) -> Entry:
        with self._lock, self._connect() as connection:
            entry = with_status(self._get(connection, submission_id), status, reason, **fields)
            connection.execute(
                "UPDATE entries SET status = ?, entry_json = ? WHERE submission_id = ?",
                (status, entry.model_dump_json(), submission_id),
            )
        return entry

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
        return _parse_results_blob(row[0])

    def count_recent(self, submitter: str, since: float) -> int:
        with self._connect() as connection:
            (count,) = connection.execute(
                "SELECT COUNT(*) FROM entries WHERE submitter = ? AND created_at >= ?", (submitter, since)
            ).fetchone()
        return int(count)


# upload(local_dir, paths_to_add, paths_to_delete, message): one atomic commit to the repo.
UploadFn = Callable[[Path, list[str], list[str], str], None]


def hub_api(token: str | None = None) -> Any:
    """A `huggingface_hub.HfApi` with `token`, else HF_TOKEN (never printed), else the login's."""
    from huggingface_hub import HfApi

    return HfApi(token=token or os.environ.get("HF_TOKEN"))


def hub_uploader(repo_id: str, token: str | None = None, *, api: Any = None) -> UploadFn:
    """An `UploadFn` that commits to a Hub dataset repo through `api` (default: `hub_api(token)`)."""

    def upload(local_dir: Path, added: list[str], deleted: list[str], message: str) -> None:
        from huggingface_hub import CommitOperation, CommitOperationAdd, CommitOperationDelete

        operations: list[CommitOperation] = [CommitOperationAdd(p, str(local_dir / p)) for p in added]
        operations += [CommitOperationDelete(path_in_repo=p) for p in deleted]
        (api or hub_api(token)).create_commit(
            repo_id=repo_id, repo_type="dataset", operations=operations, commit_message=message
        )

    return upload


class HubStore(HubAnnotations):
    """Entries as ``submissions/<id>.json``, results as ``results/<id>.jsonl.gz`` and annotations under
    ``annotations/`` in a local clone of a Hub dataset repo; each write is one Hub commit through `upload`."""

    def __init__(self, local_dir: str | Path, upload: UploadFn):
        self.local_dir = Path(local_dir).expanduser()
        (self.local_dir / "submissions").mkdir(parents=True, exist_ok=True)
        (self.local_dir / "results").mkdir(parents=True, exist_ok=True)
        self._upload = upload
        self._lock = threading.Lock()

    @classmethod
    def from_repo(cls, repo_id: str, local_dir: str | Path, token: str | None = None, *, api: Any = None) -> HubStore:
        """Create the private repo if missing, download it into `local_dir` and commit back to it,
        all through one `HfApi` (`api`, default `hub_api(token)`: the token is HF_TOKEN unless given)."""
        api = api or hub_api(token)
        api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
        api.snapshot_download(repo_id, repo_type="dataset", local_dir=str(local_dir))
        return cls(local_dir, hub_uploader(repo_id, api=api))

    def __repr__(self) -> str:
        return f"HubStore({str(self.local_dir)!r})"

    def _entry_path(self, submission_id: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{32}", submission_id):
            raise StoreError(f"no submission {submission_id!r}")
        return self.local_dir / "submissions" / f"{submission_id}.json"

    def _results_rel(self, submission_id: str) -> str:
        return f"results/{submission_id}.jsonl.gz"

    def _all(self) -> list[Entry]:
        entries = [
            Entry.model_validate_json(p.read_text("utf-8")) for p in (self.local_dir / "submissions").glob("*.json")
        ]
        return sorted(entries, key=lambda e: e.created_at)

    def _commit(self, writes: dict[str, bytes], deletes: list[str], message: str) -> None:
        """Write files locally (results first, entries last) and upload them as one commit;
        on any failure restore the previous local state."""
        backups: dict[str, bytes | None] = {}
        for rel in list(writes) + deletes:
            path = self.local_dir / rel
            backups[rel] = path.read_bytes() if path.exists() else None
        try:
            for rel in sorted(writes, key=lambda r: r.startswith("submissions/")):
                write_atomic(self.local_dir / rel, writes[rel])
            for rel in deletes:
                (self.local_dir / rel).unlink(missing_ok=True)
            self._upload(self.local_dir, list(writes), deletes, message)
        except BaseException:
            # Entries first, so a reader never sees an entry whose results are gone.
            for rel in sorted(backups, key=lambda r: not r.startswith("submissions/")):
                path = self.local_dir / rel
                backup = backups[rel]
                if backup is None:
                    path.unlink(missing_ok=True)
                else:
                    write_atomic(path, backup)
            raise

    def add_submission(self, entry: Entry, results: Iterable[ResultRecord] = ()) -> Entry:
        with self._lock:
            _check_owner(self._all(), entry)
            blob = _results_blob(results)  # may raise: nothing written yet
            writes = {
                self._results_rel(entry.submission_id): blob,
                f"submissions/{entry.submission_id}.json": entry.model_dump_json(indent=1).encode("utf-8"),
            }
            self._commit(writes, [], f"submission {entry.model_name} ({entry.status})")
        return entry

    def update_status(self, submission_id: str, status: Status, reason: str = "", **fields: Any) -> Entry:
        with self._lock:
            entry = with_status(self.get_entry(submission_id), status, reason, **fields)
            rel = f"submissions/{submission_id}.json"
            self._commit({rel: entry.model_dump_json(indent=1).encode("utf-8")}, [], f"{entry.model_name}: {status}")
        return entry

    def get_entry(self, submission_id: str) -> Entry:
        path = self._entry_path(submission_id)
        if not path.exists():
            raise StoreError(f"no submission {submission_id!r}")
        return Entry.model_validate_json(path.read_text("utf-8"))

    def list_entries(self, status: Status | None = None) -> list[Entry]:
        return [e for e in self._all() if status is None or e.status == status]

    def get_results(self, submission_id: str) -> list[ResultRecord]:
        self._entry_path(submission_id)
        path = self.local_dir / self._results_rel(submission_id)
        if not path.exists():
            raise StoreError(f"no results for submission {submission_id!r}")
        return _parse_results_blob(path.read_bytes())

    def count_recent(self, submitter: str, since: float) -> int:
        return sum(1 for e in self._all() if e.submitter == submitter and e.created_at >= since)


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
