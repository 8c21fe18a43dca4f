"""The Space's pure views, its GPU scorer over a given evaluator, and its temporary folder (no launch)."""

from __future__ import annotations

from dataset_builder.loading import load_prompts
from evaluator.report import LEADERBOARD_COLUMNS, SETTING_LABELS, TABLE3_CATEGORIES, TABLE3_COLUMNS
from leaderboard.store.ranking import PAPER_CITATION, PAPER_ROWS, REPORTED
from leaderboard.store.sqlite_store import Entry
from space.leaderboard_view import LEADERBOARD_TABLE_COLUMNS, PAPER_ROWS_NOTE, leaderboard_table


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
    from space.leaderboard_view import causes_frame, polarity_figure
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
