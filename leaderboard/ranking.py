"""Which entries the leaderboard ranks, and the paper's reported rows shown beside them.

Only verified entries are ranked (one per model: its newest verified one); the model detail shows a
model's newest verified entry, else its newest claim (`newest_entries`). The paper's rows are copied
from its Table 3 and were not scored here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .store import Entry

REPORTED = "reported (paper)"
UNVERIFIED = "claimed, not verified"  # on the plot and in the table of an entry that is not verified
# The mark of an entry whose images the verification job did not show to be the model's own
# (`leaderboard.regen_check`): its model cannot be loaded, or no regeneration check ran.
NOT_REPRODUCED = "images not reproduced"
# The paper's rows cite the paper (no address is published yet, so none is invented).
PAPER_CITATION = "Elfatairy, Bravo, Bader, Akata (2026), NegT2IBench, Table 3"

# Table 3 of the NegT2IBench paper: the rows whose numbers the paper's text gives.
PAPER_ROWS: tuple[dict[str, Any], ...] = (
    {
        "model": "SD 1.5",
        "1:0": 36.1,
        "0:1": 44.1,
        "2:0": 7.3,
        "1:1": 9.7,
        "0:2": 14.0,
        "2:1": 1.8,
        "1:2": 2.4,
        "2:2": 0.5,
        "color": 27.7,
        "material": 22.8,
        "comparative": 8.9,
        "depth": 8.8,
        "directional": 9.6,
        "proximity": 9.1,
        "overall": 14.5,
    },
    {
        "model": "SD 1.5 + NegationCLIP",
        "1:0": 35.7,
        "0:1": 44.3,
        "2:0": 8.8,
        "1:1": 9.6,
        "0:2": 15.5,
        "2:1": 1.8,
        "1:2": 3.0,
        "2:2": 0.5,
        "color": 28.3,
        "material": 23.9,
        "comparative": 8.4,
        "depth": 9.4,
        "directional": 10.0,
        "proximity": 9.2,
        "overall": 14.9,
    },
)


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
