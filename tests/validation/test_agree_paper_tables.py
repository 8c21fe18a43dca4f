"""`agree` on a synthetic study of 600 images, 3 annotators, the scorer and a
judge in its three modes writes the paper's nine tables; Table 2 has one row per evaluator with
both Δ columns and its cost columns from the judge's run record beside the results.

The study is `study(tp=180, tn=330, fp=40, fn=50)` (tests/helpers/validation_helpers.py): the people
accept images 0–179 and 550–599 (230), reject 180–549 (370); the scorer's κ is 0.680095
(test_agree.py works it out). The judge `qwen3_vl_8b` answers with hand-chosen P("yes"):

    whole  passes exactly the images the people accept: κ = 1
    pos    passes every accepted image and the rejected ones with i % 5 == 0 (180, 185, …, 545: 74)
           TP 230, FN 0, FP 74, TN 296; p_o = 526/600; it passes 304, so
           p_e = (230·304 + 370·296) / 600² = 179,440 / 360,000
           κ = (526·600 − 179,440) / (360,000 − 179,440) = 136,160 / 180,560 = 0.754098
           precision 230/304 = 0.756579, recall 230/230 = 1
    neg    passes the accepted images but those with i % 10 == 0 (0, 10, …, 170 and 550, …, 590: 23)
           TP 207, FN 23, FP 0, TN 370; p_o = 577/600; it passes 207, so
           p_e = (230·207 + 370·393) / 600² = 193,020 / 360,000
           κ = (577·600 − 193,020) / (360,000 − 193,020) = 153,180 / 166,980 = 0.917355
    Δκ = 0.917355 − 0.754098 = 0.163257 → 16.3
"""

from __future__ import annotations

import csv
import json

import pytest

from judges.questions import questions_for
from judges.registry import JUDGES_VERSION
from judges.verdict import RecordContext, judge_record
from negt2ibench.cli import main
from tests.helpers.validation_helpers import prompts_round_robin, study, write_jsonl

ACCEPTED = set(range(180)) | set(range(550, 600))
TABLES = (2, 5, 6, 7, 9, 10, 11, 12, 13)


def judge_passes(mode: str, i: int) -> bool:
    if mode == "whole":
        return i in ACCEPTED
    if mode == "pos":
        return i in ACCEPTED or i % 5 == 0
    return i in ACCEPTED and i % 10 != 0


def judge_run(mode: str) -> list:
    records = []
    for i, prompt in enumerate(prompts_round_robin(600)):
        passes = judge_passes(mode, i)
        questions = questions_for(prompt, mode)
        last = max(s.index for s in prompt.statements)
        p_yes = []
        for question in questions:
            if mode == "whole":
                p_yes.append(0.9 if passes else 0.1)
                continue
            kind, _, what = question.element.partition(":")
            if kind == "object":
                p_yes.append(0.9)
                continue
            statement = prompt.statements[int(what)]
            satisfied = 0.8 if passes or statement.index != last else 0.2  # the last statement decides a failure
            asked_affirmatively = statement.negated and mode == "pos"
            p_yes.append(1 - satisfied if asked_affirmatively else satisfied)
        context = RecordContext(f"qwen3_vl_8b/{mode}", JUDGES_VERSION, f"hash-{mode}")
        records.append(judge_record(prompt, questions, p_yes, context=context, model_key="m", sample_index=0))
    return records


@pytest.mark.slow
def test_agree_on_600_images_writes_the_nine_tables_and_table2_pivots_the_modes(tmp_path, capsys):
    annotations, scorer = study(tp=180, tn=330, fp=40, fn=50)
    paths = [str(write_jsonl(scorer, tmp_path / "current.jsonl"))]
    paths += [str(write_jsonl(judge_run(mode), tmp_path / f"q8.{mode}.jsonl")) for mode in ("whole", "pos", "neg")]
    # The run record `judge --mode all --out q8.jsonl` writes: s/img = 0.1 s/question × 5.0 questions = 0.50.
    record = {"judge": "qwen3_vl_8b", "params": "8B", "peak_memory_gib": 16.0, "memory_kind": "cuda"}
    record |= {"seconds_per_question": 0.1, "seconds_per_image": 1.3, "modes": {"pos": {"questions_per_image": 5.0}}}
    (tmp_path / "q8.run.json").write_text(json.dumps(record))
    out = tmp_path / "out"
    args = ["agree", "--annotations", str(write_jsonl(annotations, tmp_path / "a.jsonl")), "--results", *paths]
    assert main([*args, "--out", str(out), "--bootstrap", "50"]) == 0
    assert "costs (Table 2) from qwen3_vl_8b: " in capsys.readouterr().out

    for number in TABLES:
        for ext in ("md", "csv", "json"):
            assert (out / f"table{number}.{ext}").stat().st_size > 0
        assert json.loads((out / f"table{number}.json").read_text())["name"] == f"table{number}"

    rows = list(csv.DictReader((out / "table2.csv").open(encoding="utf-8")))
    assert [row["evaluator"] for row in rows] == ["NegT2IBench (ours)", "Qwen3-VL-8B", "H. inter-annotator"]
    scorer_row, judge_row, _ = rows
    assert round(float(scorer_row["kappa_pos"]), 6) == round(float(scorer_row["kappa_neg"]), 6) == 0.680095
    assert scorer_row["kappa_whole"] == scorer_row["kappa_delta"] == scorer_row["tau_delta"] == ""
    assert float(judge_row["kappa_whole"]) == pytest.approx(1.0)
    assert round(float(judge_row["kappa_pos"]), 6) == 0.754098 and round(float(judge_row["kappa_neg"]), 6) == 0.917355
    assert round(float(judge_row["kappa_delta"]), 6) == 0.163257
    tau_delta = float(judge_row["tau_neg"]) - float(judge_row["tau_pos"])
    assert float(judge_row["tau_delta"]) == pytest.approx(tau_delta)
    assert round(float(judge_row["precision"]), 6) == 0.756579 and float(judge_row["recall"]) == 1.0
    assert (judge_row["params"], judge_row["gib"], judge_row["s_per_image"]) == ("8.0", "16.0", "0.5")
    assert scorer_row["params"] == scorer_row["gib"] == scorer_row["s_per_image"] == ""  # no record: blank

    markdown = (out / "table2.md").read_text()
    assert "| Qwen3-VL-8B | 8B | 16.0 | 0.50 | 100.0 | **75.4** | **91.7** | 16.3 | 75.7 | **100.0** |" in markdown
    assert "| NegT2IBench (ours) | – | – | – | – | 68.0 | 68.0 | – | 81.8 | 78.3 |" in markdown.replace("**", "")
    # Table 10 pairs the judge's pos and neg runs; Table 11 blanks its neg row at 1:0 and 2:0.
    assert "| Qwen3-VL-8B |" in (out / "table10.md").read_text()
    neg = next(r for r in csv.DictReader((out / "table11.csv").open(encoding="utf-8")) if r["mode"] == "neg")
    assert neg["1:0"] == neg["2:0"] == "" and neg["0:1"] != ""
    agreement = (out / "agreement.md").read_text()
    assert all((out / f"table{n}.md").read_text().strip() in agreement for n in TABLES)
