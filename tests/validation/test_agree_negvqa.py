"""`agree --negvqa FILE...`: each judge's NegVQA accuracy beside its Table 2 and Table 10 figures.

The judge `tiny_judge` of test_agree_judges.py (worked by hand there: accuracy whole 8/8, pos 5/8, neg
6/8; flip rate 4/9) also answered NegVQA's six synthetic questions (tests/helpers/negvqa_helpers.py),
always B: the key is A once and B five times, so 5/6 right; its originals (key B, A, A, A, A, A),
answered B too, 1/6 right: drop 1/6 − 5/6 = −2/3 (a judge that ignores the question shows no drop
but a constant letter, which `A chosen` 0% against the key says).
"""

from __future__ import annotations

import pytest

from judges.negvqa.data import read_questions
from judges.negvqa.runner import run_negvqa
from negt2ibench.cli import main
from tests.helpers.negvqa_helpers import QUESTIONS, FixedLetters, negvqa_rows, write_jsonl
from tests.validation.test_agree_judges import agree, judge_records


@pytest.mark.slow
def test_negvqa_beside_table_2_and_table_10(tmp_path, capsys):
    data = read_questions(write_jsonl(tmp_path / "n.jsonl", negvqa_rows()))
    answers = dict.fromkeys([q[2] for q in QUESTIONS] + [q[3] for q in QUESTIONS], (0.1, 0.9))
    negvqa = tmp_path / "tiny.negvqa.jsonl"
    run_negvqa(data, FixedLetters(answers, key="tiny_judge"), out_path=negvqa, original=True, progress=False)
    other = tmp_path / "other.negvqa.jsonl"  # a judge agree was not given: its row has NegVQA only
    run_negvqa(data, FixedLetters(answers, key="other_judge"), out_path=other, progress=False)
    capsys.readouterr()

    runs = {mode: judge_records(mode) for mode in ("whole", "pos", "neg")}
    report, markdown, _ = agree(tmp_path / "study", runs, "--negvqa", str(negvqa), str(other))
    entry = report["probes"]["negvqa"]["tiny_judge"]
    assert (entry["n"], entry["params"]) == (6, "1B")
    assert entry["negvqa"] == pytest.approx(5 / 6) and entry["negvqa_original"] == pytest.approx(1 / 6)
    assert entry["negvqa_drop"] == pytest.approx(-2 / 3) and entry["chosen_A"] == 0.0
    assert (entry["accuracy_whole"], entry["accuracy_pos"], entry["accuracy_neg"]) == (1.0, 5 / 8, 6 / 8)
    assert entry["flip_rate"] == pytest.approx(4 / 9) and entry["complement_error"] == pytest.approx(2.9 / 9)
    assert "accuracy_pos" not in report["probes"]["negvqa"]["other_judge"]
    printed = capsys.readouterr().out
    section = printed[printed.index("## NegVQA beside Tables 2 and 10") :]
    assert "| tiny_judge | 1B | 6 | 83.3 | 16.7 | -66.7 | 0.0 | 100.0 |" in section
    assert "| 62.5 |" in section and "| 44.4 | 0.322 |" in section
    assert "| other_judge | 1B | 6 | 83.3 | – | – | 0.0 | – |" in section
    assert "## NegVQA beside Tables 2 and 10" in markdown


def test_a_bad_negvqa_file_fails_before_any_statistic(tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text("{}\n")
    runs = {"pos": judge_records("pos")}
    from tests.helpers.validation_helpers import study
    from tests.helpers.validation_helpers import write_jsonl as write_records

    annotations, _ = study(tp=2, tn=2, fp=2, fn=2)
    results = write_records(runs["pos"], tmp_path / "pos.jsonl")
    argv = ["agree", "--annotations", str(write_records(annotations, tmp_path / "a.jsonl")), "--results", str(results)]
    assert main([*argv, "--out", str(tmp_path / "out"), "--negvqa", str(tmp_path / "bad.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bad.jsonl:1: not a result record" in err
    assert not (tmp_path / "out").exists()
