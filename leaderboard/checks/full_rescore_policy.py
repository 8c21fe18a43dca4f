"""Which submissions may be ranked on a sample, and which are held for a full re-score.

The spot check bounds one try: a file that differs from a re-score on 2% or more of its images
passes a sample with probability at most 1% (`leaderboard.checks.spot_check_policy`). Trying again must not buy
another 1%, so the guarantee is per account (the submitter's identity, `leaderboard.intake.identity`):

- **after a spot check (or the regeneration check, `leaderboard.checks.regeneration_run`) rejects a
  submission, none of that account's submissions is ranked on a sample any more**: a later one
  whose sample agrees is *held* (`hold_reason`), and one already verified by a sample is held
  again (`ranked_on_a_sample`); `negt2ibench leaderboard verify --full` takes held entries first, and
  ranks the project's own numbers, never the submitted ones.
- **a file with error rows is held too**: the report leaves an image that was not scored out of
  every accuracy, so turning failed images into error rows would raise its numbers; the full
  re-score scores every image (it stops until none fails).

Why this gives "a cheat of >= 2% of images is ranked with probability <= 1% per account, however
many times it tries": order the account's spot checks by when they end. While no check of the
account has rejected, each cheating file's check accepts with probability <= 1%, independently
(each sample is drawn from its own seed). The first cheating file checked is either accepted
(probability <= 1%) or rejected, and after a rejection nothing of the account is ranked on a
sample. So some cheating file is ranked on its sample only if the first cheating file checked
is accepted: probability <= 1%, whatever the number of tries, honest files in between, or their
timing. (The decision and the transition are one step under a lock in this process; two processes
writing one store, e.g. the Space and a maintainer's `verify`, should not run at once; the
demotion after a rejection also covers a check that ended in the other one.)

Pure: entries in, reasons out; `leaderboard.intake.submissions` writes the transitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from evaluator.results import ResultRecord, is_error_row
from leaderboard.store.sqlite_store import Entry

FULL_RESCORE_NEXT = (
    "ranked only after a full re-score, which ranks the project's own numbers "
    "(`negt2ibench leaderboard verify --full` takes held submissions first)"
)


def caught_by(entry: Entry) -> str:
    """Which check rejected an entry.

    Args:
        entry: an entry of the store.

    Returns:
        "spot check" or "regeneration check", or "" when no check rejected it (it is not rejected,
        or it was refused at validation, which carries no verification record).
    """
    if entry.status != "rejected":
        return ""
    if entry.regeneration is not None and entry.regeneration.outcome == "rejected":
        return "regeneration check"
    return "spot check" if entry.verification is not None else ""


def check_rejections(entries: Iterable[Entry], submitter: str) -> list[Entry]:
    """The submissions of an account that a check rejected.

    Args:
        entries: the store's entries.
        submitter: the account (`Entry.submitter`).

    Returns:
        SUBMITTER's entries rejected by the spot check (they carry its `verification`) or the
        regeneration check (its `regeneration`), oldest first; a rejection at validation is not one.
    """
    found = [e for e in entries if e.submitter == submitter and caught_by(e)]
    return sorted(found, key=lambda e: e.created_at)


def hold_reason(entries: Iterable[Entry], entry: Entry, results: Sequence[ResultRecord]) -> str:
    """Why an entry whose sample agreed is not ranked on it.

    Args:
        entries: the store's entries.
        entry: the entry whose spot check agreed.
        results: its submitted records.

    Returns:
        Why it is held: its file has error rows, or a spot check rejected another submission of
        its account; "" when it is ranked on its sample.
    """
    errors = sum(map(is_error_row, results))
    if errors:
        return f"{errors} of its {len(results)} images are error rows (not scored), which its numbers leave out"
    rejected = [e for e in check_rejections(entries, entry.submitter) if e.submission_id != entry.submission_id]
    if rejected:
        first = rejected[0]
        return f"a {caught_by(first)} rejected another submission of this account ({first.submission_id[:8]})"
    return ""


def ranked_on_a_sample(entries: Iterable[Entry], rejected: Entry) -> list[Entry]:
    """The entries of a rejected submission's account that are ranked on a sample, to be held.

    Args:
        entries: the store's entries.
        rejected: the submission a spot check just rejected.

    Returns:
        REJECTED's account's entries verified by a sample (not by a full re-score): once it is
        rejected, none of them stays ranked on its sample.
    """
    return [
        e
        for e in entries
        if e.submitter == rejected.submitter
        and e.status == "verified"
        and e.verification is not None
        and e.verification.method == "sampled"
    ]


def held_again_reason(rejected: Entry) -> str:
    """The reason an entry verified by its sample is held again.

    Args:
        rejected: the submission of the same account that a check rejected.

    Returns:
        The entry's new reason, naming REJECTED and what comes next (`FULL_RESCORE_NEXT`).
    """
    return (
        f"held: verified by its sample, but a {caught_by(rejected) or 'spot check'} then rejected another "
        f"submission of this account ({rejected.submission_id[:8]}); {FULL_RESCORE_NEXT}"
    )
