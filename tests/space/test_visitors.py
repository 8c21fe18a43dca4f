"""Who asks (space/visitors.py): the visitor, session and request read from gradio's context of the
event a handler runs in; outside an event each call is its own session and request."""

from __future__ import annotations

import contextvars
from types import SimpleNamespace

from gradio.context import LocalContext

from leaderboard.intake.identity import address_identity
from space.visitors import current_visit


def in_event(request, event_id):
    """current_visit() as a handler of that event sees it (gradio sets both before each handler)."""

    def run():
        LocalContext.request.set(request)
        LocalContext.event_id.set(event_id)
        return current_visit()

    return contextvars.copy_context().run(run)


def browser(address: str, session: str) -> SimpleNamespace:
    return SimpleNamespace(username=None, client=SimpleNamespace(host=address), session_hash=session)


def test_an_events_visitor_is_its_clients_identity_and_its_session_the_page_load():
    visit = in_event(browser("198.51.100.7", "tab-1"), "event-9")
    assert visit == (address_identity("198.51.100.7"), "tab-1", "event-9")


def test_two_tabs_behind_one_address_are_one_visitor_in_two_sessions():
    first, second = in_event(browser("198.51.100.7", "tab-1"), "e1"), in_event(browser("198.51.100.7", "tab-2"), "e2")
    assert first.visitor == second.visitor and first.session != second.session


def test_outside_an_event_each_call_is_its_own_session_and_request():
    first, second = in_event(None, None), in_event(None, None)
    assert first.visitor == second.visitor == "anonymous"
    assert first.session != second.session and first.request != second.request
