"""Who asks, from inside an event handler: the visitor, its session and the request, for the
Gallery's fair share of image fetches (`space.verified_images.fair_fetch`).

gradio hands each event's `gr.Request` to the thread that runs its handler (`gradio.context.LocalContext`,
set for every event, whether or not the handler takes the request), so the tabs' handlers need not
pass it down. The visitor is `leaderboard.intake.identity.requester` of it (a signed-in user's
account, else the client's hashed address, `X-Forwarded-For` only from trusted proxies): the unit
of fair shares. The session is gradio's session hash (one per page load): only a session's own
newer page cancels its older one, so two tabs, or two people behind one address, share turns but
never cancel each other's pages. The request is the event's id. Outside an event (a script, a test
calling the handlers directly) the visitor is "anonymous" and each call is its own session and
request, so concurrent calls never cancel each other.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from leaderboard.intake.identity import requester

_calls = itertools.count()


class Visit(NamedTuple):
    """The visitor asking (an identity), its session (a page load) and its request (one gradio event)."""

    visitor: str
    session: str
    request: str


def current_visit() -> Visit:
    """The visitor, session and request of the event this thread runs, else "anonymous" and a fresh
    session and request."""
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    event = LocalContext.event_id.get(None)
    call = f"call-{next(_calls)}"
    session = getattr(request, "session_hash", None)
    return Visit(requester(request), str(session) if session else call, str(event) if event else call)
