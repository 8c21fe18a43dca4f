"""Why images cannot be read, in public sentences of ours (`leaderboard.images.unreachable_reason`):
a pending entry's reason and a Gallery caption never carry a library's exception text."""

from __future__ import annotations

import logging

import httpx2
import pytest
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError

from leaderboard.images import ImagesUnreachable, ParquetImages, hub_images, unreachable_reason


def hub_error(kind: type[HfHubHTTPError], status: int) -> HfHubHTTPError:
    url = "https://huggingface.co/api/datasets/org/images/revision/main"
    response = httpx2.Response(status, request=httpx2.Request("GET", url))
    return kind(f"{status} Client Error. Repository Not Found for url: {url}. Please make sure ...", response=response)


def test_offline_hub_images_say_so_in_our_words(caplog):
    # the tests run with HF_HUB_OFFLINE=1 (tests/conftest.py): the Hub library refuses the request
    with caplog.at_level(logging.WARNING, logger="leaderboard.images"), pytest.raises(ImagesUnreachable) as raised:
        hub_images("org/images", "main", "toy_model")
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
