"""`agree` over the scorer and a judge's three modes: one table with four
rows, and the negation probe (paper Table 10) from the judge's pos and neg runs.

The judge's records are made by `judges.verdict.judge_record` (what `negt2ibench judge` writes)
from hand-chosen P("yes"), on the 8 images of `study(tp=2, tn=2, fp=2, fn=2)`:

    image  prompt (color_…_000)  negated  people  scorer  whole  pos   neg
    0      pos1_neg0             0        accept  pass    pass   pass  pass
    1      pos0_neg1             1        accept  pass    pass   pass  pass  (flip)
    2      pos2_neg0             0        reject  fail    fail   fail  fail  (a positive statement at 0.3)
    3      pos1_neg1             1        reject  fail    fail   pass  pass  (flip)
    4      pos0_neg2             2        reject  pass    fail   pass  fail
    5      pos2_neg1             1        reject  pass    fail   pass  fail
    6      pos1_neg2             2        accept  fail    pass   pass  pass  (2 flips)
    7      pos2_neg2             2        accept  fail    pass   pass  fail

Objects p 0.9; positive statements 0.8 (image 2: 0.3); negated statements asked affirmatively
(pos) 0.3, in negated form (neg) 0.6 on images 1, 3, 6 and 0.2 elsewhere; whole: 0.9 where the
people accept, else 0.1. So, worked by hand: accuracy scorer 4/8, whole 8/8, pos 5/8 (wrong on
3, 4, 5), neg 6/8 (wrong on 3, 7); 9 negated statements, 4 flips (images 1, 3, 6, 6):
flip rate 4/9; complement error (4 × |0.3 + 0.6 − 1| + 5 × |0.3 + 0.2 − 1|) / 9 = 2.9 / 9;
called correct pos 7/8, neg 4/8.
"""

from __future__ import annotations

import json

import pytest

from judges.questions import questions_for
from judges.registry import JUDGES_VERSION
from judges.verdict import RecordContext, judge_record
from negt2ibench.cli import main
from tests.helpers.validation_helpers import prompts_round_robin, study, write_jsonl

FLIPPED = {1, 3, 6}


def judge_records(mode: str, *, judge: str = "tiny_judge", images: range = range(8), accepted=(0, 1, 6, 7)):
    records = []
    for i, prompt in enumerate(prompts_round_robin(8)):
        if i not in images:
            continue
        questions = questions_for(prompt, mode)
        p_yes = []
        for question in questions:
            if mode == "whole":
                p_yes.append(0.9 if i in accepted else 0.1)
            elif question.element.startswith("object:"):
                p_yes.append(0.9)
            else:
                statement = prompt.statements[int(question.element.split(":")[1])]
                if not statement.negated:
                    p_yes.append(0.3 if i == 2 else 0.8)
                elif mode == "pos":
                    p_yes.append(0.3)
                else:
                    p_yes.append(0.6 if i in FLIPPED else 0.2)
        context = RecordContext(f"{judge}/{mode}", JUDGES_VERSION, f"hash-{mode}")
        records.append(judge_record(prompt, questions, p_yes, context=context, model_key="m", sample_index=0))
    return records


def agree(tmp_path, runs: dict[str, list], *extra: str) -> tuple[dict, str, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    annotations, _ = study(tp=2, tn=2, fp=2, fn=2)
    paths = [str(write_jsonl(records, tmp_path / f"{name}.jsonl")) for name, records in runs.items()]
    out = tmp_path / "out"
    args = ["agree", "--annotations", str(write_jsonl(annotations, tmp_path / "a.jsonl")), "--results", *paths]
    assert main([*args, "--out", str(out), "--bootstrap", "0", *extra]) == 0
    return json.loads((out / "agreement.json").read_text()), (out / "agreement.md").read_text(), str(out)


@pytest.mark.slow
def test_scorer_and_three_judge_modes_in_one_table_with_the_negation_probe(tmp_path, capsys):
    _, scorer = study(tp=2, tn=2, fp=2, fn=2)
    runs = {"scorer": scorer} | {mode: judge_records(mode) for mode in ("whole", "pos", "neg")}
    report, markdown, _ = agree(tmp_path, runs)
    printed = capsys.readouterr().out
    names = ["negt2ibench/current", "tiny_judge/whole", "tiny_judge/pos", "tiny_judge/neg"]
    assert list(report["evaluators"]) == names
    accuracy = {name: report["evaluators"][name]["accuracy"] for name in names}
    assert accuracy == {names[0]: 0.5, names[1]: 1.0, names[2]: 0.625, names[3]: 0.75}
    main_table = printed.split("## Image-level agreement")[1].split("\n\n")[2].splitlines()
    assert [row.split(" | ")[0].lstrip("| ") for row in main_table[2:]] == [*names, "H. inter-annotator"]
    probe = report["probes"]["negation"]["tiny_judge"]
    assert probe == {
        "pos": "tiny_judge/pos",
        "neg": "tiny_judge/neg",
        "n": 8,
        "n_statements": 9,
        "flips": 4,
        "flip_rate": pytest.approx(4 / 9),
        "complement_error": pytest.approx(2.9 / 9),
        "called_correct_pos": 0.875,
        "called_correct_neg": 0.5,
        "accuracy_whole": 1.0,
        "accuracy_pos": 0.625,
        "accuracy_neg": 0.75,
    }
    assert "## Negation probe (paper Table 10)" in markdown
    assert "| tiny_judge | 8 | 9 | 100.0 | 62.5 | 75.0 | 44.4 | 0.322 | 87.5 | 50.0 |" in markdown


def test_probe_uses_only_labelled_images_both_runs_scored(tmp_path):
    # pos misses image 7; both runs also judged an image nobody annotated (another sample index).
    extra = {"sample_index": 1}
    pos = judge_records("pos", images=range(7)) + [judge_records("pos")[0].model_copy(update=extra)]
    neg = judge_records("neg") + [judge_records("neg")[0].model_copy(update=extra)]
    report, _, _ = agree(tmp_path, {"pos": pos, "neg": neg})
    probe = report["probes"]["negation"]["tiny_judge"]
    # images 0-6: 7 negated statements, 4 flips; passes pos 6 of 7 (not 2), neg 4 of 7 (0, 1, 3, 6)
    assert (probe["n"], probe["n_statements"], probe["flips"]) == (7, 7, 4)
    assert (probe["called_correct_pos"], probe["called_correct_neg"]) == (pytest.approx(6 / 7), pytest.approx(4 / 7))
    assert "accuracy_whole" not in probe


@pytest.mark.slow
def test_no_probe_without_both_runs_and_a_judge_given_twice_is_not_paired(tmp_path):
    report, markdown, _ = agree(tmp_path, {"pos": judge_records("pos"), "whole": judge_records("whole")})
    assert "probes" not in report and "Negation probe" not in markdown
    runs = {"pos": judge_records("pos"), "pos_again": judge_records("pos"), "neg": judge_records("neg")}
    report, markdown, _ = agree(tmp_path / "twice", runs)
    (reason,) = report["probes"]["negation"]["tiny_judge"].values()
    assert reason.startswith("several pos or neg runs of tiny_judge given (") and reason.endswith("pass one of each")
    assert "Not paired: tiny_judge: several pos or neg runs" in markdown


@pytest.mark.slow
def test_two_judges_are_probed_apart(tmp_path):
    runs = {
        f"{judge}_{mode}": judge_records(mode, judge=judge)
        for judge in ("a_judge", "b_judge")
        for mode in ("pos", "neg")
    }
    report, _, _ = agree(tmp_path, runs)
    assert list(report["probes"]["negation"]) == ["a_judge", "b_judge"]
    assert {entry["flips"] for entry in report["probes"]["negation"].values()} == {4}


@pytest.mark.slow
def test_costs_flag_fills_table2_and_a_bad_record_is_one_line(tmp_path, capsys):
    import csv

    _, scorer = study(tp=2, tn=2, fp=2, fn=2)
    runs = {"scorer": scorer, "pos": judge_records("pos"), "neg": judge_records("neg")}
    record = tmp_path / "scorer_cost.json"
    # A hand-written record for the scorer (by evaluator name): 0.25 s/img, 3.5 GiB, 1.3B parameters.
    cost = {"evaluator": "negt2ibench/current", "seconds_per_image": 0.25, "peak_memory_gib": 3.5, "params": "1.3B"}
    record.write_text(json.dumps(cost))
    _, _, out = agree(tmp_path, runs, "--costs", str(record))
    rows = {row["key"]: row for row in csv.DictReader(open(f"{out}/table2.csv", encoding="utf-8"))}
    assert (rows["negt2ibench/current"]["params"], rows["negt2ibench/current"]["gib"]) == ("1.3", "3.5")
    assert rows["negt2ibench/current"]["s_per_image"] == "0.25"
    assert rows["tiny_judge"]["s_per_image"] == "" and rows["tiny_judge"]["params"] == ""  # no record: blank
    # Table 2 pivots the judge's pos and neg: κ pos 1/4, neg 1/2 (this module's docstring), Δ = 1/4.
    assert float(rows["tiny_judge"]["kappa_delta"]) == pytest.approx(0.25)
    capsys.readouterr()
    record.write_text('{"evaluator": "negt2ibench/current", "seconds_per_image": -1}')
    annotations, _ = study(tp=2, tn=2, fp=2, fn=2)
    args = ["agree", "--annotations", str(write_jsonl(annotations, tmp_path / "a.jsonl"))]
    args += ["--results", str(tmp_path / "pos.jsonl"), "--out", str(tmp_path / "o2"), "--costs", str(record)]
    assert main(args) == 1
    assert capsys.readouterr().err.strip().endswith("seconds_per_image must be a non-negative number, got -1")
