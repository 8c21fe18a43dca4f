"""Loopback ports for tests that serve: never a fixed number (parallel runs and a busy 7860 collide)."""

from __future__ import annotations

import socket
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it from its ephemeral range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_local(demo: Any, attempts: int = 3) -> str:
    """Launch a Gradio app on a free loopback port without blocking; its URL.

    Between choosing a port and binding it another process may take it: try a fresh port then.
    """
    for attempt in range(attempts):
        try:
            _, url, _ = demo.launch(
                prevent_thread_lock=True, server_name="127.0.0.1", server_port=free_port(), quiet=True
            )
            return url
        except OSError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
