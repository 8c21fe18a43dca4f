"""`negt2ibench agree` end to end: the acceptance case, coverage, errors, outputs, probes."""

from __future__ import annotations

import csv
import json
import math

import pytest

from negt2ibench.cli import main
from tests.helpers.validation_helpers import annotation, corpus, prompts_round_robin, result, study, write_jsonl
from validation.probes import register_probe, unregister_probe


def run_agree(tmp_path, annotations, results_files, *extra: str) -> dict:
    ann = write_jsonl(annotations, tmp_path / "annotations.jsonl")
    paths = []
    for i, records in enumerate(results_files):
        paths.append(str(write_jsonl(records, tmp_path / f"r{i}.jsonl")))
    code = main(["agree", "--annotations", str(ann), "--results", *paths, "--out", str(tmp_path / "out"), *extra])
    assert code == 0
    return json.loads((tmp_path / "out" / "agreement.json").read_text())


@pytest.mark.slow
def test_acceptance_600_images_known_confusion_matrix(tmp_path, capsys):
    # 600 images: TP 180, TN 330, FP 40, FN 50 (majority label of three annotators × evaluator verdict).
    # Worked out on paper:
    #   p_o = (180 + 330) / 600 = 0.85
    #   people accept 180 + 50 = 230, the evaluator passes 180 + 40 = 220
    #   p_e = (230·220 + 370·380) / 600² = 191,200 / 360,000 = 0.531111…
    #   κ = (0.85 − 0.531111) / (1 − 0.531111) = 114,800 / 168,800 = 0.680095
    #   precision = 180 / 220 = 0.818182, recall = 180 / 230 = 0.782609, called correct = 220 / 600 = 0.366667
    annotations, results = study(tp=180, tn=330, fp=40, fn=50)
    report = run_agree(tmp_path, annotations, [results], "--bootstrap", "200")
    block = report["evaluators"]["negt2ibench/current"]
    assert report["n_images"] == 600
    assert (block["n"], block["tp"], block["tn"], block["fp"], block["fn"]) == (600, 180, 330, 40, 50)
    assert round(block["accuracy"], 4) == 0.85
    assert round(block["kappa"], 4) == 0.6801
    assert round(block["precision"], 4) == 0.8182
    assert round(block["recall"], 4) == 0.7826
    assert round(block["called_correct"], 4) == 0.3667
    low, high = block["kappa_ci"]
    assert low < block["kappa"] < high and high - low < 0.2
    # The majority passes 230 of 600; the main table is printed with the paper's percentages.
    assert round(report["human"]["majority_pass"], 4) == round(230 / 600, 4)
    printed = capsys.readouterr().out
    assert "| negt2ibench/current | 600 | 85.0 [" in printed
    assert "| 68.0 [" in printed


def test_by_setting_by_category_and_elements_partition_the_images(tmp_path):
    annotations, results = study(tp=40, tn=40, fp=8, fn=8)
    report = run_agree(tmp_path, annotations, [results], "--bootstrap", "0")
    block = report["evaluators"]["negt2ibench/current"]
    assert sum(cell["n"] for cell in block["by_setting"].values()) == 96
    assert sum(cell["n"] for cell in block["by_category"].values()) == 96
    assert list(block["by_setting"]) == ["1:0", "0:1", "2:0", "1:1", "0:2", "2:1", "1:2", "2:2"]
    assert sum(block["by_setting"][s]["tp"] for s in block["by_setting"]) == 40
    assert "kappa_ci" not in block  # --bootstrap 0: no intervals
    elements = block["elements"]
    assert elements["all"]["n"] == elements["positive"]["n"] + elements["negated"]["n"]
    expected_elements = sum(len(p.objects) + len(p.statements) for p in prompts_round_robin(96))
    assert elements["all"]["n"] == expected_elements
    assert report["human"]["elements"]["all"]["n"] == expected_elements


def test_small_case_worked_by_hand(tmp_path):
    # Two images of one-statement prompts, three annotators each.
    #   color_pos1_neg0_000 "an orange dog": ann+bob say yes/yes, cat says no to "is the dog orange?"
    #     → passes (1, 1, 0): majority accepts; scores (1, 1, 0.5) → human score 5/6
    #   color_pos0_neg1_000 (negated): all three answer "yes" to the affirmative question → all fail;
    #     scores (0.5, 0.5, 0.5) → human score 0.5
    # Evaluator: passes the first (score 1.0), fails the second (score 0.5).
    first, second = corpus()["color_pos1_neg0_000"], corpus()["color_pos0_neg1_000"]
    annotations = [
        annotation(first, "ann", True),
        annotation(first, "bob", True),
        annotation(first, "cat", False),
        *(annotation(second, name, False) for name in ("ann", "bob", "cat")),
    ]
    results = [result(first, True, score=1.0), result(second, False, score=0.5)]
    report = run_agree(tmp_path, annotations, [results], "--bootstrap", "0")
    block = report["evaluators"]["negt2ibench/current"]
    assert (block["tp"], block["tn"], block["fp"], block["fn"]) == (1, 1, 0, 0)
    assert block["accuracy"] == 1.0 and block["kappa"] == 1.0
    assert block["kendall_tau"] == 1.0 and block["pair_accuracy"] == 1.0
    # Elements: image 1 has object dog (yes×3) and positive statement (yes, yes, no → majority yes);
    # image 2 has dog (yes×3) and a negated statement (unsatisfied ×3). Evaluator: both objects present,
    # statement 1 satisfied, statement 2 not. So all 4 elements right; negated block: 1 element, unsatisfied.
    elements = block["elements"]
    assert elements["all"]["n"] == 4 and elements["all"]["accuracy"] == 1.0
    assert elements["negated"]["n"] == 1 and elements["negated"]["unsatisfied"] == 1.0
    assert elements["negated"]["satisfied"] is None  # no satisfied negated element: undefined → null
    human = report["human"]
    assert human["n"] == 2 and human["majority_pass"] == 0.5
    assert human["elements"]["all"]["unanimous"] == 0.75  # 3 of 4 elements answered alike


def test_coverage_counts_unlabelled_and_error_rows_never_mixes_them_in(tmp_path, capsys):
    annotations, results = study(tp=10, tn=10, fp=0, fn=0)
    extra = prompts_round_robin(30)[20:30]
    # Two more images: one annotated by two people only, one not annotated at all; plus one error row.
    annotations += [annotation(extra[0], "ann", True), annotation(extra[0], "bob", True)]
    results += [result(extra[0], True), result(extra[1], True), result(extra[2], False, error="unreadable")]
    report = run_agree(tmp_path, annotations, [results], "--bootstrap", "0")
    block = report["evaluators"]["negt2ibench/current"]
    assert block["n"] == 20
    assert block["coverage"] == {
        "records": 23,
        "used": 20,
        "error_rows": 1,
        "not_annotated": 1,
        "under_annotated": 1,
        "labelled_not_scored": 0,
    }
    assert report["human"]["coverage"]["under_annotated_images"] == 1
    out = capsys.readouterr().out
    assert "left out 1 error rows, 1 not annotated, 1 under annotated" in out
    assert "1 annotated image(s) have fewer than 3 annotators" in out


def test_evaluator_names_from_records_disambiguated_by_file_stem(tmp_path):
    annotations, results = study(tp=5, tn=5, fp=1, fn=1)
    judge = [r.model_copy(update={"evaluator": "qwen3_vl_8b/pos"}) for r in results]
    report = run_agree(tmp_path, annotations, [results, results, judge], "--bootstrap", "0")
    assert list(report["evaluators"]) == ["negt2ibench/current (r0)", "negt2ibench/current (r1)", "qwen3_vl_8b/pos"]


def test_outputs_markdown_and_csv(tmp_path):
    annotations, results = study(tp=12, tn=12, fp=3, fn=3)
    run_agree(tmp_path, annotations, [results], "--bootstrap", "50")
    out = tmp_path / "out"
    names = {p.name for p in out.iterdir()}
    assert names == {
        "agreement.json",
        "agreement.md",
        "agreement.csv",
        "by_setting.csv",
        "by_category.csv",
        "elements.csv",
        "human.csv",
        "coverage.csv",
    } | {f"table{n}.{ext}" for n in (2, 5, 6, 7, 9, 10, 11, 12, 13) for ext in ("md", "csv", "json")}
    markdown = (out / "agreement.md").read_text()
    for heading in ("## Table 5: agreement between annotators", "## Table 11: Kendall τ by polarity setting"):
        assert heading in markdown
        number = heading.split()[2].rstrip(":")
        assert (out / f"table{number}.md").read_text().strip() in markdown
    rows = list(csv.DictReader((out / "agreement.csv").open()))
    assert rows[0]["evaluator"] == "negt2ibench/current" and rows[0]["tp"] == "12"
    assert float(rows[0]["accuracy"]) == pytest.approx(0.8)
    assert float(rows[0]["kappa_ci_low"]) <= float(rows[0]["kappa"]) <= float(rows[0]["kappa_ci_high"])
    assert rows[-1]["evaluator"] == "H. inter-annotator"


def _error(tmp_path, capsys, annotations, results) -> str:
    ann = write_jsonl(annotations, tmp_path / "a.jsonl")
    res = write_jsonl(results, tmp_path / "r.jsonl")
    assert main(["agree", "--annotations", str(ann), "--results", str(res), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    return err


def test_duplicate_annotator_lines_are_an_error(tmp_path, capsys):
    annotations, results = study(tp=2, tn=2, fp=0, fn=0)
    message = _error(tmp_path, capsys, annotations + [annotations[0]], results)
    assert message.startswith("error: ") and "duplicate annotator line" in message and "line 1" in message


@pytest.mark.slow
def test_unknown_prompt_id_in_annotations_is_an_error(tmp_path, capsys):
    annotations, results = study(tp=2, tn=2, fp=0, fn=0)
    bad = annotations[0].model_copy(update={"prompt_id": "color_pos1_neg0_999"})
    message = _error(tmp_path, capsys, [bad] + annotations[1:], results)
    assert "unknown prompt id 'color_pos1_neg0_999'" in message


def test_results_of_another_corpus_version_are_an_error(tmp_path, capsys):
    annotations, results = study(tp=2, tn=2, fp=0, fn=0)
    other = results[0].model_copy(update={"objects": [results[0].objects[0].model_copy(update={"name": "zebra"})]})
    message = _error(tmp_path, capsys, annotations, [other] + results[1:])
    assert "another corpus version" in message


def test_annotation_of_another_corpus_version_is_an_error(tmp_path, capsys):
    annotations, results = study(tp=2, tn=2, fp=0, fn=0)
    bad = annotations[0].model_copy(update={"statements": {"0": True, "7": False}})
    message = _error(tmp_path, capsys, [bad] + annotations[1:], results)
    assert "does not match the prompt" in message and "another corpus version" in message


def test_mixed_evaluators_in_one_file_is_an_error(tmp_path, capsys):
    annotations, results = study(tp=2, tn=2, fp=0, fn=0)
    results[1] = results[1].model_copy(update={"config_hash": "h2"})
    message = _error(tmp_path, capsys, annotations, results)
    assert "several evaluators/configs" in message


@pytest.mark.slow
def test_probe_hook_adds_a_section(tmp_path):
    annotations, results = study(tp=4, tn=4, fp=1, fn=1)

    def count_runs(data):
        return {"runs": len(data.runs), "labelled": len(data.labels.labels)}

    register_probe("count", count_runs, markdown=lambda r: f"## Count probe\n\n{r['runs']} run(s)\n")
    try:
        report = run_agree(tmp_path, annotations, [results], "--bootstrap", "0")
    finally:
        unregister_probe("count")
    assert report["probes"] == {"count": {"runs": 1, "labelled": 10}}
    assert "## Count probe\n\n1 run(s)" in (tmp_path / "out" / "agreement.md").read_text()
    assert "probes" not in run_agree(tmp_path, annotations, [results], "--bootstrap", "0")


def test_nan_is_null_in_json(tmp_path):
    annotations, results = study(tp=3, tn=0, fp=0, fn=0)  # everyone accepts everything: κ undefined
    report = run_agree(tmp_path, annotations, [results], "--bootstrap", "20")
    block = report["evaluators"]["negt2ibench/current"]
    assert block["kappa"] is None and block["kappa_ci"] == [None, None]
    assert block["accuracy"] == 1.0
    assert math.isclose(report["human"]["majority_pass"], 1.0)


def test_whole_prompt_judge_without_elements(tmp_path):
    # A whole-prompt judge decides images only: no per-element rows, image statistics as usual.
    annotations, results = study(tp=6, tn=6, fp=2, fn=2)
    whole = [
        r.model_copy(
            update={"objects": [], "statements": [], "score": 0.9 if r.passed else 0.2, "evaluator": "j/whole"}
        )
        for r in results
    ]
    report = run_agree(tmp_path, annotations, [whole], "--bootstrap", "0")
    block = report["evaluators"]["j/whole"]
    assert (block["tp"], block["tn"], block["fp"], block["fn"]) == (6, 6, 2, 2)
    assert block["elements"] == {}
    table13 = (tmp_path / "out" / "table13.md").read_text()
    assert "| j" not in table13 and table13.count("| H. inter-annotator |") == 3
