"""The app served on this machine (`negt2ibench serve`): started, waited for, announced, stopped.

gradio's own launch asks the new server for its page five times within about 2.5 s
(`gradio.networking.url_ok`) and raises when it has not answered by then, which fails a start on
a loaded machine that would have answered a little later. `serve` launches without that check
(`_frontend=False`, as the tests' `launch_local` does), asks the app's /config itself until it
answers (`wait_until_answering`, on the app's state, not on a clock), then prints its address and
serves until Ctrl-C or SIGTERM (a Space's restart), closing the app then (its temporary folder
removed). Nothing here imports gradio: the app comes in built.
"""

from __future__ import annotations

import ipaddress
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from negt2ibench.core.errors import UserError

READY_SECONDS = 600.0  # how long a launched app may take to answer: minutes on a loaded machine
ASK_EVERY_SECONDS = 0.05  # between two questions to a server that does not answer yet


def wait_until_answering(url: str, deadline_s: float = READY_SECONDS) -> None:
    """Wait until the app at URL answers its /config with 200, asking again until DEADLINE_S has passed.

    Raises:
        TimeoutError: nothing answered 200 within DEADLINE_S.
    """
    ends = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/config", timeout=30) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet, or busy: ask again
        if time.monotonic() > ends:
            raise TimeoutError(f"{url} did not answer within {deadline_s:.0f} s")
        time.sleep(ASK_EVERY_SECONDS)


def local_url(host: str, port: int) -> str:
    """The address a browser on this machine opens for a server bound to HOST:PORT (a wildcard
    address is asked on loopback; an IPv6 address is bracketed)."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return f"http://{host}:{port}/"  # a host name
    if address.is_unspecified:
        return f"http://127.0.0.1:{port}/" if address.version == 4 else f"http://[::1]:{port}/"
    return f"http://[{host}]:{port}/" if address.version == 6 else f"http://{host}:{port}/"


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # the wait below stops the server on it, as on Ctrl-C


def serve(
    app: Any,
    host: str,
    port: int,
    launch_kwargs: Mapping[str, Any],
    say: Callable[[str], None],
    started: float | None = None,
) -> None:
    """Launch APP (a built `space.app.SpaceBlocks`) on HOST:PORT, say its address once it answers,
    and serve until Ctrl-C or SIGTERM; APP is closed when this returns or raises.

    Args:
        app: the app, built, not launched.
        host, port: where it listens.
        launch_kwargs: the app's own launch settings (`space.app.LAUNCH_KWARGS`).
        say: where the progress lines go (the command's stderr).
        started: `time.monotonic()` when the command began, for the time the start took.

    Raises:
        UserError: the app did not answer within `READY_SECONDS`.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    url = local_url(host, port)
    try:
        say(f"starting the server on {url} …")
        app.launch(
            server_name=host,
            server_port=port,
            prevent_thread_lock=True,
            quiet=True,
            _frontend=False,  # no `url_ok`: the wait below is on the app's own answer
            **launch_kwargs,
        )
        try:
            wait_until_answering(url)
        except TimeoutError:
            raise UserError(f"the app did not answer on {url} within {READY_SECONDS:.0f} s") from None
        took = f" after {time.monotonic() - started:.1f} s" if started is not None else ""
        say(f"serving on {url}{took}: open it in a browser; Ctrl-C stops it")
        app.block_thread()  # until Ctrl-C or SIGTERM
    finally:
        app.close()
