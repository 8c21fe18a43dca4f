"""The submission state machine's rules: what each status may become, and the one way to change it.

`transition` checks the rule against the entry *as stored when it writes* (`LeaderboardStore.update_entry`),
not a copy read earlier, so two processes moving one entry (the Space and a verification job, or
two jobs) cannot both land a change the machine forbids. A change made by a verification run names
its claim (`RunClaim`, `leaderboard.checks.verification_run`): it lands only while that run still holds the entry.

The setups the machine runs with (`SubmissionLimits`, `SpotCheckSetup`) are the checks':
`leaderboard.checks.check_setup`.
"""

from __future__ import annotations

from typing import Any

from leaderboard.store.entries import AWAITING, Entry, LeaderboardStore, Status

__all__ = ["AWAITING", "TRANSITIONS", "held_by", "transition"]

# What each status may become. rejected and withdrawn are final; verified stays verified (a
# maintainer's full re-score replaces a sampled verification's numbers with the project's own),
# or, verified by a sample, is held when its account is caught; held waits for the full re-score.
# A maintainer may withdraw any entry that is not rejected (its verification job is cancelled).
TRANSITIONS: dict[str, frozenset[str]] = {
    "received": frozenset({"validated", "rejected", "withdrawn"}),
    "validated": frozenset({"verified", "held", "rejected", "pending", "withdrawn"}),
    "pending": frozenset({"verified", "held", "rejected", "pending", "withdrawn"}),
    "verified": frozenset({"verified", "held", "withdrawn"}),
    "held": frozenset({"verified", "withdrawn"}),
    "rejected": frozenset(),
    "withdrawn": frozenset(),
}


def held_by(run_id: str):
    """A check (`LeaderboardStore.update_entry`) that the verification run `run_id` still holds the entry.

    Args:
        run_id: the run's id.

    Returns:
        A function of the stored entry: "" while the run holds it, else why it does not.
    """

    def check(current: Entry) -> str:
        if current.run is None or current.run.run_id != run_id:
            holder = f"run {current.run.run_id[:8]}" if current.run is not None else "no run"
            return f"this run ({run_id[:8]}) no longer holds it ({holder} does; it is {current.status})"
        return ""

    return check


def transition(
    store: LeaderboardStore, entry: Entry, status: Status, reason: str, *, run_id: str | None = None, **fields: Any
) -> Entry:
    """Move ENTRY to STATUS in the store, if the state machine allows it from the status stored now.

    Args:
        store: the leaderboard's store.
        entry: the entry to move (its id; the stored entry is what is checked).
        status: the new status.
        reason: the entry's new reason.
        run_id: when given, the run that must still hold the entry.
        **fields: more fields of the entry to write with it.

    Returns:
        The entry as stored.

    Raises:
        StaleEntryError: the stored status cannot become STATUS, or the run no longer holds it;
            nothing is written.
    """
    claim = held_by(run_id) if run_id is not None else None

    def check(current: Entry) -> str:
        if status not in TRANSITIONS[current.status]:
            return f"it is {current.status}, which cannot become {status}"
        return claim(current) if claim is not None else ""

    return store.update_entry(entry.submission_id, check, status=status, reason=reason, **fields)
