"""`judges.negvqa.summary` on hand-made records: NegVQA's domain rule (the mean of its datasets), the
paired drop, the letter bias, seeded bootstrap intervals, several judges in one table.

Eight negated answers, worked by hand:

    source    domain     questions  right   accuracy
    VQAv2     General    3          3       1.0
    OKVQA     General    1          0       0.0      General = (1.0 + 0.0) / 2 = 0.5 (not 3/4)
    GQA       Reasoning  2          1       0.5      Reasoning = 0.5
    TextVQA   OCR        2          2       1.0      OCR = 1.0
                         8          6       overall 6/8 = 0.75

Originals for the four VQAv2/OKVQA questions, all right: drop over those pairs = 4/4 − 3/4 = 0.25;
General's drop = mean(VQAv2 1 − 1, OKVQA 1 − 0) = 0.5. Letters: A chosen 5 times of 8 (v1 v3 o1 g1 t2),
A in the key 5 times (v1 v3 g1 g2 t2): no bias. A ninth record, an error row, is counted apart.

A second judge (`biased_records`) with what the first lacks: error rows of two kinds, one among the
originals, a bias toward A and written replies, worked by hand at `test_errors_bias_and_replies_by_hand`.
"""

from __future__ import annotations

import math

import pytest

from judges.negvqa.records import NegVQARecord
from judges.negvqa.summary import (
    PAIRED_NOTE,
    JudgeRecords,
    domain_table,
    group_by_judge,
    headline,
    judges_table,
    summarize_judge,
)
from negt2ibench.core.errors import UserError
from negt2ibench.core.table import to_markdown

# (question id, source, domain, key, chosen)
NEGATED = [
    ("v1", "VQAv2", "General", "A", "A"),
    ("v2", "VQAv2", "General", "B", "B"),
    ("v3", "VQAv2", "General", "A", "A"),
    ("o1", "OKVQA", "General", "B", "A"),
    ("g1", "GQA", "Reasoning", "A", "A"),
    ("g2", "GQA", "Reasoning", "A", "B"),
    ("t1", "TextVQA", "OCR", "B", "B"),
    ("t2", "TextVQA", "OCR", "A", "A"),
]
ORIGINAL = [("v1", "B", "B"), ("v2", "A", "A"), ("v3", "B", "B"), ("o1", "A", "A")]


def record(
    question_id, source, domain, key, chosen, *, form="negated", judge="j", error=None, reply=None
) -> NegVQARecord:
    probabilities = {"A": 0.7, "B": 0.3} if chosen == "A" else {"A": 0.2, "B": 0.8}
    return NegVQARecord(
        judge=judge,
        params="2B",
        question_id=question_id,
        form=form,
        source=source,
        domain=domain,
        question="?",
        choices=["x", "y"],
        answer=key,
        probabilities=None if error else probabilities,
        letter=None if error else chosen,
        correct=None if error else chosen == key,
        generated=None if reply is None else reply[0],
        generated_letter=None if reply is None else reply[1],
        evaluator_version="negvqa-1.0.0",
        config_hash="h",
        error=error,
    )


def judge_records(judge: str = "j") -> JudgeRecords:
    negated = [record(*row, judge=judge) for row in NEGATED]
    negated.append(record("x1", "TextVQA", "OCR", "A", "A", judge=judge, error="bad image: truncated"))
    by_id = {row[0]: row for row in NEGATED}
    original = [
        record(q, by_id[q][1], by_id[q][2], key, chosen, form="original", judge=judge) for q, key, chosen in ORIGINAL
    ]
    return JudgeRecords(judge, "2B", negated, original, ["j.jsonl"])


def test_figures_by_hand():
    summary = summarize_judge(judge_records(), resamples=200, seed=3)
    assert (summary["questions"], summary["correct"], summary["accuracy"]) == (8, 6, 0.75)
    assert summary["error_rows"] == 1 and summary["error_kinds"] == {"bad image": 1}
    assert {d: b["accuracy"] for d, b in summary["by_domain"].items()} == {"General": 0.5, "Reasoning": 0.5, "OCR": 1.0}
    assert summary["by_domain"]["General"] | {"accuracy_ci": None} == {
        "sources": ["OKVQA", "VQAv2"],
        "questions": 4,
        "correct": 3,
        "accuracy": 0.5,
        "accuracy_ci": None,
    }
    assert summary["by_source"]["GQA"]["accuracy"] == 0.5
    original = summary["original"]
    assert (original["pairs"], original["accuracy_original"], original["accuracy_negated"]) == (4, 1.0, 0.75)
    assert original["drop"] == pytest.approx(0.25)
    assert original["by_domain"]["General"]["drop"] == pytest.approx(0.5)
    # Chosen A: v1 v3 o1 g1 t2 = 5 of 8; A in the key: v1 v3 g1 g2 t2 = 5 of 8; bias 0.
    assert summary["letters"] == {"chosen": {"A": 5 / 8, "B": 3 / 8}, "key": {"A": 5 / 8, "B": 3 / 8}, "bias_A": 0.0}
    assert summary["generated"] is None


# (question id, source, domain, key, chosen, written reply and the letter it names)
BIASED = [
    ("q1", "VQAv2", "General", "A", "A", ("A", "A")),
    ("q2", "VQAv2", "General", "B", "A", ("B", "B")),  # the reply names the other letter
    ("q3", "GQA", "Reasoning", "A", "A", ("neither", None)),  # names none
    ("q4", "GQA", "Reasoning", "B", "A", ("A", "A")),
    ("q5", "TextVQA", "OCR", "B", "B", ("B.", "B")),
    ("q6", "TextVQA", "OCR", "A", "A", ("(A)", "A")),
]
BROKEN = [("e1", "bad image: truncated"), ("e2", "bad image: 20x20 px"), ("e3", "forward failed: out of memory")]
# The originals' key is the other letter (the seed's §2.1: the two choices' correctness inverted).
BIASED_ORIGINAL = [("q1", "B", "B"), ("q2", "A", "A"), ("q4", "A", "A"), ("q5", "A", "A")]


def biased_records() -> JudgeRecords:
    negated = [record(*row[:5], judge="k", reply=row[5]) for row in BIASED]
    negated += [record(q, "VQAv2", "General", "A", "A", judge="k", error=why) for q, why in BROKEN]
    by_id = {row[0]: row for row in BIASED}
    original = [
        record(q, by_id[q][1], by_id[q][2], key, chosen, form="original", judge="k")
        for q, key, chosen in BIASED_ORIGINAL
    ]
    original.append(record("q3", "GQA", "Reasoning", "B", "B", form="original", judge="k", error="bad image: cut"))
    return JudgeRecords("k", "2B", negated, original, ["k.jsonl"])


def test_errors_bias_and_replies_by_hand():
    """Six answers, three error rows (two kinds), an original that errored, a bias toward A, replies.

    Error rows: 3 records (not 2 kinds); left out of every figure, the letters' denominators too:
    A chosen q1 q2 q3 q4 q6 = 5 of 6 answers, A in the key q1 q3 q6 = 3 of 6, bias (5 − 3)/6 = 1/3
    (docs/negvqa.md, "The summary": the share of *answers* that are A; an error row has none).
    Originals: q3's errored, so the pairs are q1 q2 q4 q5 ("the questions answered in both forms"):
    negated right q1 q5 = 2/4, originals right 4/4, drop 0.5; the originals chose A for q2 q4 q5 = 3/4
    where their key has A for q2 q4 q5 = 3/4 (no bias); one original error row, counted.
    Replies: 6 written, q2 names another letter and q3 none: 2 disagree, 1 unread (error rows wrote none)."""
    summary = summarize_judge(biased_records(), resamples=0)
    assert (summary["questions"], summary["correct"], summary["accuracy"]) == (6, 4, 4 / 6)
    assert summary["error_rows"] == 3
    assert summary["error_kinds"] == {"bad image": 2, "forward failed": 1}
    letters = summary["letters"]
    assert letters["chosen"] == {"A": 5 / 6, "B": 1 / 6} and letters["key"] == {"A": 3 / 6, "B": 3 / 6}
    assert letters["bias_A"] == pytest.approx(1 / 3)
    original = summary["original"]
    assert (original["pairs"], original["accuracy_original"], original["accuracy_negated"]) == (4, 1.0, 0.5)
    assert original["drop"] == pytest.approx(0.5)
    assert (original["chosen_A"], original["key_A"], original["bias_A"]) == (0.75, 0.75, 0.0)
    assert original["error_rows"] == 1
    assert summary["generated"] == {"replies": 6, "disagree": 2, "disagree_share": pytest.approx(2 / 6), "unread": 1}
    assert "3 error rows not scored" in headline(summary)[0]
    assert "bias toward A: 33.3 points" in headline(summary)[2]


def test_the_originals_letters_are_read_against_their_own_key():
    """A judge that answers A to every original: A chosen 4/4 against 3/4 A in the originals' key."""
    records = biased_records()
    always_a = [r.model_copy(update={"letter": "A", "correct": r.answer == "A"}) for r in records.original]
    original = summarize_judge(JudgeRecords("k", "2B", records.negated, always_a), resamples=0)["original"]
    assert (original["chosen_A"], original["key_A"]) == (1.0, 0.75)
    assert original["bias_A"] == pytest.approx(0.25)


def test_unread_counts_written_replies_only():
    """A record without a written reply (none asked) is neither read nor unread."""
    records = biased_records()
    silent = [r.model_copy(update={"generated": None}) if r.question_id == "q3" else r for r in records.negated]
    generated = summarize_judge(JudgeRecords("k", "2B", silent, []), resamples=0)["generated"]
    assert (generated["replies"], generated["disagree"], generated["unread"]) == (5, 1, 0)


def test_originals_that_all_errored_leave_no_pair():
    records = biased_records()
    broken = [r.model_copy(update={"error": "bad image: x", "letter": None, "correct": None}) for r in records.original]
    original = summarize_judge(JudgeRecords("k", "2B", records.negated, broken), resamples=0)["original"]
    assert original["pairs"] == 0 and math.isnan(original["drop"]) and original["error_rows"] == 5


def test_intervals_are_seeded_hold_the_estimate_and_vanish_without_resamples():
    first = summarize_judge(judge_records(), resamples=300, seed=1)
    again = summarize_judge(judge_records(), resamples=300, seed=1)
    assert first == again  # the same seed: the same draws, the same intervals
    low, high = first["accuracy_ci"]
    assert low <= 0.75 <= high
    assert first["by_domain"]["OCR"]["accuracy_ci"] == (1.0, 1.0)  # both TextVQA answers right in every draw
    low, high = first["original"]["drop_ci"]
    assert 0.0 <= low <= 0.25 <= high <= 1.0
    bare = summarize_judge(judge_records(), resamples=0)
    assert all(math.isnan(bound) for bound in bare["accuracy_ci"] + bare["original"]["drop_ci"])
    assert bare["accuracy"] == first["accuracy"]


def test_two_judges_on_the_same_questions_get_the_same_draws():
    # Same questions, same per-question correctness: the same intervals (the draws depend on n and the seed).
    one = summarize_judge(judge_records("a"), resamples=100, seed=0)
    two = summarize_judge(judge_records("b"), resamples=100, seed=0)
    assert one["accuracy_ci"] == two["accuracy_ci"]


def test_judges_table_one_row_per_judge_with_parameters_and_domains():
    summaries = [summarize_judge(judge_records(name), resamples=0) for name in ("small", "large")]
    table = judges_table(summaries)
    assert [row["judge"] for row in table.rows] == ["small", "large"]
    row = table.rows[0]
    assert (row["params"], row["questions"], row["accuracy"], row["domain:General"]) == ("2B", 8, 75.0, 50.0)
    assert (row["original"], row["drop"], row["chosen_A"], row["key_A"]) == (100.0, 25.0, 62.5, 62.5)
    markdown = to_markdown(table)
    assert markdown.splitlines()[0] == (
        "| Judge | Params | n | NegVQA | General | Reasoning | OCR | Original | Drop | A chosen | A in key |"
    )


def test_written_replies_say_which_letter_they_name_and_none_is_not_another():
    # A judge that writes no letter at all: 8 replies, none names A or B.
    silent = judge_records()
    silent.negated = [
        r.model_copy(update={"generated": "I cannot tell.", "generated_letter": None}) for r in silent.negated
    ]
    lines = headline(summarize_judge(silent, resamples=0))
    assert lines[-1] == "  written replies: 8; 0 name the letter the scores chose, 0 the other letter, 8 no letter"
    # v1 writes the other letter, v2 none, the other six the letter the scores chose.
    mixed = judge_records()
    other = {"A": "B", "B": "A"}
    mixed.negated = [
        r.model_copy(
            update={
                "generated": "…",
                "generated_letter": None
                if r.question_id == "v2"
                else (other[r.letter] if r.question_id == "v1" else r.letter),
            }
        )
        for r in mixed.negated
        if r.error is None
    ]
    assert headline(summarize_judge(mixed, resamples=0))[-1] == (
        "  written replies: 8; 6 name the letter the scores chose, 1 the other letter, 1 no letter"
    )


def test_a_drop_over_pairs_says_so_under_the_one_judge_table_too():
    summary = summarize_judge(judge_records(), resamples=0)
    assert PAIRED_NOTE in domain_table(summary).notes and PAIRED_NOTE in judges_table([summary]).notes[0]
    assert "over those pairs only" in to_markdown(domain_table(summary))
    alone = judge_records()
    alone.original = []
    assert PAIRED_NOTE not in domain_table(summarize_judge(alone, resamples=0)).notes  # no Drop column filled


def test_grouping_reads_forms_by_judge_and_refuses_originals_alone():
    records = judge_records()
    grouped = group_by_judge([("n.jsonl", records.negated), ("o.jsonl", records.original)])
    assert [(g.judge, len(g.negated), len(g.original), g.files) for g in grouped] == [
        ("j", 9, 4, ["n.jsonl", "o.jsonl"])
    ]
    with pytest.raises(UserError, match="only original answers given"):
        group_by_judge([("o.jsonl", records.original)])
