"""The leaderboard store in a Hub dataset repo of results (``NEGT2I_RESULTS_REPO``).

Writes go into a local clone folder (temp file + rename, the entry file last, so it is the commit
point) and are uploaded as one Hub commit; if the upload fails the local files are removed again.
A store made by `HubStore.from_repo` also knows the repo itself (`HubRemote`): each change of an
entry first brings the clone's entries up to the repo's head, decides on them, and commits with
that head as the parent (`create_commit(parent_commit=...)`). The Hub refuses such a commit when
another one landed since (HTTP 412), so a verification job on another machine and the Space never
overwrite each other's change: the loser reads again and decides again.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from evaluator.results import ResultRecord
from leaderboard.store.annotation_store import HubAnnotations
from leaderboard.store.entries import (
    Decide,
    Entry,
    Status,
    StoreError,
    changed,
    check_owner,
    checked,
    parse_results_blob,
    results_blob,
)
from negt2ibench.core.atomic import write_atomic

# upload(local_dir, paths_to_add, paths_to_delete, message): one atomic commit to the repo.
UploadFn = Callable[[Path, list[str], list[str], str], None]
ENTRIES = "submissions/*.json"
RACE_RETRIES = 5  # a change decided again this often when other commits keep landing first


def hub_api(token: str | None = None) -> Any:
    """A `huggingface_hub.HfApi` with `token`, else HF_TOKEN (never printed), else the login's."""
    from huggingface_hub import HfApi

    return HfApi(token=token or os.environ.get("HF_TOKEN"))


def _operations(local_dir: Path, added: list[str], deleted: list[str]) -> list:
    from huggingface_hub import CommitOperation, CommitOperationAdd, CommitOperationDelete

    operations: list[CommitOperation] = [CommitOperationAdd(p, str(local_dir / p)) for p in added]
    operations += [CommitOperationDelete(path_in_repo=p) for p in deleted]
    return operations


def hub_uploader(repo_id: str, token: str | None = None, *, api: Any = None) -> UploadFn:
    """An `UploadFn` that commits to a Hub dataset repo through `api` (default: `hub_api(token)`)."""

    def upload(local_dir: Path, added: list[str], deleted: list[str], message: str) -> None:
        (api or hub_api(token)).create_commit(
            repo_id=repo_id,
            repo_type="dataset",
            operations=_operations(local_dir, added, deleted),
            commit_message=message,
        )

    return upload


class HeadMoved(StoreError):
    """Another commit landed on the repo since its head was read (the Hub's HTTP 412)."""


class HubRemote:
    """The results repo on the Hub through one `HfApi`: its head commit, the entries at a commit, and
    commits on a given parent."""

    def __init__(self, repo_id: str, api: Any):
        self.repo_id, self.api = repo_id, api

    def head(self) -> str:
        return str(self.api.repo_info(self.repo_id, repo_type="dataset").sha)

    def sync(self, local_dir: Path, revision: str, patterns: list[str]) -> None:
        self.api.snapshot_download(
            self.repo_id, repo_type="dataset", revision=revision, allow_patterns=patterns, local_dir=str(local_dir)
        )

    def commit(self, local_dir: Path, added: list[str], deleted: list[str], message: str, parent: str) -> None:
        try:
            self.api.create_commit(
                repo_id=self.repo_id,
                repo_type="dataset",
                operations=_operations(local_dir, added, deleted),
                commit_message=message,
                parent_commit=parent,
            )
        except Exception as error:
            if getattr(getattr(error, "response", None), "status_code", None) == 412:
                raise HeadMoved(f"{self.repo_id}: a commit has happened since {parent[:8]}") from error
            raise


class HubStore(HubAnnotations):
    """Entries as ``submissions/<id>.json``, results as ``results/<id>.jsonl.gz`` and annotations under
    ``annotations/`` in a local clone of a Hub dataset repo; each write is one Hub commit through `upload`."""

    def __init__(self, local_dir: str | Path, upload: UploadFn, *, remote: HubRemote | None = None):
        self.local_dir = Path(local_dir).expanduser()
        (self.local_dir / "submissions").mkdir(parents=True, exist_ok=True)
        (self.local_dir / "results").mkdir(parents=True, exist_ok=True)
        self._upload = upload
        self._remote = remote
        self._lock = threading.Lock()

    @classmethod
    def from_repo(cls, repo_id: str, local_dir: str | Path, token: str | None = None, *, api: Any = None) -> HubStore:
        """Create the private repo if missing, download it into `local_dir` and commit back to it,
        all through one `HfApi` (`api`, default `hub_api(token)`: the token is HF_TOKEN unless given)."""
        api = api or hub_api(token)
        api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
        api.snapshot_download(repo_id, repo_type="dataset", local_dir=str(local_dir))
        return cls(local_dir, hub_uploader(repo_id, api=api), remote=HubRemote(repo_id, api))

    def __repr__(self) -> str:
        return f"HubStore({str(self.local_dir)!r})"

    def locator(self) -> str:
        return f"hub:{self._remote.repo_id}" if self._remote is not None else ""

    def refresh(self) -> None:
        """The clone's entries as the repo's head has them (another machine's job may have written)."""
        if self._remote is not None:
            with self._lock:
                self._remote.sync(self.local_dir, self._remote.head(), [ENTRIES])

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

    def _commit(self, writes: dict[str, bytes], deletes: list[str], message: str, parent: str | None = None) -> None:
        """Write files locally (results first, entries last) and upload them as one commit (on
        `parent` when given); on any failure restore the previous local state."""
        backups: dict[str, bytes | None] = {}
        for rel in list(writes) + deletes:
            path = self.local_dir / rel
            backups[rel] = path.read_bytes() if path.exists() else None
        try:
            for rel in sorted(writes, key=lambda r: r.startswith("submissions/")):
                write_atomic(self.local_dir / rel, writes[rel])
            for rel in deletes:
                (self.local_dir / rel).unlink(missing_ok=True)
            if parent is not None and self._remote is not None:
                self._remote.commit(self.local_dir, list(writes), deletes, message, parent)
            else:
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

    def _head(self) -> str | None:
        """The repo's head with the clone's entries brought to it (None: no remote, the clone is the truth)."""
        if self._remote is None:
            return None
        head = self._remote.head()
        self._remote.sync(self.local_dir, head, [ENTRIES])
        return head

    def add_submission(self, entry: Entry, results: Iterable[ResultRecord] = ()) -> Entry:
        blob = results_blob(results)  # may raise: nothing written yet
        writes = {
            self._results_rel(entry.submission_id): blob,
            f"submissions/{entry.submission_id}.json": entry.model_dump_json(indent=1).encode("utf-8"),
        }
        for _ in range(RACE_RETRIES):
            with self._lock:
                parent = self._head()
                check_owner(self._all(), entry)
                try:
                    self._commit(writes, [], f"submission {entry.model_name} ({entry.status})", parent)
                except HeadMoved:
                    continue
            return entry
        raise StoreError(f"{self.locator()}: other commits kept landing first; try again")

    def modify(self, submission_id: str, decide: Decide) -> Entry:
        for _ in range(RACE_RETRIES):
            with self._lock:
                parent = self._head()
                current = self.get_entry(submission_id)
                entry = changed(current, decide(current, self._all()))
                rel = f"submissions/{submission_id}.json"
                try:
                    message = f"{entry.model_name}: {entry.status}"
                    self._commit({rel: entry.model_dump_json(indent=1).encode("utf-8")}, [], message, parent)
                except HeadMoved:
                    continue
            return entry
        raise StoreError(f"{self.locator()}: other commits kept landing first; try again")

    def update_entry(self, submission_id: str, check=None, **changes: Any) -> Entry:
        return self.modify(submission_id, checked(check, changes))

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
        if not path.exists() and self._remote is not None:  # stored by another machine since the clone
            self._remote.sync(self.local_dir, self._remote.head(), [self._results_rel(submission_id)])
        if not path.exists():
            raise StoreError(f"no results for submission {submission_id!r}")
        return parse_results_blob(path.read_bytes())

    def count_recent(self, submitter: str, since: float) -> int:
        return sum(1 for e in self._all() if e.submitter == submitter and e.created_at >= since)
