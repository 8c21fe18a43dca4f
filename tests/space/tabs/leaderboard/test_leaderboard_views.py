"""The Leaderboard tab's frame (`space.tabs.leaderboard.leaderboard_views`): it leads with the ranking
(then Table 3's columns), ranks only verified entries, cites the paper's rows, shows each one's
interval and marks, and says how it is sorted in one line; numbers not verified say so where they
are drawn."""

from __future__ import annotations

import pandas as pd

from dataset_builder.loading import load_prompts
from evaluator.report import LEADERBOARD_COLUMNS, SETTING_LABELS, TABLE3_CATEGORIES, TABLE3_COLUMNS
from leaderboard.store.entries import FreshDraw, Regeneration
from leaderboard.store.ranking import PAPER_CITATION, PAPER_ROWS, REPORTED
from leaderboard.store.sqlite_store import Entry, Verification
from space.tabs.leaderboard.leaderboard_views import (
    LEADERBOARD_HEADERS,
    LEADERBOARD_TABLE_COLUMNS,
    PAPER_ROWS_NOTE,
    RANKING_NOTE,
    awaiting_frame,
    column_width,
    csv_frame,
    leaderboard_frame,
    leaderboard_table,
    model_status,
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
        "B": "–",  # an entry stored without an interval
        "SD 1.5 + NegationCLIP": "–",  # the paper gives none
        "SD 1.5": "–",
    }


REPRODUCED = Regeneration(outcome="reproduced", reason="images regenerated from org/m: 114 of 114 ...")


def test_the_status_cell_carries_the_verification_and_marks_a_partial_run():
    sampled = Verification(method="sampled", checked=652, disagreements=1, allowed=5, total=19_200)
    full = entry("Full", 10.0, verification=sampled, regeneration=REPRODUCED)
    assert status_cell(full) == "verified (sampled, n=652, 1 disagreement)"
    partial = entry("Part", 10.0, row={"coverage": 0.25, "images": 48}, regeneration=REPRODUCED)
    assert status_cell(partial) == "verified · † 48 images, 0.2% of the corpus"


def test_an_entry_whose_images_were_not_reproduced_is_ranked_with_the_mark_and_can_be_hidden():
    closed = Regeneration(outcome="not_reproduced", reason="images not reproduced: made by a function")
    entries = [
        entry("Open", 20.0, regeneration=REPRODUCED),
        entry("Closed", 30.0, regeneration=closed),
        entry("Unchecked", 10.0),  # verified with no regeneration check recorded: nothing counts as reproduced
    ]
    frame = leaderboard_frame(entries, include_paper=False)
    assert dict(zip(frame["model"], frame["status"], strict=True)) == {
        "Closed": "verified · images not reproduced",
        "Open": "verified",
        "Unchecked": "verified · images not reproduced",
    }
    assert list(frame["rank"]) == [1, 2, 3]
    shown = leaderboard_frame(entries, include_paper=False, hide_not_reproduced=True)
    assert list(shown["model"]) == ["Open"] and list(shown["rank"]) == [1]
    assert (
        list(leaderboard_frame(entries, hide_not_reproduced=True)["model"])[1:]
        == [p["model"] for p in PAPER_ROWS][::-1]
    )
    csv = csv_frame(frame).to_csv(index=False)
    assert csv.count("images not reproduced") == 2
    detail = model_status(entries[1])
    assert "**images not reproduced**: made by a function" in detail
    assert "no regeneration check ran for it" in model_status(entries[2])
    assert "images not reproduced" not in model_status(entries[0])


def fresh(gap: float, low: float, high: float) -> FreshDraw:
    return FreshDraw(
        seed=4_294_967_301, prompts=432, images=1728, accuracy=20.0 + gap, interval=[17.0 + gap, 23.0 + gap],
        public=20.0, public_interval=[19.0, 21.0], gap=gap, gap_interval=[low, high],
    )  # fmt: skip


def test_a_gap_whose_interval_ends_at_zero_is_not_flagged():
    # the flag says the interval excludes 0: an interval that ends on 0 holds it, on either side
    assert [fresh(g, low, high).flagged for g, low, high in [(2.0, 0.0, 4.0), (-2.0, -4.0, 0.0)]] == [False, False]
    assert [fresh(g, low, high).flagged for g, low, high in [(2.0, 0.01, 4.0), (-2.0, -4.0, -0.01)]] == [True, True]


def test_the_fresh_draw_column_shows_the_accuracy_and_flags_a_gap_whose_interval_excludes_zero():
    entries = [
        entry("Learnt", 20.0, regeneration=REPRODUCED, fresh_draw=fresh(-1.0, -4.2, 2.3)),
        entry("Memorised", 21.0, regeneration=REPRODUCED, fresh_draw=fresh(-9.0, -13.2, -4.9)),
        entry("Not drawn", 22.0),
    ]
    frame = leaderboard_frame(entries, include_paper=False).set_index("model")
    assert frame.loc["Learnt", "fresh"] == 19.0 and frame.loc["Learnt", "fresh_gap"] == "−1.0 [−4.2, +2.3]"
    assert frame.loc["Memorised", "fresh_gap"] == "−9.0 [−13.2, −4.9] ⚑"
    assert pd.isna(frame.loc["Not drawn", "fresh"]) and frame.loc["Not drawn", "fresh_gap"] == "–"
    assert list(frame.columns[4:7]) == ["status", "fresh", "fresh_gap"]  # the model is the index here
    detail = model_status(entries[1])
    assert "**Fresh draw**: 11.0% [8.0, 14.0] on 432 prompts" in detail and "gap −9.0 [−13.2, −4.9] ⚑" in detail
    assert "Seed **4294967301**" in detail and "`negt2ibench build --seed 4294967301`" in detail


def test_the_sort_is_said_in_one_line_and_the_headline_columns_fit_1280_pixels():
    assert "\n" not in RANKING_NOTE and "Ranked by `overall`" in RANKING_NOTE and REPORTED in RANKING_NOTE
    # rank, model, overall, its interval, polarity gap, status: 68 + 230 + 98 + 118 + 148 + 250 = 912 px
    headline = sum(int(column_width(key).removesuffix("px")) for key in LEADERBOARD_HEADERS[:6])
    assert LEADERBOARD_HEADERS[:6] == ["rank", "model", "overall", "overall_ci", "polarity_gap", "status"]
    assert headline == 912 <= 1000  # the page's own margins: < 280 px


def test_the_awaiting_list_holds_every_unfinished_submission_newest_first():
    entries = [
        entry("Old", 1.0, status="pending", created_at=1.0),
        entry("New", 1.0, status="validated", created_at=2.0),
        entry("Done", 1.0, status="verified", created_at=3.0),
        entry("Refused", 1.0, status="rejected", created_at=4.0),
    ]
    assert list(awaiting_frame(entries)["model"]) == ["New", "Old"]


def test_the_leaderboard_leads_with_the_ranking_then_table3s_columns():
    keys = [column.key for column in LEADERBOARD_TABLE_COLUMNS]
    assert keys[:6] == ["rank", "model", "overall", "overall_ci", "polarity_gap", "status"]
    assert keys[6:] == ["fresh", "fresh_gap", *TABLE3_CATEGORIES, *SETTING_LABELS, "coverage", "images", "link"]
    shared = {column.key: column for column in LEADERBOARD_TABLE_COLUMNS if column.key in LEADERBOARD_COLUMNS}
    assert shared == {column.key: column for column in TABLE3_COLUMNS if column.key in LEADERBOARD_COLUMNS}
    row = {key: 1.0 for key in LEADERBOARD_COLUMNS} | {"model": "m", "coverage": 100.0, "extra": "dropped"}
    entry = Entry(model_name="M", model_key="m", submitter="a", created_at=1, status="verified", row=row, link="x")
    table = leaderboard_table([entry])
    assert table.rows[0]["model"] == "M" and "extra" not in table.rows[0]
    assert table.rows[0]["status"] == "verified · images not reproduced"  # no regeneration check ran for it
    assert len(table.rows) == 1 + len(PAPER_ROWS) and table.rows[-1]["coverage"] is None  # the paper gives none
    waiting = entry.model_copy(update={"status": "pending", "submission_id": "0" * 32, "model_key": "w"})
    assert len(leaderboard_table([waiting]).rows) == len(PAPER_ROWS)  # pending: never ranked


def test_paper_rows_cite_the_paper_and_say_they_are_another_corpus_draw():
    paper = [row for row in leaderboard_table([]).rows if row["status"] == REPORTED]
    assert [row["model"] for row in paper] == ["SD 1.5", "SD 1.5 + NegationCLIP"]
    assert {row["link"] for row in paper} == {"Elfatairy, Bravo, Bader, Akata (2026), NegT2IBench, Table 3"}
    assert "http" not in PAPER_CITATION  # no invented address
    assert "paper's own draw of the corpus, not on this corpus (version 2" in PAPER_ROWS_NOTE


def figure_texts(figure) -> list[str]:
    """Every text drawn in a matplotlib figure: its axes' titles and texts."""
    texts = []
    for axis in figure.axes:
        texts += [axis.get_title(), *(text.get_text() for text in axis.texts)]
    return texts


def test_numbers_that_are_not_verified_say_so_where_they_are_drawn():
    """A pending entry whose detail draws its claimed 100%: its plot and its causes table
    say "claimed, not verified" in themselves, for every status but verified."""
    import matplotlib.pyplot as plt

    from evaluator.results import ResultRecord
    from leaderboard.checks.compared_fields import shown_numbers
    from leaderboard.store.ranking import UNVERIFIED
    from space.tabs.leaderboard.leaderboard_views import causes_frame, polarity_figure
    from tests.helpers.space_helpers import result_line

    prompts = load_prompts(None)[::100]
    records = [ResultRecord.model_validate(result_line(p, 0, "toy", passed=True)) for p in prompts]
    records += [ResultRecord.model_validate(result_line(p, 1, "toy", passed=False)) for p in prompts]
    row, detail = shown_numbers(records)
    for status in ("received", "validated", "pending", "held", "verified"):
        entry = Entry(model_name="Claims", model_key="claims", submitter="a", status=status, row=row, detail=detail)
        figure = polarity_figure(entry)
        marked = [text for text in figure_texts(figure) if UNVERIFIED in text]
        causes = causes_frame(entry)
        assert not causes.empty
        if status == "verified":
            assert marked == [] and not causes["category"].str.contains(UNVERIFIED, regex=False).any()
        else:
            assert len(marked) == 2, status  # the title and the watermark across the bars
            assert causes["category"].str.endswith(f"({UNVERIFIED})").all()
        plt.close(figure)
