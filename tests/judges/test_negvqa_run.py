"""`negt2ibench negvqa` and `negvqa summary`: records and summary exact against a hand count, resume (after a
kill too), the originals later, error rows, ranks, refusals, and the CLI end to end.

The synthetic NegVQA is tests/helpers/negvqa_helpers.py's six questions (the authors' JSONL, skimage
photographs). Hand-set letter logits per question (the real letter reading behind `TransformersJudge`,
through a model double), worked out by hand:

    question (source, domain)        negated: answer, logits A/B → letter   original: answer, logits → letter
    0 she not wearing (VQAv2, Gen.)  A, (2, 0)      → A right               B, (0, 1) → B right
    1 not in the cup (VQAv2, Gen.)   B, (0, ln 3)   → B right (p_B 0.75)    A, (1, 0) → A right
    2 animal not shown (GQA, Reas.)  B, (1.5, 0)    → A wrong               A, (1, 0) → A right
    3 vehicle not (MMMU, Reas.)      B, (0, 0) tie  → A wrong               A, (1, 0) → A right
    4 man not holding (TextVQA, OCR) B, (0, 2)      → B right               A, (0, 1) → B wrong
    5 not printed (ChartQA, Doc)     B, (3, 0)      → A wrong               A, (2, 0) → A right

Negated 3/6 = 50%; General 2/2 (VQAv2 100%), Reasoning (GQA 0% + MMMU 0%) / 2 = 0%, OCR 100%, Doc &
Chart 0%. Originals 5/6, drop 5/6 − 3/6 = 1/3. A chosen 4/6, A in the key 1/6, bias 3/6. Written
replies (negated): "A", "B.", "B", "(A)", "I think", "text" (option A's text) → letters A, B, B, A,
none, A: two differ from the scores' letter (2: B against A; 4: none against B), one names none.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

import judges.transformers_judge as transformers_judge
from dataset_builder.layout import rank_path
from judges.adapters import JudgeAdapter
from judges.negvqa.data import read_questions
from judges.negvqa.records import NEGVQA_VERSION, read_negvqa_records
from judges.negvqa.runner import run_negvqa
from negt2ibench.cli import main
from negt2ibench.core.errors import UserError
from tests.helpers.launch_helpers import REPO, FakeState, process_env
from tests.helpers.negvqa_helpers import QUESTIONS, FixedLetters, negvqa_rows, write_jsonl

NEGATED = [q[2] for q in QUESTIONS]
ORIGINAL = [q[3] for q in QUESTIONS]
LOGITS = dict(
    zip(NEGATED, [(2.0, 0.0), (0.0, math.log(3)), (1.5, 0.0), (0.0, 0.0), (0.0, 2.0), (3.0, 0.0)], strict=True)
) | dict(zip(ORIGINAL, [(0.0, 1.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (0.0, 1.0), (2.0, 0.0)], strict=True))
REPLIES = dict(zip(NEGATED, ["A", "B.", "B", "(A)", "I think", "text"], strict=True)) | dict.fromkeys(ORIGINAL, "A")


@pytest.fixture
def scripted_in_cli(monkeypatch):
    """The CLI loads weights through load_pretrained: hand it the letter double and a tiny processor."""
    from tests.helpers.negvqa_doubles import scripted_judge

    def fake_load(spec, *, dtype, device, download=False):
        judge = scripted_judge(LOGITS, REPLIES)
        return judge.model, judge.processor

    monkeypatch.setattr(transformers_judge, "require_weights", lambda spec, download=False: None)
    monkeypatch.setattr(transformers_judge, "load_pretrained", fake_load)


def test_records_and_summary_are_exact_against_the_hand_count(tmp_path, scripted_in_cli, capsys):
    data = write_jsonl(tmp_path / "NegVQA-7379.jsonl", negvqa_rows())
    out = tmp_path / "runs" / "qwen.jsonl"
    argv = ["negvqa", "--judge", "qwen2_5_vl_7b", "--data", str(data), "--out", str(out), "--original"]
    assert main([*argv, "--generate", "--device", "cpu", "--batch-size", "4", "--no-progress", "--json"]) == 0
    printed = capsys.readouterr().out.splitlines()
    run = json.loads(printed[-1])
    assert (run["forms"]["negated"]["correct"], run["forms"]["original"]["correct"]) == (3, 5)
    assert run["prompts_asked"] == 12 and run["params"] == "7B" and run["malformed_rows"] == 0

    negated = read_negvqa_records(out)
    original = read_negvqa_records(tmp_path / "runs" / "qwen.original.jsonl")
    assert [r.letter for r in negated] == ["A", "B", "A", "A", "B", "A"]
    assert [r.correct for r in negated] == [True, True, False, False, True, False]
    assert [r.letter for r in original] == ["B", "A", "A", "A", "B", "A"]
    assert [r.correct for r in original] == [True, True, True, True, False, True]
    assert negated[1].probabilities == pytest.approx({"A": 0.25, "B": 0.75}, abs=1e-6)
    assert negated[3].probabilities == pytest.approx({"A": 0.5, "B": 0.5}, abs=1e-6)
    assert [r.generated_letter for r in negated] == ["A", "B", "B", "A", None, "A"]
    assert [r.disagrees for r in negated] == [False, False, True, False, True, False]
    first = negated[0]
    assert (first.judge, first.question_id, first.form, first.source, first.domain) == (
        "qwen2_5_vl_7b",
        "0",
        "negated",
        "VQAv2",
        "General",
    )
    assert first.question == NEGATED[0] and first.choices == ["a tie", "a suit"] and first.answer == "A"
    assert original[0].question == ORIGINAL[0] and original[0].answer == "B" and original[0].form == "original"
    assert {r.evaluator_version for r in negated + original} == {NEGVQA_VERSION}
    assert first.label == f"{data} row 1"

    summary_json = tmp_path / "summary.json"
    plot = tmp_path / "domains.png"
    assert main(["negvqa", "summary", str(out), "--json", str(summary_json), "--plot", str(plot)]) == 0
    text = capsys.readouterr().out
    (summary,) = json.loads(summary_json.read_text())["judges"]
    assert (summary["questions"], summary["correct"], summary["accuracy"]) == (6, 3, 0.5)
    assert {d: b["accuracy"] for d, b in summary["by_domain"].items()} == {
        "General": 1.0,
        "Reasoning": 0.0,
        "OCR": 1.0,
        "Doc & Chart": 0.0,
    }
    assert summary["by_domain"]["Reasoning"]["sources"] == ["GQA", "MMMU"]
    assert {s: (b["questions"], b["correct"]) for s, b in summary["by_source"].items()} == {
        "ChartQA": (1, 0),
        "GQA": (1, 0),
        "MMMU": (1, 0),
        "TextVQA": (1, 1),
        "VQAv2": (2, 2),
    }
    original_block = summary["original"]
    assert original_block["pairs"] == 6 and original_block["accuracy_original"] == pytest.approx(5 / 6)
    assert original_block["drop"] == pytest.approx(1 / 3)
    assert summary["letters"]["chosen"]["A"] == pytest.approx(4 / 6)
    assert summary["letters"]["key"]["A"] == pytest.approx(1 / 6)
    assert summary["letters"]["bias_A"] == pytest.approx(3 / 6)
    assert summary["generated"] == {"replies": 6, "disagree": 2, "disagree_share": pytest.approx(1 / 3), "unread": 1}
    low, high = summary["accuracy_ci"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    assert "qwen2_5_vl_7b (7B): 6 negated questions; accuracy 50.0%" in text
    assert "drop 33.3 points" in text and "| Reasoning | 2 | 2 | 0.0 [0.0, 0.0] | 100.0 | 100.0" in text
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_resume_then_the_originals_later_ask_only_what_is_missing(tmp_path):
    data = read_questions(write_jsonl(tmp_path / "n.jsonl", negvqa_rows()))
    out = tmp_path / "fixed.jsonl"
    answers = {q: (0.9, 0.1) for q in NEGATED + ORIGINAL}
    first = FixedLetters(answers)
    assert run_negvqa(data, first, out_path=out, limit=2, progress=False).forms["negated"].judged == 2
    second = FixedLetters(answers)
    run = run_negvqa(data, second, out_path=out, progress=False)
    assert (run.forms["negated"].already_done, run.forms["negated"].judged) == (2, 4)
    assert [q.split("\n")[0] for q in second.asked] == [f"Question: {q}" for q in NEGATED[2:]]
    third = FixedLetters(answers)
    run = run_negvqa(data, third, out_path=out, original=True, progress=False)
    assert run.forms["negated"].already_done == 6 and run.forms["original"].judged == 6
    assert [q.split("\n")[0] for q in third.asked] == [f"Question: {q}" for q in ORIGINAL]
    recorded = json.loads((tmp_path / "fixed.run.json").read_text())
    fourth = FixedLetters(answers)
    run = run_negvqa(data, fourth, out_path=out, original=True, progress=False)
    assert fourth.asked == [] and run.asked == 0
    assert json.loads((tmp_path / "fixed.run.json").read_text()) == recorded  # kept: this run asked nothing
    assert len(read_negvqa_records(out)) == 6 and len(read_negvqa_records(tmp_path / "fixed.original.jsonl")) == 6


def test_a_bad_image_is_an_error_row_the_summary_counts_apart(tmp_path, capsys):
    rows = negvqa_rows()
    rows[2]["image"] = "bm90IGFuIGltYWdl"  # base64 of "not an image"
    rows[4].pop("negated_answer")  # malformed: left out, listed by row number
    data = read_questions(write_jsonl(tmp_path / "n.jsonl", rows))
    assert data.malformed == [f"{tmp_path / 'n.jsonl'} row 5: no answer (column negated_answer or answer)"]
    out = tmp_path / "r.jsonl"
    run = run_negvqa(data, FixedLetters({q: (0.2, 0.8) for q in NEGATED}), out_path=out, progress=False)
    assert (run.forms["negated"].judged, run.forms["negated"].errors, run.questions) == (4, 1, 5)
    assert run.error_reasons == {"bad image": 1} and len(run.malformed) == 1
    records = read_negvqa_records(out)
    broken = next(r for r in records if r.question_id == "2")
    assert broken.error.startswith("bad image: not a recognised image format") and broken.letter is None
    assert main(["negvqa", "summary", str(out), "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    # Answered: 0 (A, wrong), 1 (B, right), 3 (B, right), 5 (B, right) → 3/4; the error row is left out.
    assert "fixed (1B): 4 negated questions, 1 error rows not scored; accuracy 75.0% (chance: 50%)" in text


def test_ranks_write_their_own_files_and_the_main_process_merges_both_forms(tmp_path, monkeypatch):
    import accelerate

    data = read_questions(write_jsonl(tmp_path / "n.jsonl", negvqa_rows()))
    out = tmp_path / "r.jsonl"
    for rank in (1, 0):  # rank 0 (main) runs last and merges
        monkeypatch.setattr(accelerate, "PartialState", lambda rank=rank: FakeState(rank))
        run = run_negvqa(data, FixedLetters(dict.fromkeys(NEGATED + ORIGINAL, (0.6, 0.4))), out_path=out,
                         original=True, progress=False)  # fmt: skip
        assert (run.rank, run.world) == (rank, 2)
    for path in (out, tmp_path / "r.original.jsonl"):
        assert [len(read_negvqa_records(rank_path(path, rank))) for rank in (0, 1)] == [3, 3]
        assert sorted(r.question_id for r in read_negvqa_records(path)) == [str(i) for i in range(6)]


def test_refusals_before_any_question_is_asked(tmp_path):
    data = read_questions(write_jsonl(tmp_path / "n.jsonl", negvqa_rows()))
    out = tmp_path / "r.jsonl"
    run_negvqa(data, FixedLetters(dict.fromkeys(NEGATED, (0.6, 0.4))), out_path=out, limit=1, progress=False)
    judge = FixedLetters(dict.fromkeys(NEGATED, (0.6, 0.4)))
    with pytest.raises(UserError, match="holds results of evaluator negvqa-1.0.0 config"):
        run_negvqa(data, judge, out_path=out, generate=True, progress=False)  # another configuration
    assert judge.asked == []

    class YesNoOnly(FixedLetters):
        letter_probabilities = JudgeAdapter.letter_probabilities  # the default: a yes/no-only backend

    with pytest.raises(UserError, match="answers yes/no questions only"):
        run_negvqa(data, YesNoOnly({}), out_path=tmp_path / "y.jsonl", progress=False)


KILLED_SCRIPT = """
import sys
from pathlib import Path

from judges.negvqa.data import read_questions
from judges.negvqa.runner import run_negvqa
from tests.helpers.negvqa_helpers import FixedLetters, QUESTIONS

answers = {q[2]: (0.3 + 0.1 * i, 0.7 - 0.1 * i) for i, q in enumerate(QUESTIONS)}
run_negvqa(read_questions(sys.argv[1]), FixedLetters(answers, batch_size=1, hang_after=3), out_path=Path(sys.argv[2]),
           progress=False)
"""


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_file(tmp_path):
    data = write_jsonl(tmp_path / "n.jsonl", negvqa_rows())
    answers = {q[2]: (0.3 + 0.1 * i, 0.7 - 0.1 * i) for i, q in enumerate(QUESTIONS)}
    run_negvqa(read_questions(data), FixedLetters(answers, batch_size=1), out_path=tmp_path / "whole.jsonl",
               progress=False)  # fmt: skip
    whole = (tmp_path / "whole.jsonl").read_bytes()
    script, out = tmp_path / "killed.py", tmp_path / "out.jsonl"
    script.write_text(KILLED_SCRIPT)
    child = subprocess.Popen(
        [sys.executable, str(script), str(data), str(out)],
        cwd=REPO,
        env=process_env() | {"PYTHONPATH": str(REPO)},
        start_new_session=True,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not (out.exists() and out.read_bytes().count(b"\n") >= 3):  # three forwards, then a hang
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child wrote no 3 records"
            time.sleep(0.1)
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        child.stderr.close()
    partial = out.read_bytes()
    assert partial.endswith(b"\n") and whole.startswith(partial) and len(partial.splitlines()) == 3
    again = FixedLetters(answers, batch_size=1)
    run = run_negvqa(read_questions(data), again, out_path=out, progress=False)
    assert run.forms["negated"].already_done == 3 and len(again.asked) == 3
    assert out.read_bytes() == whole


def test_help_and_one_line_usage_errors(capsys, tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as exit_info:
        main(["negvqa", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for phrase in ("Answer with the option's letter", "--original", "--columns", "yuhuizhang/NegVQA", "negvqa summary"):
        assert phrase in text
    data = write_jsonl(tmp_path / "n.jsonl", negvqa_rows())
    # the judge's weights are looked for first, before the data and torch
    assert main(["negvqa", "--judge", "qwen3_vl_8b", "--data", "nowhere.jsonl", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model weights for Qwen/") and "--download" in err and len(err.splitlines()) == 1
    monkeypatch.setattr(transformers_judge, "require_weights", lambda spec, download=False: None)
    for argv, code, message in (
        (["negvqa", "--data", str(data), "--out", "o.jsonl"], 2, "choose a judge: --judge KEY"),
        (["negvqa", "--judge", "qwen3_vl_8b"], 2, "negvqa needs --data and --out"),
        (["negvqa", "--judge", "qwen3vl", "--data", str(data), "--out", "o"], 1, "Did you mean: qwen3_vl_8b"),
        (["negvqa", "--judge", "qwen3_vl_8b", "--data", "nowhere.jsonl", "--out", "o"], 1, "no such data file"),
        (["negvqa", "--judge", "qwen3_vl_8b", "--data", str(data), "--out", "o", "--columns", "x"], 2, "KEY=NAME"),
        (["negvqa", "summary", str(tmp_path / "none.jsonl")], 1, "no such result file"),
    ):
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1, err


def test_summary_of_several_judges_is_one_table_with_their_parameters(tmp_path, capsys):
    data = read_questions(write_jsonl(tmp_path / "n.jsonl", negvqa_rows()))
    run_negvqa(data, FixedLetters(dict.fromkeys(NEGATED, (0.9, 0.1)), key="always_a"), out_path=tmp_path / "a.jsonl",
               progress=False)  # fmt: skip
    run_negvqa(data, FixedLetters(dict.fromkeys(NEGATED, (0.1, 0.9)), key="always_b"), out_path=tmp_path / "b.jsonl",
               progress=False)  # fmt: skip
    assert main(["negvqa", "summary", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--bootstrap", "50"]) == 0
    text = capsys.readouterr().out
    # Key: A once, B five times (questions 1-5). Always A: 1/6; always B: 5/6.
    assert "| always_a | 1B | 6 | 16.7 [" in text and "| always_b | 1B | 6 | **83.3** [" in text
    assert "A chosen in 100.0% of answers, A is right in 16.7% (bias toward A: 83.3 points)" in text
    with pytest.raises(UserError, match="always_a's negated answers are in both"):
        from judges.negvqa.summary import group_by_judge

        records = read_negvqa_records(tmp_path / "a.jsonl")
        group_by_judge([("x.jsonl", records), ("y.jsonl", records)])


def test_original_records_alone_are_refused(tmp_path):
    data = read_questions(write_jsonl(tmp_path / "n.jsonl", negvqa_rows()))
    judge = FixedLetters(dict.fromkeys(NEGATED + ORIGINAL, (0.9, 0.1)))
    run_negvqa(data, judge, out_path=tmp_path / "a.jsonl", original=True, progress=False)
    assert main(["negvqa", "summary", str(tmp_path / "a.original.jsonl")]) == 1


def test_the_cli_lists_malformed_rows_one_line_each_and_goes_on_with_a_real_tiny_model(tmp_path, monkeypatch, capsys):
    from tests.helpers.judge_helpers import tiny_qwen3_vl

    monkeypatch.setattr(transformers_judge, "require_weights", lambda spec, download=False: None)
    monkeypatch.setattr(
        transformers_judge, "load_pretrained", lambda spec, *, dtype, device, download=False: tiny_qwen3_vl()
    )
    rows = negvqa_rows()
    rows[1]["negated_answer"] = "C"
    rows[3]["category"] = ""
    data = write_jsonl(tmp_path / "n.jsonl", rows)
    out = tmp_path / "q3.jsonl"
    argv = ["negvqa", "--judge", "qwen3_vl_8b", "--data", str(data), "--out", str(out), "--device", "cpu"]
    assert main([*argv, "--no-progress", "--limit", "3"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"malformed: {data} row 2: answer 'C' is not A or B",
        f"malformed: {data} row 4: no source (column source or category)",
    ]
    assert "negated: 3 new (" in captured.out and "6 questions" not in captured.out
    assert "3 questions, 2 malformed rows left out" in captured.out
    records = read_negvqa_records(out)
    assert [r.question_id for r in records] == ["0", "2", "4"]  # the first 3 well-formed questions
    assert all(sum(r.probabilities.values()) == pytest.approx(1.0) and r.letter in "AB" for r in records)
    run = json.loads((tmp_path / "q3.run.json").read_text())
    assert run["malformed_rows"] == 2 and run["malformed"][0].endswith("row 2: answer 'C' is not A or B")
