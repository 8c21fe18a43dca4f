"""Why images cannot be read, in public sentences of ours (`leaderboard.store.image_sources.unreachable_reason`):
a pending entry's reason and a Gallery caption never carry a library's exception text."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx2
import pytest
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from leaderboard.store.image_sources import (
    HubImages,
    ImagesUnreachable,
    ParquetImages,
    default_resolver,
    hub_commit,
    hub_images,
    images_token,
    unreachable_reason,
)


def hub_error(kind: type[HfHubHTTPError], status: int) -> HfHubHTTPError:
    url = "https://huggingface.co/api/datasets/org/images/revision/main"
    response = httpx2.Response(status, request=httpx2.Request("GET", url))
    return kind(f"{status} Client Error. Repository Not Found for url: {url}. Please make sure ...", response=response)


def test_offline_hub_images_say_so_in_our_words(caplog):
    # the tests run with HF_HUB_OFFLINE=1 (tests/conftest.py): the Hub library refuses the request
    with (
        caplog.at_level(logging.WARNING, logger="leaderboard.store.image_sources"),
        pytest.raises(ImagesUnreachable) as raised,
    ):
        hub_images("org/images", "0" * 40, "toy_model")
    assert str(raised.value) == "images not reachable: the Hub cannot be reached from here (offline mode is on)"
    assert "HF_HUB_OFFLINE" in caplog.text  # the library's own text is in the log, not in the reason


@pytest.mark.parametrize(
    "error, reason",
    [
        (
            OfflineModeIsEnabled("Cannot reach https://x: offline mode is enabled. Unset HF_HUB_OFFLINE"),
            ("images not reachable: the Hub cannot be reached from here (offline mode is on)"),
        ),
        (hub_error(GatedRepoError, 403), "images not reachable: org/images@main is gated: this Space cannot read it"),
        (
            hub_error(RepositoryNotFoundError, 404),
            ("images not reachable: org/images@main does not exist on the Hub, or is private"),
        ),
        (
            hub_error(HfHubHTTPError, 401),
            ("images not reachable: org/images@main is private or needs a token this Space does not have"),
        ),
        (
            hub_error(HfHubHTTPError, 503),
            ("images not reachable: the Hub answered with an error (HTTP 503); it may be down for now"),
        ),
        (
            ConnectionResetError("[Errno 104] Connection reset by peer"),
            ("images not reachable: the Hub could not be reached from here (a network error)"),
        ),
        (
            httpx2.ConnectError("[Errno 111] Connection refused"),
            "images not reachable: the Hub could not be reached from here (a network error)",
        ),
        (
            FileNotFoundError("datasets/org/images/images/x-0.parquet"),
            "images not reachable: a file of org/images@main is missing",
        ),
        (
            ValueError("Parquet magic bytes not found in footer"),
            ("images not reachable: org/images@main could not be read (the error is in the server's log)"),
        ),
        (
            ImagesUnreachable("images not reachable: org/x (offline test)\nsecond line"),
            ("images not reachable: org/x (offline test)"),
        ),
    ],
)
def test_each_error_gets_one_sentence_of_ours(error, reason):
    assert unreachable_reason(error, "org/images@main") == reason


def test_an_unreadable_parquet_file_is_unreachable_in_our_words(tmp_path):
    broken = tmp_path / "images" / "toy_model-00000-of-00001.parquet"
    broken.parent.mkdir()
    broken.write_bytes(b"not a parquet file")
    with pytest.raises(ImagesUnreachable) as raised:
        list(ParquetImages([str(broken)]).images([("color_pos1_neg0_000", 0)]))
    assert (
        str(raised.value)
        == "images not reachable: the images repo could not be read (the error is in the server's log)"
    )


class RecordingFilesystem:
    """An `HfFileSystem` double that records every call made to it (and finds nothing)."""

    made = 0

    def __init__(self):
        type(self).made += 1
        self.calls: list[tuple] = []

    def glob(self, pattern):
        self.calls.append(("glob", pattern))
        return []


TRAVERSALS = [
    ("org/images", "0" * 40, "../../../victim/private-ds/resolve/main/images/x"),
    ("org/images", "0" * 40, "toy_model/../../victim"),
    ("org/images", "0" * 40, "Toy"),
    ("../victim/private-ds", "0" * 40, "toy_model"),
    ("org/images/../../victim", "0" * 40, "toy_model"),
    ("org/images", "main", "toy_model"),  # a branch: it may move after the check
    ("org/images", "refs/pr/1", "toy_model"),
    ("org/images", "0" * 40 + "/../x", "toy_model"),
]


@pytest.mark.parametrize("repo, revision, split", TRAVERSALS)
def test_a_traversal_or_a_moving_revision_never_reaches_the_filesystem(repo, revision, split):
    RecordingFilesystem.made = 0
    opener = HubImages(filesystem=RecordingFilesystem)
    with pytest.raises(ImagesUnreachable, match="^images not reachable: "):
        opener(repo, revision, split)
    assert RecordingFilesystem.made == 0  # refused before any filesystem was made


def test_a_pinned_source_reaches_the_filesystem_inside_its_split():
    made: list[RecordingFilesystem] = []

    def filesystem():
        made.append(RecordingFilesystem())
        return made[-1]

    with pytest.raises(ImagesUnreachable, match="has no images/toy_model-"):
        HubImages(filesystem=filesystem)("org/images", "a" * 40, "toy_model")
    assert made[0].calls == [("glob", f"datasets/org/images@{'a' * 40}/images/toy_model-*.parquet")]


def test_submitted_repos_are_read_without_the_spaces_token(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_the_spaces_write_token")
    monkeypatch.delenv("NEGT2I_IMAGES_TOKEN", raising=False)
    assert images_token() is False
    monkeypatch.setenv("NEGT2I_IMAGES_TOKEN", "hf_read_only")
    assert images_token() == "hf_read_only"


def test_a_cell_path_is_not_followed(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not for strangers")
    (tmp_path / "repo" / "images").mkdir(parents=True)
    table = pa.table(
        {"prompt_id": ["p"], "sample_index": pa.array([0], pa.int32()), "image": [{"bytes": None, "path": str(secret)}]}
    )
    pq.write_table(table, tmp_path / "repo" / "images" / "toy-00000-of-00001.parquet")
    with pytest.raises(ImagesUnreachable, match="no image bytes \\(a path in the cell is not followed\\)"):
        list(ParquetImages.from_folder(tmp_path / "repo", "toy").images([("p", 0)]))


class RevisionApi:
    """`HfApi.dataset_info` double: the commit each revision names now."""

    def __init__(self, commits):
        self.commits, self.asked = commits, []

    def dataset_info(self, repo_id, revision=None):
        from types import SimpleNamespace

        self.asked.append((repo_id, revision))
        if revision not in self.commits:
            raise RevisionNotFoundError("no such revision", response=hub_error(HfHubHTTPError, 404).response)
        return SimpleNamespace(sha=self.commits[revision])


def test_a_revision_is_pinned_to_the_commit_it_names_now():
    api = RevisionApi({"main": "b" * 40})
    assert hub_commit("org/images", "main", api=api) == "b" * 40 and api.asked == [("org/images", "main")]
    with pytest.raises(ImagesUnreachable, match="org/images@v9 has no such revision"):
        hub_commit("org/images", "v9", api=api)
    with pytest.raises(ImagesUnreachable, match="is not a Hub repo id"):
        hub_commit("o" * 300 + "/x", "main", api=api)


def test_a_submitted_branch_is_pinned_to_the_commit_the_hub_answers_through_the_real_client(monkeypatch):
    """`default_resolver(hub_images)` is `hub_commit`, which asks the Hub through huggingface_hub's own
    `HfApi.dataset_info` and its HTTP client; here the client's transport answers with a recorded
    response (tests/data/hub/dataset_info_main.json, shaped as `GET /api/datasets/{repo}/revision/{rev}`
    answers). What is kept is the commit the Hub names, never the branch as typed, and the request is made
    without the Space's token (NEGT2I_IMAGES_TOKEN unset: no Authorization header)."""
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    recorded = json.loads((Path(__file__).resolve().parents[2] / "data" / "hub" / "dataset_info_main.json").read_text())
    asked: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        asked.append(request)
        if request.url.path == "/api/datasets/org/toy-images/revision/main":
            return httpx2.Response(200, json=recorded)
        return httpx2.Response(404, json={"error": "Repository not found"})

    monkeypatch.delenv("NEGT2I_IMAGES_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_the_spaces_write_token")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs offline; this transport is local
    huggingface_hub.set_client_factory(lambda: httpx2.Client(transport=httpx2.MockTransport(answer)))
    try:
        resolve = default_resolver(hub_images)
        assert resolve("org/toy-images", "main") == recorded["sha"]
        with pytest.raises(ImagesUnreachable):
            resolve("org/missing", "main")
    finally:
        huggingface_hub.set_client_factory(_http.default_client_factory)
    assert [r.url.path for r in asked] == [
        "/api/datasets/org/toy-images/revision/main",
        "/api/datasets/org/missing/revision/main",
    ]
    assert all("authorization" not in r.headers for r in asked)
