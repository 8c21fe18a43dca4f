"""The verification stage of the state machine: a run claims an entry, checks it, and only its outcome lands.

A verification run (`RunClaim`) first claims the entry in one write of the store (`claim`): a
validated or pending entry becomes pending, "spot check running since ... (attempt n)", held by
the run. A newer run takes the claim over (a job relaunched after its predecessor was killed, or
a maintainer's run beside the Space's): the older run then finds, when it writes, that it no
longer holds the entry, and its outcome is dropped (`StaleEntryError`). So two runs at once for one
entry land exactly one outcome, and a run killed at any point leaves a truthful pending entry that
the next run finishes. The outcome is written in the same step as the account's state is read
(`LeaderboardStore.modify`), so the per-account rule of `leaderboard.checks.full_rescore_policy` holds across processes:
a verdict reads every rejection written before it, and a rejection holds what was verified before it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import JOB_ID_ENV, SpotCheckSetup
from leaderboard.checks.compared_fields import shown_numbers
from leaderboard.checks.full_rescore_policy import FULL_RESCORE_NEXT, held_again_reason, hold_reason, ranked_on_a_sample
from leaderboard.checks.spot_check_run import spot_check, spot_check_failure, submission_seed
from leaderboard.store.image_sources import ImagesRefused
from leaderboard.store.sqlite_store import (
    Entry,
    LeaderboardStore,
    RunClaim,
    StaleEntryError,
    Verification,
    expired_reason,
    name_expired,
)
from leaderboard.store.states import AWAITING, TRANSITIONS, held_by, transition

log = logging.getLogger(__name__)
Say = Callable[[str], None]  # where a run's lines go (print by default)


def new_run(mode: Literal["spot", "full"] = "spot") -> RunClaim:
    """A claim for a run in this process.

    Args:
        mode: `spot` (the spot check) or `full` (a full re-score).

    Returns:
        A new claim saying where it runs (the job's id in a job, else host and pid), for the entry's
        reason and the Space's table.
    """
    job = os.environ.get(JOB_ID_ENV, "")
    where = f"job {job}" if job else f"{socket.gethostname()} pid {os.getpid()}"
    return RunClaim(mode=mode, where=where)


def claim(store: LeaderboardStore, entry: Entry, run: RunClaim, setup: SpotCheckSetup, total: int) -> Entry:
    """validated | pending → pending, held by `run` (taking over any older run's claim); one write.

    Args:
        store: the leaderboard's store.
        entry: the entry to check.
        run: this run's claim.
        setup: the spot check's setup (its limits give the plan).
        total: the submitted images.

    Returns:
        The entry as stored, its reason saying the check runs and its plan.

    Raises:
        StaleEntryError: the entry is neither validated nor pending, or its name expired.
    """
    plan = setup.limits.plan_for(total)
    return claim_for(store, entry, run, f"spot check running since {{started}} ({run.where}): {plan.describe()}")


def claim_for(store: LeaderboardStore, entry: Entry, run: RunClaim, what: str, *, attempt: bool = True) -> Entry:
    """validated | pending → pending, held by `run`, with the reason `what`; one write.

    Args:
        store: the leaderboard's store.
        entry: the entry to claim.
        run: this run's claim.
        what: the reason; its `{started}` becomes the run's start.
        attempt: count one more attempt, and say it in the reason.

    Returns:
        The entry as stored.

    Raises:
        StaleEntryError: the entry is neither validated nor pending, or its name expired.
    """

    def decide(current: Entry, entries: Sequence[Entry]) -> dict[str, Any]:
        if current.status not in ("validated", "pending"):
            raise StaleEntryError(f"submission {current.submission_id[:8]} is {current.status}: nothing to check")
        if name_expired(current, time.time()):  # its name is released: it may not be verified any more
            raise StaleEntryError(f"submission {current.submission_id[:8]}: {expired_reason()}")
        attempts = current.attempts + 1 if attempt else current.attempts
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run.started_at))
        took_over = f"; took over from run {current.run.run_id[:8]}" if current.run is not None else ""
        counted = f" (attempt {attempts})" if attempt else ""
        reason = f"{what.replace('{started}', started)}{counted}{took_over}"
        return {"status": "pending", "reason": reason, "attempts": attempts, "checked_at": time.time(), "run": run}

    return store.modify(entry.submission_id, decide)


def reject(store: LeaderboardStore, entry: Entry, reason: str, run_id: str, **fields: Any) -> Entry:
    """A check (the spot check, the regeneration) rejects `entry`.

    What its account had ranked on a sample is held (`leaderboard.checks.full_rescore_policy`); an entry that changed
    meanwhile is left as it is.

    Args:
        store: the leaderboard's store.
        entry: the entry rejected.
        reason: the rejection's reason.
        run_id: the run that must still hold the entry.
        **fields: more fields of the entry to store with the rejection (`verification`, `checked_at`).

    Returns:
        The rejected entry as stored.

    Raises:
        StaleEntryError: the run no longer holds the entry, or it cannot become rejected.
    """
    rejected = transition(store, entry, "rejected", reason, run_id=run_id, run=None, **fields)
    for other in ranked_on_a_sample(store.list_entries(), rejected):
        try:
            transition(store, other, "held", held_again_reason(rejected))
        except StaleEntryError:
            continue  # it changed meanwhile (withdrawn, or held already): nothing to hold
    return rejected


def end_refused(store: LeaderboardStore, entry: Entry, error: ImagesRefused, run_id: str | None) -> Entry:
    """A submitted image was refused (too large, too small, corrupt): the entry ends rejected with that reason.

    Its images are read at the commit pinned when it was stored, so no later read can succeed; it no longer
    waits (nor spends launches). This is no check's catch: the account's sampled verifications stay.

    Args:
        store: the leaderboard's store.
        entry: the entry.
        error: the refusal, in our words.
        run_id: the run that must still hold the entry (None: any).

    Returns:
        The rejected entry as stored.

    Raises:
        StaleEntryError: it changed meanwhile.
    """
    why = str(error).strip().splitlines()[0] if str(error).strip() else "an image was refused"
    reason = (
        f"images refused: {why}; its images are read at commit {entry.images_revision[:12]} and cannot change: "
        "submit again with images the scorer accepts"
    )
    return transition(store, entry, "rejected", reason, run_id=run_id, run=None, checked_at=time.time())


def _accept(
    store: LeaderboardStore, entry: Entry, results: Sequence[ResultRecord], reason: str, run_id: str, **fields: Any
) -> Entry:
    """The sample agrees: verified, or held when the account was caught or the file has error rows,
    decided on the store's entries in the same write as the verdict."""
    mine = held_by(run_id)

    def decide(current: Entry, entries: Sequence[Entry]) -> dict[str, Any]:
        why = mine(current)
        if why:
            raise StaleEntryError(f"submission {current.submission_id[:8]}: outcome dropped: {why}")
        held = hold_reason(entries, current, results)
        status = "held" if held else "verified"
        if status not in TRANSITIONS[current.status]:
            raise StaleEntryError(f"submission {current.submission_id[:8]} is {current.status}")
        text = f"{reason}; held: {held}; {FULL_RESCORE_NEXT}" if held else reason
        return {"status": status, "reason": text, "run": None, **fields}

    return store.modify(entry.submission_id, decide)


def run_spot_check(
    store: LeaderboardStore, entry: Entry, results: list[ResultRecord], setup: SpotCheckSetup, run: RunClaim
) -> Entry:
    """Spot-check one entry: validated | pending → verified, held, rejected, or pending with why not.

    Args:
        store: the leaderboard's store.
        entry: the entry to check.
        results: its records, in stored order.
        setup: the scorer, prompts, images, secret and limits of this Space.
        run: this run's claim.

    Returns:
        The entry as stored afterwards (pending with the reason when the check could not run).

    Raises:
        StaleEntryError: another run took the entry over (this run's outcome is then not written) or
            it became final meanwhile.
    """
    plan = setup.limits.plan_for(len(results))
    if setup.score is None:
        why = "no scorer here to re-score the images"
    elif entry.config_hash != setup.config.config_hash:
        why = f"it was scored with config {entry.config_hash}; this Space scores with {setup.config.config_hash}"
    else:
        entry = claim(store, entry, run, setup, len(results))
        try:
            split = results[0].model_key  # the images split is the results' model key
            images = setup.open_images(entry.images_repo, entry.images_revision, split)
            seed = submission_seed(entry.submission_id, results, setup.secret)
            outcome = spot_check(results, images, setup.prompts, setup.score, plan=plan, seed=seed)
        except ImagesRefused as refused:
            return end_refused(store, entry, refused, run.run_id)
        except Exception as error:  # noqa: BLE001 - whatever stops the check, the entry waits for the next try
            why = spot_check_failure(error)
        else:
            found = len(outcome.disagreements)
            verification = Verification(
                method="sampled", checked=outcome.checked, disagreements=found, allowed=plan.max_disagreements,
                total=len(results),
            )  # fmt: skip
            fields = {"checked_at": time.time(), "verification": verification}
            if not outcome.accepted:
                reason = (
                    f"spot check: {found} of {outcome.checked} re-scored images disagree, more than the "
                    f"{plan.max_disagreements} of {plan.sample_size} allowed ({'; '.join(outcome.disagreements[:3])})"
                )
                return reject(store, entry, reason, run.run_id, **fields)
            reason = (
                f"spot check: {outcome.checked - found} of {outcome.checked} re-scored images agree "
                f"({found} disagree; at most {plan.max_disagreements} may)"
            )
            return _accept(store, entry, results, reason, run.run_id, **fields)
        reason = f"spot check waits (attempt {entry.attempts}): {why}; it is retried automatically"
        return transition(store, entry, "pending", reason, run_id=run.run_id, run=None, checked_at=time.time())
    attempts = entry.attempts + 1
    reason = f"spot check waits (attempt {attempts}): {why}; it is retried automatically"
    return transition(store, entry, "pending", reason, attempts=attempts, checked_at=time.time())


# -- advancing a submission through the state machine ----------------------------------------------

_busy: set[str] = set()  # entries being advanced in this process (a submit and the rechecker never race)
_busy_lock = threading.Lock()


def _validate(store: LeaderboardStore, entry: Entry, results: list[ResultRecord]) -> Entry:
    """received → validated (its leaderboard row and detail computed from the compared fields) or rejected."""
    try:
        row, detail = shown_numbers(results)
    except ValueError as error:  # e.g. a failed statement without a cause
        return transition(store, entry, "rejected", f"inconsistent results: {error}")
    row["model"] = entry.model_name
    return transition(store, entry, "validated", "validated; its spot check comes next", row=row, detail=detail)


def advance(
    store: LeaderboardStore,
    entry: Entry,
    setup: SpotCheckSetup,
    results: list[ResultRecord] | None = None,
    *,
    check: bool = True,
) -> Entry:
    """Move a stored submission through the state machine as far as it goes now.

    A final entry, or one another thread of this process is advancing, is returned as it is.

    Args:
        store: the leaderboard's store.
        entry: the submission (its id; the stored entry is what is moved).
        setup: the prompts, the scorer and the images the spot check needs.
        results: its stored records, when the caller has them (else read from the store).
        check: False stops after validation (the spot check is left to `recheck`).

    Returns:
        The entry as stored afterwards.
    """
    with _busy_lock:
        if entry.status not in AWAITING or entry.submission_id in _busy:
            return entry
        _busy.add(entry.submission_id)
    try:
        entry = store.get_entry(entry.submission_id)  # the stored state, not a stale copy
        if entry.status not in AWAITING:
            return entry
        if results is None:
            results = store.get_results(entry.submission_id)
        if not results:  # nothing to rank or re-score (only a hand-made entry can be so)
            return transition(store, entry, "rejected", "no results are stored with this submission")
        if entry.status == "received":
            entry = _validate(store, entry, results)
        if check and entry.status in ("validated", "pending"):
            entry = run_spot_check(store, entry, results, setup, new_run())
        return entry
    finally:
        with _busy_lock:
            _busy.discard(entry.submission_id)


def recheck(store: LeaderboardStore, setup: SpotCheckSetup) -> list[Entry]:
    """Advance every submission that is not final, oldest first.

    An entry that cannot be advanced (e.g. the store's upload fails) is logged and left as stored;
    the next recheck tries it again.

    Args:
        store: the leaderboard's store.
        setup: the prompts, the scorer and the images the spot check needs.

    Returns:
        The entries advanced, as stored afterwards.
    """
    done = []
    for entry in awaiting(store.list_entries()):
        try:
            entry = advance(store, entry, setup)
        except Exception:  # noqa: BLE001 - one broken entry must not stop the others
            log.exception("could not advance submission %s", entry.submission_id)
        done.append(entry)
    return done


def awaiting(entries: Iterable[Entry]) -> list[Entry]:
    """The entries that are not final (what `recheck` would advance).

    Args:
        entries: the stored entries.

    Returns:
        Those not final, oldest first.
    """
    return sorted((e for e in entries if e.status in AWAITING), key=lambda e: e.created_at)


def verify_sampled(store: LeaderboardStore, setup: SpotCheckSetup, say: Say = print) -> list[Entry]:
    """Spot-check every waiting submission with this machine's models (`negt2ibench leaderboard verify`).

    Args:
        store: the leaderboard's store.
        setup: the prompts, the scorer and the images the spot check needs.
        say: where each submission's change is written (print).

    Returns:
        The entries spot-checked, as stored afterwards.
    """
    entries_now = store.list_entries()
    before = {entry.submission_id: entry.status for entry in awaiting(entries_now)}
    if not entries_now:
        say(f"nothing to verify: {store!r} holds no submissions yet")
        return []
    if not before:
        say(
            f"nothing to verify: each of the {len(entries_now)} submission(s) in {store!r} is verified, "
            "rejected or held for a full re-score"
        )
        return []
    say(f"spot-checking {len(before)} submission(s) in {store!r} ...")
    entries = recheck(store, setup)
    for entry in entries:
        change = f"{before[entry.submission_id]} → {entry.status}"
        say(f"{entry.submission_id[:8]}  {entry.model_name}: {change}: {entry.reason}")
    waiting = sum(entry.status in AWAITING for entry in entries)
    say(f"{len(entries) - waiting} settled, {waiting} still waiting")
    return entries
