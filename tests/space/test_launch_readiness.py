"""The readiness check of a launched app (`space.serving.wait_until_answering`, which `serve` and the
tests' `launch_local` use): it waits on the app's state (its /config answering 200), however long a
loaded machine takes, and gives up only at its deadline."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.helpers.net import free_port, wait_until_answering


def test_it_waits_through_answers_that_are_not_ready_yet():
    asked: list[str] = []

    class Starting(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            asked.append(self.path)
            self.send_response(200 if len(asked) > 3 else 503)  # three answers while it starts
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Starting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        wait_until_answering(f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()
    assert asked == ["/config"] * 4


def test_it_gives_up_at_its_deadline_when_nothing_answers():
    with pytest.raises(TimeoutError, match="did not answer within 0 s"):
        wait_until_answering(f"http://127.0.0.1:{free_port()}/", deadline_s=0.0)
