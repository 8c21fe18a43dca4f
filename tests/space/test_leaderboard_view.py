"""The Leaderboard tab's frame (`space.leaderboard_view`): it leads with the ranking, ranks only
verified entries, shows each one's interval and marks, and says how it is sorted in one line."""

from __future__ import annotations

import pandas as pd

from leaderboard.ranking import PAPER_ROWS, REPORTED
from leaderboard.store import Entry, Verification
from space.leaderboard_view import (
    HEADLINE_WIDTHS,
    LEADERBOARD_HEADERS,
    RANKING_NOTE,
    awaiting_frame,
    leaderboard_frame,
    status_cell,
)


def entry(name: str, overall: float | None, status: str = "verified", **fields) -> Entry:
    row = {"overall": overall, "polarity_gap": 2.0, "coverage": 100.0, "images": 19_200, "1:0": 10.0}
    return Entry(
        model_name=name,
        model_key=name.lower().replace(" ", "_"),
        submitter="someone",
        status=status,
        row={**row, **fields.pop("row", {})},
        **fields,
    )


def test_verified_rows_are_ranked_best_first_equal_values_share_a_rank_and_the_papers_follow():
    entries = [
        entry("Low", 9.96),  # shown as 10.0, as is Tied: the same rank
        entry("Best", 31.0),
        entry("Tied", 10.04),
        entry("No overall", None),
        entry("Waiting", 90.0, status="pending"),  # never ranked
    ]
    frame = leaderboard_frame(entries)
    assert list(frame["model"]) == ["Best", "Low", "Tied", "No overall", "SD 1.5 + NegationCLIP", "SD 1.5"]
    ranks = [None if pd.isna(rank) else int(rank) for rank in frame["rank"]]
    assert ranks == [1, 2, 2, None, None, None]  # the paper's rows and a row without `overall` are unranked
    assert list(frame["status"][-len(PAPER_ROWS) :]) == [REPORTED] * len(PAPER_ROWS)
    assert list(frame.columns[:6]) == ["rank", "model", "overall", "overall_ci", "polarity_gap", "status"]
    assert list(frame.columns) == LEADERBOARD_HEADERS


def test_the_overall_interval_is_the_stored_one_and_a_dash_without_one():
    with_interval = entry("A", 14.52, detail={"overall_interval": [13.94, 15.06]})
    frame = leaderboard_frame([with_interval, entry("B", 12.0)])
    assert dict(zip(frame["model"], frame["overall_ci"], strict=True)) == {
        "A": "[13.9, 15.1]",
        "B": "–",  # stored before intervals were kept
        "SD 1.5 + NegationCLIP": "–",  # the paper gives none
        "SD 1.5": "–",
    }


def test_the_status_cell_carries_the_verification_and_marks_a_partial_run():
    sampled = Verification(method="sampled", checked=652, disagreements=1, allowed=5, total=19_200)
    assert status_cell(entry("Full", 10.0, verification=sampled)) == "verified (sampled, n=652, 1 disagreement)"
    partial = entry("Part", 10.0, row={"coverage": 0.25, "images": 48})
    assert status_cell(partial) == "verified · † 48 images, 0.2% of the corpus"


def test_the_sort_is_said_in_one_line_and_the_headline_columns_fit_1280_pixels():
    assert "\n" not in RANKING_NOTE and "best first" in RANKING_NOTE and REPORTED in RANKING_NOTE
    headline = sum(int(width.removesuffix("px")) for width in HEADLINE_WIDTHS.values())
    assert list(HEADLINE_WIDTHS) == LEADERBOARD_HEADERS[:6] and headline <= 1000  # the page's own margins: < 280 px


def test_the_awaiting_list_holds_every_unfinished_submission_newest_first():
    entries = [
        entry("Old", 1.0, status="pending", created_at=1.0),
        entry("New", 1.0, status="validated", created_at=2.0),
        entry("Done", 1.0, status="verified", created_at=3.0),
        entry("Refused", 1.0, status="rejected", created_at=4.0),
    ]
    assert list(awaiting_frame(entries)["model"]) == ["New", "Old"]
