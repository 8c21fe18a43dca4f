"""The order-to-space diagnostic (OTS-Bench, seed 003): Hom = |2p − 100| over valid neutral pairs, Ali /
Rev / Δ over left-of / right-of requests, the valid-image rule, intervals over prompts, this project's
relation prompts read from result records, and the report's table, JSON, CSV and plot."""

from __future__ import annotations

import csv
import json
import math
import random

import pytest

from dataset_builder.records import PromptIndex
from evaluator.report import build_report
from evaluator.report.ots import OrderObservation, ots_statistics, result_observations, side, sides
from evaluator.results import ObjectResult, ResultRecord, StatementResult
from negt2ibench.cli import main
from tests.helpers.perception_helpers import make_prompt

LEFT, RIGHT = (10, 45, 20, 55), (80, 45, 90, 55)  # 10 × 10 boxes, centres 70 px apart on one row


def test_the_valid_image_rule():
    assert side(LEFT, RIGHT) == "left of" and side(RIGHT, LEFT) == "right of"
    assert side(None, RIGHT) is None and side(LEFT, None) is None  # an object not detected
    assert side((10, 10, 20, 20), (12, 80, 22, 90)) is None  # stacked: the offset is mostly vertical
    assert side((10, 10, 20, 20), (11, 10, 21, 20)) is None  # within the dead zone: 1 px < 0.1 × 20
    assert side((0, 0, 10, 10), (20, 20, 30, 30)) == "left of"  # 45°: left of (and above) -> valid


def test_sides_over_all_pairs_at_once_are_side_of_each_pair():
    rng = random.Random(3)
    pairs: list = [(LEFT, RIGHT), (RIGHT, LEFT), (None, RIGHT), (LEFT, None), (None, None), (LEFT, LEFT)]
    for _ in range(3000):  # anywhere in a 1024² image, any size, zero-width boxes too
        x0, y0, x1, y1 = (rng.uniform(0, 1024) for _ in range(4))
        first = (x0, y0, x0 + rng.choice((0.0, rng.uniform(0, 300))), y0 + rng.uniform(0, 300))
        second = (x1, y1, x1 + rng.uniform(0, 300), y1 + rng.choice((0.0, rng.uniform(0, 300))))
        pairs.append((first, second))
    for step in range(-200, 200):  # centre offsets at 60° ± a few ulps from horizontal: |dx| = 0.5 is the cut
        angle = math.radians(60) + step * 1e-8
        for sign in (1, -1):
            dx, dy = sign * 400 * math.cos(angle), 400 * math.sin(angle)
            pairs.append(((500 + dx, 500 + dy, 500 + dx, 500 + dy), (500, 500, 500, 500)))
    found = sides(pairs)
    assert found == [side(first, second) for first, second in pairs]
    assert {"left of", "right of", None} <= set(found)
    assert sides([]) == [] and sides(pairs, position_threshold=0.3) == [side(a, b, 0.3) for a, b in pairs]


def test_hom_ali_rev_and_delta_by_hand():
    neutral = [OrderObservation(f"n{i % 3}", LEFT, RIGHT) for i in range(6)]  # A left in 6
    neutral += [OrderObservation("n0", RIGHT, LEFT), OrderObservation("n1", LEFT, None)]  # A right in 1; 1 invalid
    aligned = [OrderObservation("a0", LEFT, RIGHT, "left of")] * 3 + [OrderObservation("a1", RIGHT, LEFT, "left of")]
    reversed_ = [OrderObservation("r0", RIGHT, LEFT, "right of")] + [
        OrderObservation("r1", LEFT, RIGHT, "right of")
    ] * 3
    stats = ots_statistics(neutral + aligned + reversed_, resamples=300)
    # p = 6 / 7 valid = 85.7 %; Hom = |2 × 85.7 − 100| = 71.4; Ali = 3/4 = 75; Rev = 1/4 = 25; Δ = 50.
    assert (stats["neutral_images"], stats["neutral_valid"]) == (8, 7)
    assert stats["first_left"] == pytest.approx(600 / 7) and stats["hom"] == pytest.approx(1200 / 7 - 100)
    assert (stats["ali"], stats["rev"], stats["delta"]) == (75.0, 25.0, 50.0)
    for name in ("hom", "ali", "rev", "delta"):
        low, high = stats[f"{name}_ci"]
        assert low <= stats[name] <= high
    assert stats == ots_statistics(neutral + aligned + reversed_, resamples=300)  # seeded


def test_a_model_that_always_puts_the_first_object_left():
    stats = ots_statistics([OrderObservation(f"p{i}", LEFT, RIGHT) for i in range(5)], resamples=100)
    assert stats["hom"] == 100.0 and stats["hom_ci"] == (100.0, 100.0)
    assert math.isnan(stats["ali"]) and math.isnan(stats["delta"])  # no directional prompts: NaN, not 0
    assert math.isnan(ots_statistics([], resamples=10)["hom"])


def relation_record(prompt, boxes: dict[str, tuple | None], model: str = "m", error: str | None = None):
    objects = [
        ObjectResult(name=name, present=box is not None, confidence=0.9 if box else 0.0, box=list(box) if box else None)
        for name, box in boxes.items()
    ]
    statements = [StatementResult(index=0, polarity=prompt.statements[0].polarity, satisfied=True)]
    return ResultRecord(
        prompt_id=prompt.prompt_id,
        model_key=model,
        sample_index=0,
        passed=True,
        objects=objects,
        statements=statements,
        evaluator_version="1.1.0",
        config_hash="h",
        error=error,
    )


def test_this_projects_relation_prompts_subject_first():
    near = make_prompt("proximity", ["cat", "dog"], "proximity_pos1_neg0_000")
    left = make_prompt("directional", ["cat", "dog"], "directional_pos1_neg0_000")  # "cat left of dog"
    right = left.model_copy(
        update={
            "prompt_id": "directional_pos1_neg0_001",
            "statements": [left.statements[0].model_copy(update={"predicate": "right of"})],
        }
    )
    negated = make_prompt("directional", ["cat", "dog"], "directional_pos0_neg1_000", polarity="negated")
    color = make_prompt("color", ["cup"], "color_pos1_neg0_000")
    prompts = PromptIndex([near, left, right, negated, color])
    records = [
        relation_record(near, {"cat": LEFT, "dog": RIGHT}),
        relation_record(left, {"cat": LEFT, "dog": RIGHT}),
        relation_record(right, {"cat": LEFT, "dog": RIGHT}),
        relation_record(negated, {"cat": LEFT, "dog": RIGHT}),  # asks for no side: left out
        relation_record(color, {"cup": LEFT}),
        relation_record(near, {"cat": LEFT, "dog": RIGHT}, error="bad image"),  # not scored: left out
    ]
    observations = result_observations(records, prompts)
    assert [(o.prompt, o.kind, o.requested) for o in observations] == [
        ("proximity_pos1_neg0_000", "neutral", None),
        ("directional_pos1_neg0_000", "aligned", "left of"),
        ("directional_pos1_neg0_001", "reversed", "right of"),
    ]
    stats = ots_statistics(observations, resamples=50)
    assert (stats["hom"], stats["ali"], stats["rev"], stats["delta"]) == (100.0, 100.0, 0.0, 100.0)


def test_the_report_carries_the_diagnostic_in_its_json_csv_markdown_and_plot(tmp_path):
    left = make_prompt("directional", ["cat", "dog"], "directional_pos1_neg0_000")
    near = make_prompt("proximity", ["cat", "dog"], "proximity_pos1_neg0_000")
    records = [relation_record(left, {"cat": LEFT, "dog": RIGHT}), relation_record(near, {"cat": RIGHT, "dog": LEFT})]
    report = build_report(records, n_resamples=50, prompts=PromptIndex([left, near]))
    assert report.to_dict()["ots"]["m"]["ali"] == 100.0 and report.to_dict()["ots"]["m"]["first_left"] == 0.0
    results = tmp_path / "m.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in records))
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(left.model_dump_json() + "\n" + near.model_dump_json() + "\n")
    out = tmp_path / "report"
    assert main(["report", str(results), "--out", str(out), "--bootstrap", "50", "--prompts", str(prompts)]) == 0
    data = json.loads((out / "report.json").read_text())
    assert data["ots"]["m"]["hom"] == 100.0 and data["ots"]["m"]["hom_ci"] == [100.0, 100.0]
    with (out / "ots.csv").open() as handle:
        [row] = list(csv.DictReader(handle))
    assert row["model"] == "m" and float(row["ali"]) == 100.0 and row["hom_ci_low"] == "100.0"
    assert "## Order-to-space bias (OTS-Bench)" in (out / "report.md").read_text()
    assert (out / "ots.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
