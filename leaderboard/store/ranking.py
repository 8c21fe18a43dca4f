"""Which entries the leaderboard ranks, and the paper's reported rows shown beside them.

Only verified entries are ranked (one per model: its newest verified one); the model detail shows a
model's newest verified entry, else its newest claim (`newest_entries`). The paper's rows are copied
from its Table 3 and were not scored here.
"""

from __future__ import annotations

from collections.abc import Sequence

from leaderboard.store.sqlite_store import Entry
from leaderboard.text.paper_rows import PAPER_CITATION, PAPER_ROWS

__all__ = [
    "PAPER_CITATION",
    "PAPER_ROWS",
    "REPORTED",
    "UNVERIFIED",
    "NOT_REPRODUCED",
    "newest_entries",
    "ranked_entries",
    "verification_label",
]

REPORTED = "reported (paper)"
UNVERIFIED = "claimed, not verified"  # on the plot and in the table of an entry that is not verified
# The mark of an entry whose images the verification job did not show to be the model's own
# (`leaderboard.checks.regeneration_run`): its model cannot be loaded, or no regeneration check ran.
NOT_REPRODUCED = "images not reproduced"


def newest_entries(entries: Sequence[Entry]) -> list[Entry]:
    """Per model, its newest verified entry, else its newest validated or pending one (for the
    model detail view); rejected and withdrawn ones never."""
    chosen: dict[str, Entry] = {}
    for entry in sorted(entries, key=lambda e: e.created_at):
        if entry.status in ("rejected", "withdrawn") or entry.row is None:
            continue
        current = chosen.get(entry.model_key)
        if current is None or entry.status == "verified" or current.status != "verified":
            chosen[entry.model_key] = entry
    return list(chosen.values())


def verification_label(entry: Entry) -> str:
    """The Status cell: "verified (full re-score)", "verified (sampled, n=577, 1 disagreement)", or the status."""
    check = entry.verification
    if entry.status != "verified" or check is None:
        return entry.status
    if check.method == "full":
        return "verified (full re-score)"
    plural = "" if check.disagreements == 1 else "s"
    return f"verified (sampled, n={check.checked}, {check.disagreements} disagreement{plural})"


def ranked_entries(entries: Sequence[Entry]) -> list[Entry]:
    """Per model, its newest *verified* entry: the only submissions the leaderboard ranks."""
    return [entry for entry in newest_entries(entries) if entry.status == "verified"]


def reproduced(entry: Entry) -> bool:
    """Whether the regeneration check found the entry's sampled images the model's own."""
    return entry.regeneration is not None and entry.regeneration.outcome == "reproduced"


def reproduction_mark(entry: Entry) -> str:
    """`images not reproduced` unless the regeneration check found the images the model's own:
    nothing counts as reproduced without the check."""
    return "" if reproduced(entry) else NOT_REPRODUCED


def why_not_reproduced(entry: Entry) -> str:
    """The mark with its reason ("" when reproduced)."""
    check = entry.regeneration
    if check is None:
        return f"{NOT_REPRODUCED}: no regeneration check ran for it"
    return "" if check.outcome == "reproduced" else check.reason
