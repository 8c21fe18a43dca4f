"""A test double of `huggingface_hub.HfApi` that records what would be sent, and the Hub's recorded
leaderboard payload (`tests/data/hub/leaderboard.json`). No network.

`RecordingHfApi` answers with huggingface_hub's own types: `create_commit` returns a real
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
