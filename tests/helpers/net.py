"""Loopback ports for tests that serve: never a fixed number (parallel runs and a busy 7860 collide)."""

from __future__ import annotations

import socket
from typing import Any

# The product's own readiness check (`negt2ibench serve` waits with it too): on the app's state, its
# /config answering, never on gradio's 2.5-second `url_ok`. Importing it loads no gradio.
from space.serving import READY_SECONDS, wait_until_answering

__all__ = ["READY_SECONDS", "free_port", "launch_local", "wait_until_answering"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it from its ephemeral range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_local(demo: Any, attempts: int = 3) -> str:
    """Launch a Gradio app on a free loopback port without blocking, with the Space's own launch
    settings (`space.app.LAUNCH_KWARGS`: its theme, css and upload limit, as `negt2ibench serve`
    launches it); its URL, once the app answers (`wait_until_answering`, not gradio's own check).

    Between choosing a port and binding it another process may take it: try a fresh port then.
    """
    from space.app import LAUNCH_KWARGS

    for attempt in range(attempts):
        try:
            _, url, _ = demo.launch(
                prevent_thread_lock=True,
                server_name="127.0.0.1",
                server_port=free_port(),
                quiet=True,
                _frontend=False,  # skips gradio's 2.5-second `url_ok`: the wait below is on the app's state
                **LAUNCH_KWARGS,
            )
        except OSError:
            if attempt == attempts - 1:
                raise
            continue
        wait_until_answering(url)
        return url
    raise AssertionError("unreachable")


def served_launch_settings(url: str) -> dict[str, Any]:
    """What a running Gradio app says of its launch settings (its /config): theme, css, upload limit."""
    import json
    import urllib.request

    with urllib.request.urlopen(url.rstrip("/") + "/config", timeout=30) as answer:
        config = json.loads(answer.read())
    return {key: config.get(key) for key in ("theme", "css", "max_file_size")}


def space_launch_settings() -> dict[str, Any]:
    """The settings `space.app.LAUNCH_KWARGS` gives a launch, as /config reports them."""
    from leaderboard.intake.submissions import SubmissionLimits
    from space.app import LAUNCH_KWARGS

    assert LAUNCH_KWARGS["max_file_size"] == f"{SubmissionLimits().max_bytes // 2**20}mb"
    return {
        "theme": LAUNCH_KWARGS["theme"].name,
        "css": LAUNCH_KWARGS["css"],
        "max_file_size": SubmissionLimits().max_bytes // 2**20 * 2**20,
    }


CLIENT_READ_SECONDS = 300.0  # one answer's read: gradio_client's 5 s default times out on a loaded machine


def local_client(url: str, **kwargs: Any) -> Any:
    """A gradio_client `Client` of the app at URL whose reads wait for a loaded machine: it fails on an
    answer that is wrong, never on one that is slow (a heartbeat comes every 15 s while a job runs)."""
    from gradio_client import Client

    kwargs.setdefault("verbose", False)
    kwargs.setdefault("httpx_kwargs", {"timeout": CLIENT_READ_SECONDS})
    return Client(url, **kwargs)
