"""A full re-score's claim (`leaderboard.checks.full_rescore_run.claim_full`): it holds only an entry a full
re-score would change, leaving its status as it is (a verified entry stays ranked meanwhile), and refuses
any other, saying why, with nothing written. The re-score itself: test_full_rescore_policy.py."""

from __future__ import annotations

import pytest

from leaderboard.checks.full_rescore_run import claim_full
from leaderboard.checks.verification_run import new_run
from leaderboard.store.entries import Entry, StaleEntryError
from leaderboard.store.sqlite_store import SQLiteStore
from leaderboard.store.states import transition


@pytest.fixture
def store(tmp_path):
    return SQLiteStore(tmp_path / "leaderboard.sqlite")


def stored(store, status: str) -> Entry:
    entry = store.add_submission(Entry(model_name=f"Model {status}", model_key=f"model_{status}", submitter="alice"))
    return transition(store, entry, status, status)


def test_a_full_rescore_holds_an_entry_it_would_change_and_leaves_its_status(store):
    entry, run = stored(store, "validated"), new_run()
    held = claim_full(store, entry.submission_id, run)
    assert held.status == "validated" and held.run is not None and held.run.run_id == run.run_id


def test_a_full_rescore_refuses_a_rejected_entry_and_writes_nothing(store):
    entry = stored(store, "rejected")
    with pytest.raises(StaleEntryError, match="it is rejected: nothing to re-score"):
        claim_full(store, entry.submission_id, new_run())
    kept = store.get_entry(entry.submission_id)
    assert kept.status == "rejected" and kept.run is None
