"""A test double of `huggingface_hub.HfApi` that records what would be sent, and the Hub's recorded
leaderboard payload (`tests/data/hub/leaderboard.json`). No network.

`HubDouble` is one dataset repo as a folder (create, snapshot, head, commits on a parent: the
Hub's 412 on an older one). `RecordingHfApi` answers with huggingface_hub's own types: `create_commit` returns a real
`CommitInfo` (its `pr_url` as the Hub sets it for `create_pr=True`), `get_dataset_leaderboard` real
`DatasetLeaderboardEntry`s parsed from the payload, as `HfApi.get_dataset_leaderboard` parses the
response of `GET /api/datasets/{repo_id}/leaderboard`, `dataset_info` a real `DatasetInfo` with its
`sha`, `request_space_hardware` a real `SpaceRuntime`. Set `error` to make every call raise it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HUB_DATA = Path(__file__).resolve().parents[1] / "data" / "hub"
LEADERBOARD_PAYLOAD = HUB_DATA / "leaderboard.json"


def leaderboard_payload() -> list[dict[str, Any]]:
    """The Hub's JSON rows of a benchmark's leaderboard (the API's camelCase keys)."""
    return json.loads(LEADERBOARD_PAYLOAD.read_text(encoding="utf-8"))


class RecordingHfApi:
    """Records `create_commit` and `get_dataset_leaderboard` calls (with the files' bytes)."""

    def __init__(self, token: Any = None, *, payload: list[dict[str, Any]] | None = None, sha: str = "e" * 40):
        self.token = token
        self.payload = leaderboard_payload() if payload is None else payload
        self.sha = sha  # the dataset's commit `dataset_info` answers
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.error: BaseException | None = None
        self.pull_requests = 0

    def create_commit(self, repo_id: str, operations, **kwargs):
        from huggingface_hub import CommitInfo

        files = {op.path_in_repo: bytes(op.path_or_fileobj) for op in operations}
        self.calls.append(("create_commit", {"repo_id": repo_id, "files": files, **kwargs}))
        if self.error is not None:
            raise self.error
        self.pull_requests += 1
        number = self.pull_requests
        return CommitInfo(
            commit_url=f"https://huggingface.co/{repo_id}/commit/{'0' * 40}",
            commit_message=kwargs["commit_message"],
            commit_description=kwargs.get("commit_description") or "",
            oid="0" * 40,
            pr_url=f"https://huggingface.co/{repo_id}/discussions/{number}" if kwargs.get("create_pr") else None,
        )

    def get_dataset_leaderboard(self, repo_id: str, **kwargs):
        from huggingface_hub import DatasetLeaderboardEntry

        self.calls.append(("get_dataset_leaderboard", {"repo_id": repo_id, **kwargs}))
        if self.error is not None:
            raise self.error
        return [DatasetLeaderboardEntry(**row) for row in self.payload]

    def dataset_info(self, repo_id: str, **kwargs):
        from huggingface_hub import DatasetInfo

        self.calls.append(("dataset_info", {"repo_id": repo_id, **kwargs}))
        if self.error is not None:
            raise self.error
        return DatasetInfo(id=repo_id, sha=self.sha, private=False, downloads=0, likes=0, tags=[])

    def request_space_hardware(self, repo_id: str, hardware: Any, **kwargs):
        from huggingface_hub import SpaceRuntime

        self.calls.append(("request_space_hardware", {"repo_id": repo_id, "hardware": str(hardware.value), **kwargs}))
        if self.error is not None:
            raise self.error
        return SpaceRuntime({"stage": "BUILDING", "hardware": {"current": None, "requested": str(hardware.value)}})


def http_error(status: int, message: str = "error"):
    """A `HfHubHTTPError` with a response of STATUS, as huggingface_hub raises it."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    request = httpx2.Request("GET", "https://huggingface.co/api/datasets/org/x/leaderboard")
    return HfHubHTTPError(message, response=httpx2.Response(status, request=request))


class HubDouble:
    """`huggingface_hub.HfApi` at its boundary: one remote dataset repo as a folder (created private,
    downloaded as a snapshot, changed by commits of add and delete operations). Each commit moves its
    head; a commit on another parent than the head is refused with the Hub's HTTP 412."""

    instances: list[HubDouble] = []

    def __init__(self, remote: Path, token: str | None = None):
        self.remote, self.token, self.calls = remote, token, []
        self.before_commit = None  # called before a commit lands (a test's other writer)
        HubDouble.instances.append(self)

    def _head_file(self) -> Path:
        return self.remote.parent / f"{self.remote.name}.head"

    def head(self) -> str:
        path = self._head_file()
        return path.read_text() if path.exists() else "0" * 40

    def create_repo(self, repo_id, *, repo_type=None, private=None, exist_ok=False):
        self.calls.append(("create_repo", repo_id, repo_type, private, exist_ok))
        if self.remote.exists() and not exist_ok:
            raise FileExistsError(repo_id)
        self.remote.mkdir(parents=True, exist_ok=True)

    def repo_info(self, repo_id, *, repo_type=None):
        from types import SimpleNamespace

        self.calls.append(("repo_info", repo_id, repo_type))
        return SimpleNamespace(sha=self.head())

    def snapshot_download(self, repo_id, *, repo_type=None, local_dir=None, allow_patterns=None, **kwargs):
        import fnmatch
        import shutil

        self.calls.append(("snapshot_download", repo_id, repo_type, kwargs.get("token")))
        for path in self.remote.rglob("*"):
            rel = path.relative_to(self.remote).as_posix()
            if path.is_file() and (allow_patterns is None or any(fnmatch.fnmatch(rel, p) for p in allow_patterns)):
                target = Path(local_dir) / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        return str(local_dir)

    def create_commit(self, *, repo_id, repo_type, operations, commit_message, parent_commit=None):
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        self.calls.append(("create_commit", repo_id, repo_type, commit_message))
        if self.before_commit is not None:
            hook, self.before_commit = self.before_commit, None
            hook()
        if parent_commit is not None and parent_commit != self.head():
            raise http_error(412, "A commit has happened since. Please refresh and try again.")
        for operation in operations:
            target = self.remote / operation.path_in_repo
            if isinstance(operation, CommitOperationAdd):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(Path(operation.path_or_fileobj).read_bytes())
            elif isinstance(operation, CommitOperationDelete):
                target.unlink()
        self._head_file().write_text(f"{int(self.head(), 16) + 1:040x}")
