"""A verification run's claim (leaderboard/checks/verification_run.py, leaderboard/store/states.py): only the
run that holds an entry now lands an outcome. A run whose claim another run took over (a relaunched job, a
maintainer's run beside the Space's) can neither reject the entry nor put it back to wait."""

from __future__ import annotations

import pytest

from leaderboard.checks.verification_run import claim_for, new_run, reject
from leaderboard.store.entries import Entry, StaleEntryError
from leaderboard.store.sqlite_store import SQLiteStore
from leaderboard.store.states import held_by, transition


@pytest.fixture
def claimed(tmp_path):
    """A validated entry claimed by a first run, then taken over by a second: (store, entry, stale, holder)."""
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    entry = store.add_submission(Entry(model_name="Model A", model_key="model_a", submitter="alice"))
    entry = transition(store, entry, "validated", "validated")
    stale, holder = new_run(), new_run()
    claim_for(store, entry, stale, "spot check running since {started}")
    entry = claim_for(store, entry, holder, "spot check running since {started}")
    assert entry.run is not None and entry.run.run_id == holder.run_id
    return store, entry, stale, holder


def test_a_stale_run_cannot_reject_an_entry_another_run_holds(claimed):
    store, entry, stale, holder = claimed
    with pytest.raises(StaleEntryError, match=f"this run \\({stale.run_id[:8]}\\) no longer holds it"):
        reject(store, entry, "spot check: 9 of 652 disagree", stale.run_id)
    kept = store.get_entry(entry.submission_id)
    assert kept.status == "pending" and kept.run is not None and kept.run.run_id == holder.run_id


def test_a_stale_run_cannot_put_the_entry_back_to_wait(claimed):
    store, entry, stale, holder = claimed
    with pytest.raises(StaleEntryError, match="no longer holds it"):
        transition(store, entry, "pending", "spot check waits: images not reachable", run_id=stale.run_id, run=None)
    kept = store.get_entry(entry.submission_id)
    assert kept.run is not None and kept.run.run_id == holder.run_id  # the holder's claim is not dropped
    assert kept.reason == entry.reason


def test_the_holder_lands_its_outcome(claimed):
    store, entry, stale, holder = claimed
    rejected = reject(store, entry, "spot check: 9 of 652 disagree", holder.run_id)
    assert rejected.status == "rejected" and rejected.run is None


def test_held_by_names_the_run_that_holds_it_and_refuses_every_other(claimed):
    store, entry, stale, holder = claimed
    assert held_by(holder.run_id)(entry) == ""
    assert held_by(stale.run_id)(entry).startswith(f"this run ({stale.run_id[:8]}) no longer holds it")
    released = entry.model_copy(update={"run": None})
    assert "no run does" in held_by(holder.run_id)(released)
