"""`geneval summary` against GenEval's summary_scores.py (djghosh13/geneval@af4902f, evaluation/summary_scores.py).

The reference below is those formulas, line by line, with pandas as GenEval runs them (:22-45), on
files written the way GenEval's evaluate_images.py writes them (:247-258, one JSON object a line,
images in os.listdir order). Completeness, the interval and the OTS diagnostic are this project's.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from evaluator.geneval.prompts import load_geneval_prompts
from evaluator.geneval.summary import order_observations, read_lines, summarize
from negt2ibench.cli import main
from tests.helpers.geneval_helpers import summary_scores_reference

PROMPTS = load_geneval_prompts()


def geneval_line(prompt, sample: int, correct, details: dict | None = None, root: str = "imgs") -> dict:
    """A line as evaluate_images.py:247-258 writes it."""
    return {
        "filename": f"{root}/{prompt.index:05d}/samples/{sample:04d}.png",
        "tag": prompt.tag,
        "prompt": prompt.prompt,
        "correct": correct,
        "reason": "" if correct else "expected something",
        "metadata": json.dumps(dict(prompt.metadata)),
        "details": json.dumps(details or {}),
    }


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def full_run(seed: int = 0, samples: int = 4) -> list[dict]:
    rng = random.Random(seed)
    rates = {"single_object": 0.95, "two_object": 0.6, "counting": 0.4, "colors": 0.8, "position": 0.1}
    lines = [geneval_line(p, s, rng.random() < rates.get(p.tag, 0.2)) for p in PROMPTS for s in range(samples)]
    rng.shuffle(lines)  # GenEval walks os.listdir: any order; the task order is first appearance
    return lines


def test_the_summary_equals_summary_scores_on_a_file_written_as_geneval_writes_it(tmp_path):
    lines = full_run()
    path = write(tmp_path / "results.jsonl", lines)
    reference = summary_scores_reference(path.read_text())
    summary = summarize(read_lines(path), PROMPTS, resamples=200)
    assert (summary.images, summary.prompts) == (reference["images"], reference["prompts"]) == (2212, 553)
    assert summary.images_correct == pytest.approx(reference["images_correct"], abs=1e-12)
    assert summary.prompts_correct == pytest.approx(reference["prompts_correct"], abs=1e-12)
    assert list(summary.tasks) == list(reference["tasks"])  # first-appearance order, as sort=False
    for tag, score in reference["tasks"].items():
        assert summary.tasks[tag]["score"] == pytest.approx(score, abs=1e-12)
    assert summary.overall == pytest.approx(reference["overall"], abs=1e-12)
    assert summary.complete and not summary.missing


def test_a_small_file_by_hand():
    # Two tasks. single_object: prompt 0 images (T, F), prompt 1 (F, F) -> task 1/4; prompts correct:
    # prompt 0 any() = True, prompt 1 False. two_object: prompt 80 (T, T) -> task 1. Images 3/6 = 0.5,
    # prompts 2/3, overall mean(0.25, 1.0) = 0.625.
    p0, p1, p80 = PROMPTS[0], PROMPTS[1], PROMPTS[80]
    rows = [geneval_line(p0, 0, True), geneval_line(p0, 1, False), geneval_line(p1, 0, False)]
    rows += [geneval_line(p1, 1, False), geneval_line(p80, 0, True), geneval_line(p80, 1, True)]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    summary = summarize([*_parse(text)], PROMPTS, samples=2, resamples=0)
    assert summary.images_correct == 0.5 and summary.prompts_correct == pytest.approx(2 / 3)
    assert {tag: t["score"] for tag, t in summary.tasks.items()} == {"single_object": 0.25, "two_object": 1.0}
    assert summary.overall == 0.625
    assert math.isnan(summary.overall_ci[0])  # resamples=0: no interval
    assert not summary.complete and len(summary.missing) == 550  # 553 prompts expected, 3 here


def _parse(text: str):
    from evaluator.geneval.summary import GenEvalLine

    return [GenEvalLine.model_validate_json(line) for line in text.splitlines()]


def test_error_rows_are_left_out_of_the_means_as_pandas_leaves_out_null(tmp_path):
    lines = full_run(1)
    broken = dict(lines[0], correct=None, reason="error: bad image", error="bad image")
    lines[0] = broken
    path = write(tmp_path / "r.jsonl", lines)
    reference = summary_scores_reference(path.read_text())
    summary = summarize(read_lines(path), PROMPTS, resamples=0)
    assert summary.images_correct == pytest.approx(reference["images_correct"], abs=1e-12)
    assert summary.prompts_correct == pytest.approx(reference["prompts_correct"], abs=1e-12)
    assert summary.overall == pytest.approx(reference["overall"], abs=1e-12)
    assert not summary.complete and len(summary.errors) == 1 and "bad image" in summary.errors[0]


def test_completeness_lists_what_is_missing_duplicated_or_foreign(tmp_path):
    lines = full_run(2)
    dropped = lines.pop()
    lines.append(dict(lines[0]))  # a duplicate
    foreign = {"tag": "single_object", "include": [{"class": "unicorn", "count": 1}], "prompt": "a photo of a unicorn"}
    lines.append(dict(lines[1], metadata=json.dumps(foreign)))
    summary = summarize(read_lines(write(tmp_path / "r.jsonl", lines)), PROMPTS, resamples=0)
    assert not summary.complete
    index = int(Path(dropped["filename"]).parent.parent.name)
    sample = int(Path(dropped["filename"]).stem)
    assert summary.missing == [
        {
            "prompt_id": f"geneval_{index:05d}",
            "folder": f"{index:05d}",
            "samples": [sample],
            "prompt": dropped["prompt"],
        }
    ]
    assert len(summary.duplicates) == 1 and "2 lines" in summary.duplicates[0]
    assert len(summary.unexpected) == 1


def test_the_overall_interval_is_seeded_and_brackets_the_score(tmp_path):
    path = write(tmp_path / "r.jsonl", full_run(3))
    first = summarize(read_lines(path), PROMPTS, resamples=300, seed=5)
    again = summarize(read_lines(path), PROMPTS, resamples=300, seed=5)
    other = summarize(read_lines(path), PROMPTS, resamples=300, seed=6)
    assert first.overall_ci == again.overall_ci != other.overall_ci
    assert first.overall_ci[0] < first.overall < first.overall_ci[1]


def boxes_at(first_x: float, second_x: float, dy: float = 0.0) -> tuple[list, list]:
    return [first_x - 5, 45, first_x + 5, 55, 0.9], [second_x - 5, 45 + dy, second_x + 5, 55 + dy, 0.8]


def test_the_order_to_space_diagnostic_comes_from_the_details_boxes():
    two = [p for p in PROMPTS if p.tag == "two_object"][:5]
    lefts = [p for p in PROMPTS if p.tag == "position" and p.metadata["include"][1]["position"][0] == "left of"][:2]
    rights = [p for p in PROMPTS if p.tag == "position" and p.metadata["include"][1]["position"][0] == "right of"][:2]
    rows = []
    # two_object: A = include[0], B = include[1]. 8 images with A left, 1 with A right, 1 stacked (invalid).
    for number in range(10):
        prompt = two[number % 5]
        a, b = (c["class"] for c in prompt.metadata["include"])
        first, second = boxes_at(20, 80) if number < 8 else boxes_at(80, 20) if number == 8 else boxes_at(50, 50, 40)
        rows.append(geneval_line(prompt, number // 5, True, {a: [first], b: [second]}))
    # position: A = include[1] (mentioned first), B = include[0]. "left of" asked 4 times, A left in 3;
    # "right of" asked 4 times, A right in 1.
    for prompts, correct_sides in ((lefts, (True, True, True, False)), (rights, (True, False, False, False))):
        for number, correct in enumerate(correct_sides):
            prompt = prompts[number % 2]
            target, subject = (c["class"] for c in prompt.metadata["include"])
            asked_left = prompt.metadata["include"][1]["position"][0] == "left of"
            a_left = asked_left == correct
            first, second = boxes_at(20, 80) if a_left else boxes_at(80, 20)
            rows.append(geneval_line(prompt, number // 2, correct, {subject: [first], target: [second]}))
    summary = summarize(_parse("".join(json.dumps(r) + "\n" for r in rows)), PROMPTS, resamples=200)
    ots = summary.ots
    # p = 8 / 9 valid = 88.9 %, Hom = |2p - 100| = 77.8; Ali = 3/4 = 75, Rev = 1/4 = 25, delta = 50.
    assert (ots["neutral_images"], ots["neutral_valid"]) == (10, 9)
    assert ots["first_left"] == pytest.approx(800 / 9) and ots["hom"] == pytest.approx(1600 / 9 - 100)
    assert (ots["ali"], ots["rev"], ots["delta"]) == (75.0, 25.0, 50.0)
    assert (ots["ali_valid"], ots["rev_valid"]) == (4, 4)
    assert ots["hom_ci"][0] <= ots["hom"] <= ots["hom_ci"][1]
    assert len(order_observations(_parse(json.dumps(rows[0]) + "\n"))) == 1


def test_the_cli_prints_genevals_report_and_writes_the_json(tmp_path, capsys):
    lines = full_run(4)
    lines.pop(3)
    path = write(tmp_path / "results.jsonl", lines)
    out_json, plot = tmp_path / "summary.json", tmp_path / "ots.png"
    assert (
        main(["geneval", "summary", str(path), "--json", str(out_json), "--plot", str(plot), "--bootstrap", "50"]) == 0
    )
    printed = capsys.readouterr().out
    reference = summary_scores_reference(path.read_text())
    assert f"% correct images: {reference['images_correct']:.2%}" in printed  # summary_scores.py:30's format
    assert f"Overall score (avg. over tasks): {reference['overall']:.5f}" in printed  # :45
    assert "INCOMPLETE: 2211 of 2212 expected images scored" in printed
    data = json.loads(out_json.read_text())
    assert {"overall", "tasks", "images_correct", "prompts_correct", "complete", "overall_ci", "ots"} <= set(data)
    assert data["complete"] is False and data["overall"] == pytest.approx(reference["overall"])
    assert set(data["tasks"]) == set(reference["tasks"]) and len(data["missing"]) == 1
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_summary_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tag": "x"}\n')
    assert main(["geneval", "summary", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl:1:" in err and "Traceback" not in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["geneval", "summary", str(empty)]) == 1
    assert main(["geneval", "summary", str(tmp_path / "none.jsonl")]) == 1
