"""The regeneration check's outcome, written on the entry: what the pixel plan, the verdict test and the
entry's drift decided (`regeneration_policy.regeneration_verdict`), in words its page shows, with the
pairs; or, for a split plan's job that reached its deadline, the pairs so far (`partial`)."""

from __future__ import annotations

import time
from typing import Any

from leaderboard.checks.regeneration_pairs import Comparer, pair_records
from leaderboard.checks.regeneration_policy import (
    DRIFT_BOUND,
    MEASURE,
    SIGN_ERROR,
    RegenerationPlan,
    SignTest,
    entry_drift,
    regeneration_verdict,
    sign_test,
)
from leaderboard.checks.verification_run import reject
from leaderboard.store.entries import Entry, Regeneration, RunClaim
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.store.states import transition


def model_where(spec: Any) -> str:
    """The model and its commit, as reasons name them.

    Args:
        spec: the regenerated model's spec.

    Returns:
        "ORG/NAME@0123456789ab".
    """
    return f"{spec.hub_id}" + (f"@{spec.revision[:12]}" if spec.revision else "")


def sign_of(comparer: Comparer) -> tuple[SignTest | None, float | None]:
    """The verdict test over the pairs compared so far, and the entry's drift from those whose verdicts agree.

    Args:
        comparer: the check's pairs.

    Returns:
        (the sign test, or None when the regenerations were not scored; the drift, or None when no
        scored pair agrees).
    """
    scored = [kept for kept in comparer.compared() if kept.get("moved", -1) >= 0]
    agreeing = [kept["median"] for kept in scored if kept["moved"] == 0 and kept.get("median") is not None]
    if comparer.score is None and not scored:
        return None, entry_drift(agreeing)
    favourable = sum(kept.get("flip", 0) > 0 for kept in scored)
    unfavourable = sum(kept.get("flip", 0) < 0 for kept in scored)
    return sign_test(favourable, unfavourable), entry_drift(agreeing)


def _reason(verdict: Any, plan: RegenerationPlan, not_own: int, checked: int, where: str, drift: float | None) -> str:
    sign = verdict.sign
    tested = sign.describe() if sign is not None else "not run (no scorer here)"
    stopped = "" if checked >= plan.sample_size else f", stopped after {checked} of {plan.sample_size}"
    pixel = (
        f"{not_own} of {checked} sampled images are not the model's own ({where}, the benchmark's seeds{stopped}), "
        f"more than the {plan.max_not_own} of {plan.sample_size} allowed"
    )
    drifted = f"the entry's drift is CIEDE2000 {drift:.1f}" if drift is not None else "the entry's drift is unknown"
    if verdict.outcome == "rejected":
        parts = [pixel] if verdict.pixel == "rejects" else []
        if sign is not None and sign.rejects:
            parts.append(f"the verdict test rejects: {tested}, at most {SIGN_ERROR:.0%} by chance")
        return f"regeneration check: {'; '.join(parts)}; the pairs are on its page"
    if verdict.outcome == "inconclusive":
        return (
            f"regeneration check inconclusive on this machine: {pixel}, but {drifted}, beyond the bound "
            f"{DRIFT_BOUND:g} its plan holds for; the verdict test: {tested}; it waits for a rerun on another machine"
        )
    return (
        f"images regenerated from {where}: {checked - not_own} of {checked} are the model's own ({MEASURE} at most "
        f"{plan.threshold:g}; at most {plan.max_not_own} may not be; {drifted}); the verdict test: {tested}"
    )


def write_outcome(
    store: LeaderboardStore, entry: Entry, plan: RegenerationPlan, comparer: Comparer, model: Any, run: RunClaim,
    inconclusive_before: int,
) -> Entry:  # fmt: skip
    """Decide and write the check's outcome: rejected, inconclusive (pending), or reproduced (pending).

    Args:
        store: the leaderboard's store.
        entry: the entry, claimed by RUN.
        plan: the check's plan.
        comparer: the compared pairs.
        model: what was regenerated (its `spec` at the resolved commit, and `notes` on how it was found).
        run: this run's claim.
        inconclusive_before: earlier runs whose pixel side was inconclusive.

    Returns:
        The entry as stored.

    Raises:
        StaleEntryError: the run no longer holds the entry.
    """
    compared = comparer.compared()
    not_own, checked = comparer.not_own(), len(compared)
    sign, drift = sign_of(comparer)
    verdict = regeneration_verdict(plan, not_own, sign, drift, inconclusive_before=inconclusive_before)
    reason = _reason(verdict, plan, not_own, checked, model_where(model.spec), drift)
    if model.notes:
        reason += "; " + "; ".join(model.notes)
    record = Regeneration(
        outcome=verdict.outcome, reason=reason, model_id=model.spec.hub_id, commit=model.spec.revision or "",
        checked=checked, not_own=not_own, allowed=plan.max_not_own, threshold=plan.threshold, measure=MEASURE,
        favourable=sign.favourable if sign else 0, unfavourable=sign.unfavourable if sign else 0,
        sign_p=sign.p_value if sign else None, drift=drift,
        inconclusive_runs=inconclusive_before + (verdict.outcome == "inconclusive"),
        pairs=pair_records(compared, comparer.thumbnails),
    )  # fmt: skip
    if verdict.outcome == "rejected":
        return reject(store, entry, reason, run.run_id, regeneration=record, checked_at=time.time())
    after = "; the spot check comes next" if verdict.outcome == "reproduced" else ""
    return transition(store, entry, "pending", reason + after, run_id=run.run_id, run=None, regeneration=record)


def write_partial(
    store: LeaderboardStore, entry: Entry, plan: RegenerationPlan, comparer: Comparer, spec: Any, run: RunClaim
) -> Entry:
    """A split plan's job reached its deadline: keep the pairs so far on the entry; the next job goes on.

    Args:
        store: the leaderboard's store.
        entry: the entry, claimed by RUN.
        plan: the check's plan.
        comparer: the pairs so far.
        spec: the regenerated model.
        run: this run's claim.

    Returns:
        The entry as stored (pending, its regeneration `partial`).

    Raises:
        StaleEntryError: the run no longer holds the entry.
    """
    compared = comparer.compared()
    earlier = entry.regeneration
    reason = (
        f"regeneration check: {len(compared)} of {plan.sample_size} images compared so far ({model_where(spec)}); "
        "its plan is split over several jobs and the next one goes on"
    )
    record = Regeneration(
        outcome="partial", reason=reason, model_id=spec.hub_id, commit=spec.revision or "", checked=len(compared),
        not_own=comparer.not_own(), allowed=plan.max_not_own, threshold=plan.threshold, measure=MEASURE,
        inconclusive_runs=earlier.inconclusive_runs if earlier is not None else 0,
        pairs=pair_records(compared, comparer.thumbnails),
    )  # fmt: skip
    return transition(store, entry, "pending", reason, run_id=run.run_id, run=None, regeneration=record)
