"""A verification run's claim (leaderboard/checks/verification_run.py, leaderboard/store/states.py): only the
run that holds an entry now lands an outcome. A run whose claim another run took over (a relaunched job, a
maintainer's run beside the Space's) can neither reject the entry nor put it back to wait."""

from __future__ import annotations

import os
import socket

import pytest

from leaderboard.checks.check_setup import JOB_ID_ENV
from leaderboard.checks.verification_run import advance, claim_for, new_run, reject
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


def test_a_claim_counts_each_attempt_and_says_it_and_whom_it_took_over(tmp_path):
    """Each claim of an entry is one more spot-check attempt (the `attempts` column of the Space's
    awaiting table), said in the reason with the run it took over; a claim with `attempt=False` (a
    resumed job step) counts nothing and says no attempt."""
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    entry = store.add_submission(Entry(model_name="Model A", model_key="model_a", submitter="alice"))
    entry = transition(store, entry, "validated", "validated")
    assert entry.attempts == 0
    first = new_run()
    entry = claim_for(store, entry, first, "spot check running since {started}")
    assert entry.attempts == 1 and entry.reason.endswith(" (attempt 1)")  # nothing held it: no take-over
    second = new_run()
    entry = claim_for(store, entry, second, "spot check running since {started}")
    assert entry.attempts == 2 and entry.reason.endswith(f" (attempt 2); took over from run {first.run_id[:8]}")
    third = new_run()
    entry = claim_for(store, entry, third, "regeneration since {started}", attempt=False)
    assert entry.attempts == 2 and "(attempt" not in entry.reason
    assert entry.reason.endswith(f"; took over from run {second.run_id[:8]}")


def test_a_claims_reason_says_when_the_run_started_in_utc(tmp_path):
    """`{started}` in the claim's reason is the run's start, as a UTC date and minute."""
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    entry = store.add_submission(Entry(model_name="Model A", model_key="model_a", submitter="alice"))
    entry = transition(store, entry, "validated", "validated")
    run = new_run().model_copy(update={"started_at": 1_767_225_600.0})  # 2026-01-01 00:00 UTC
    claimed = claim_for(store, entry, run, "spot check running since {started} (here)", attempt=False)
    assert claimed.reason == "spot check running since 2026-01-01 00:00 UTC (here)"
    assert claimed.status == "pending" and claimed.run == run


def test_only_a_validated_or_pending_entry_can_be_claimed(tmp_path):
    """A claim takes a validated or pending entry only; any other is refused and left as it is."""
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    entry = store.add_submission(Entry(model_name="Model A", model_key="model_a", submitter="alice"))
    with pytest.raises(StaleEntryError, match="is received: nothing to check"):
        claim_for(store, entry, new_run(), "spot check running since {started}")
    assert store.get_entry(entry.submission_id).run is None


def test_a_run_names_where_it_runs_its_job_or_its_host_and_process(monkeypatch):
    """A claim says where its run is: the job's id when a backend launched it (`JOB_ID_ENV`), else
    this host and process."""
    monkeypatch.setenv(JOB_ID_ENV, "69a1b2c3")
    assert new_run().where == "job 69a1b2c3"
    monkeypatch.delenv(JOB_ID_ENV)
    assert new_run("full").where == f"{socket.gethostname()} pid {os.getpid()}" and new_run("full").mode == "full"


def test_a_submission_stored_without_results_is_rejected_saying_so(tmp_path):
    # only a hand-made entry can be so; nothing is validated or checked (the setup is never reached)
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    entry = store.add_submission(Entry(model_name="Model A", model_key="model_a", submitter="alice"))
    settled = advance(store, entry, None, check=False)  # type: ignore[arg-type]
    assert (settled.status, settled.reason) == ("rejected", "no results are stored with this submission")


def test_awaiting_lists_only_the_entries_not_final_oldest_first():
    from leaderboard.checks.verification_run import awaiting

    def entry(status: str, created_at: float) -> Entry:
        return Entry(model_name=status, model_key=status, submitter="a", status=status, created_at=created_at)

    stored = [
        entry("verified", 1.0),
        entry("pending", 5.0),
        entry("rejected", 2.0),
        entry("received", 4.0),
        entry("withdrawn", 0.5),
        entry("held", 2.5),
        entry("validated", 3.0),
    ]
    # the statuses a recheck advances (docs/leaderboard.md): received, validated, pending; not the final ones
    assert [e.status for e in awaiting(stored)] == ["validated", "received", "pending"]
