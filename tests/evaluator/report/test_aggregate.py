"""Report aggregation on hand-built result sets; expected numbers are worked out by hand here."""

from __future__ import annotations

import math

import pytest

from dataset_builder.vocabulary import CATEGORIES, SETTINGS
from evaluator.report import (
    LEADERBOARD_COLUMNS,
    POOLED,
    build_report,
    dead_zone_passes,
    failure_causes,
    group_by_model,
    leaderboard_row,
    matched_group_deltas,
    overall_interval,
    parse_prompt_id,
    report_markdown,
    statement_accuracy,
    table3,
    table3_markdown,
)
from negt2ibench.core.bootstrap import mean_interval, resample_indices
from tests.helpers.report_helpers import hand_results, neg_ok, pos_ok, record, statement

FULL = 4800 * 4


def alpha() -> list:
    return [r for r in hand_results() if r.model_key == "alpha"]


# --- prompt ids -------------------------------------------------------------------------------


def test_parse_prompt_id_reads_category_setting_load_and_group():
    key = parse_prompt_id("directional_pos2_neg1_042")
    assert (key.category, key.num_pos, key.num_neg, key.k) == ("directional", 2, 1, 42)
    assert key.setting == "2:1" and key.load == 3 and key.kind == "relation"


@pytest.mark.parametrize(
    "bad, words",
    [
        ("colour_pos1_neg0_000", "unknown category"),
        ("color_pos3_neg0_000", "unknown setting"),
        ("color_pos0_neg0_000", "unknown setting"),
        ("color_pos1_neg0_100", "outside"),
        ("color_pos1_neg0_7", "not a NegT2IBench id"),
        ("geneval_0001", "not a NegT2IBench id"),
    ],
)
def test_parse_prompt_id_rejects_unknown_ids(bad, words):
    with pytest.raises(ValueError, match=words):
        parse_prompt_id(bad)


# --- Table 3 ----------------------------------------------------------------------------------


def test_table3_hand_computed_numbers_per_model():
    tables = table3(hand_results())
    assert list(tables) == ["alpha", "beta"]
    a = tables["alpha"]
    # 1:0 → color 1/2 + depth 1/2 = 2/4; 0:1 → color 0/2 + depth 2/3 = 2/5; 2:2 → 0/1.
    assert a["settings"]["1:0"] == pytest.approx(50.0)
    assert a["settings"]["0:1"] == pytest.approx(40.0)
    assert a["settings"]["2:2"] == pytest.approx(0.0)
    for empty in ("2:0", "1:1", "0:2", "2:1", "1:2"):
        assert math.isnan(a["settings"][empty])
    # categories average their settings' accuracies, not their images.
    assert a["categories"]["color"] == pytest.approx((50.0 + 0.0) / 2)
    assert a["categories"]["depth"] == pytest.approx((50.0 + 200.0 / 3) / 2)
    assert a["categories"]["directional"] == pytest.approx(0.0)
    assert math.isnan(a["categories"]["material"])
    # overall is over images: 4 passed of 10 scored (the error row is not scored).
    assert a["overall"] == pytest.approx(40.0)
    assert a["polarity_gap"] == pytest.approx(40.0 - 50.0)
    assert (a["images"], a["passed"], a["errors"]) == (10, 4, 1)
    assert a["coverage"] == pytest.approx(100.0 * 10 / FULL)
    assert a["complete"] is False

    b = tables["beta"]
    assert b["settings"]["1:0"] == pytest.approx(100.0)
    assert b["settings"]["1:1"] == pytest.approx(50.0)
    assert b["categories"]["color"] == pytest.approx(100.0)
    assert b["categories"]["material"] == pytest.approx(50.0)
    assert b["overall"] == pytest.approx(200.0 / 3)
    assert math.isnan(b["polarity_gap"])  # no 0:1 images


def full_run(model: str = "full") -> list:
    """A complete run: every image passes except sample 0 of every color prompt and all 2:2 images."""
    records = []
    for category in CATEGORIES:
        for p, n in SETTINGS:
            for k in range(100):
                prompt_id = f"{category}_pos{p}_neg{n}_{k:03d}"
                for sample in range(4):
                    fails = (category == "color" and sample == 0) or (p, n) == (2, 2)
                    records.append(
                        record(
                            prompt_id,
                            model,
                            sample,
                            [statement(0, "positive", False, "wrong_value")] if fails else [pos_ok()],
                        )
                    )
    return records


def test_complete_run_is_flagged_complete_and_overall_equals_mean_of_categories():
    table = table3(full_run())["full"]
    assert table["complete"] is True and table["coverage"] == pytest.approx(100.0)
    assert table["images"] == FULL
    # color: 7 settings at 75%, 2:2 at 0% → 525/8; other categories: 7 at 100%, 2:2 at 0% → 87.5.
    assert table["categories"]["color"] == pytest.approx(525.0 / 8)
    assert table["categories"]["depth"] == pytest.approx(87.5)
    # setting 1:0: 5 categories at 100%, color at 75% → 575/6.
    assert table["settings"]["1:0"] == pytest.approx(575.0 / 6)
    assert table["settings"]["2:2"] == pytest.approx(0.0)
    assert table["overall"] == pytest.approx(sum(table["categories"].values()) / 6)


@pytest.mark.slow
def test_missing_images_lower_coverage_and_mark_the_model_in_markdown():
    records = full_run()
    kept = [r for r in records if not (r.prompt_id.startswith("depth_") and r.sample_index == 3)]
    errored = [
        r
        if r.prompt_id != "color_pos1_neg0_000" or r.sample_index
        else r.model_copy(update={"error": "boom", "passed": False})
        for r in kept
    ]
    table = table3(errored)["full"]
    missing = 800 + 1  # 800 depth prompts lost one image each; one error row
    assert table["images"] == FULL - missing and table["errors"] == 1
    assert table["coverage"] == pytest.approx(100.0 * (FULL - missing) / FULL)
    assert table["complete"] is False
    markdown = table3_markdown(build_report(errored, n_resamples=10))
    assert "full †" in markdown and f"{FULL - missing:,} of {FULL:,} images" in markdown


def test_leaderboard_row_keys_and_values():
    row = leaderboard_row(hand_results(), "alpha")
    assert tuple(row) == LEADERBOARD_COLUMNS
    assert list(row) == [
        "model",
        "1:0",
        "0:1",
        "2:0",
        "1:1",
        "0:2",
        "2:1",
        "1:2",
        "2:2",
        "color",
        "material",
        "comparative",
        "depth",
        "directional",
        "proximity",
        "overall",
        "polarity_gap",
        "coverage",
        "images",
    ]
    assert row["model"] == "alpha" and row["images"] == 10
    assert row["overall"] == pytest.approx(40.0) and row["color"] == pytest.approx(25.0)
    with pytest.raises(ValueError, match="no results for model 'gamma'"):
        leaderboard_row(hand_results(), "gamma")


def test_mixed_config_hash_or_version_within_a_model_is_an_error():
    records = alpha()
    records[3] = records[3].model_copy(update={"config_hash": "h2"})
    with pytest.raises(ValueError, match="'alpha' mixes config_hash values h1, h2"):
        table3(records)
    records = alpha()
    records[0] = records[0].model_copy(update={"evaluator_version": "0.9.0"})
    with pytest.raises(ValueError, match="mixes evaluator_version"):
        build_report(records)
    # different models may use different configs (beta uses h9)
    assert set(table3(hand_results())) == {"alpha", "beta"}


def test_duplicates_scored_result_replaces_error_and_conflicts_are_errors():
    records = alpha()
    fixed = record("color_pos1_neg0_001", "alpha", 0, [pos_ok()])
    table = table3(records + [fixed])["alpha"]
    assert (table["images"], table["passed"], table["errors"]) == (11, 5, 0)
    # the same file given twice counts once
    assert table3(records + records)["alpha"]["images"] == 10
    conflicting = records[0].model_copy(update={"passed": False})
    with pytest.raises(
        ValueError, match="two different results for model 'alpha', prompt 'color_pos1_neg0_000', sample 0"
    ):
        group_by_model(records + [conflicting])


def test_sample_index_beyond_expected_samples_is_an_error():
    with pytest.raises(ValueError, match="sample_index 2 is outside 0–1"):
        table3(alpha(), expected_samples=2)


# --- statement-level tables ---------------------------------------------------------------------


def test_statement_accuracy_by_polarity_and_category():
    table = statement_accuracy(alpha())
    assert table["color"]["positive"] == pytest.approx(50.0) and table["color"]["positive_n"] == 2
    assert table["color"]["negated"] == pytest.approx(0.0) and table["color"]["negated_n"] == 2
    assert table["depth"]["negated"] == pytest.approx(200.0 / 3)
    assert table["directional"]["positive"] == pytest.approx(50.0)
    assert table["directional"]["negated"] == pytest.approx(50.0)
    # all: positives 3 of 6, negated 3 of 7 (the error row's statement is not counted)
    assert (table["all"]["positive_n"], table["all"]["negated_n"]) == (6, 7)
    assert table["all"]["positive"] == pytest.approx(50.0)
    assert table["all"]["negated"] == pytest.approx(300.0 / 7)
    assert math.isnan(table["material"]["positive"])


def test_failure_causes_by_setting_and_category_with_forbidden_share():
    causes = failure_causes(alpha())
    assert causes["failed"] == 7
    by_setting = causes["by_setting"]
    assert by_setting["1:0"] == {
        "subject_missing": 0,
        "target_missing": 0,
        "forbidden_rendered": 0,
        "wrong_value": 1,
        "dead_zone": 1,
        "failed": 2,
    }
    assert by_setting["0:1"]["forbidden_rendered"] == 2 and by_setting["0:1"]["target_missing"] == 1
    assert by_setting["0:1"]["failed"] == 3
    assert by_setting["2:2"]["subject_missing"] == 1 and by_setting["2:2"]["forbidden_rendered"] == 1
    assert by_setting["1:1"]["failed"] == 0
    by_category = causes["by_category"]
    assert (by_category["color"]["wrong_value"], by_category["color"]["forbidden_rendered"]) == (1, 2)
    assert (by_category["depth"]["dead_zone"], by_category["depth"]["target_missing"]) == (1, 1)
    share = causes["forbidden_share"]
    assert share["all"] == pytest.approx(300.0 / 7)
    assert share["color"] == pytest.approx(200.0 / 3)
    assert share["depth"] == pytest.approx(0.0)
    assert share["directional"] == pytest.approx(50.0)
    assert math.isnan(share["material"])


def test_failed_statement_without_cause_is_an_error():
    bad = record("color_pos1_neg0_000", "alpha", 0, [statement(0, "positive", False, None)])
    with pytest.raises(ValueError, match="statement 0 failed without a cause"):
        failure_causes([bad])


def test_dead_zone_table_counts_evaluable_passed_and_dead_zone_passes():
    table = dead_zone_passes(alpha())
    # depth: the target_missing statement is not evaluable; 2 passes, one of them a dead-zone pass.
    assert table["depth"] == {"evaluable": 2, "passed": 2, "dead_zone_passes": 1, "share": pytest.approx(50.0)}
    assert table["directional"] == {"evaluable": 2, "passed": 1, "dead_zone_passes": 1, "share": pytest.approx(100.0)}
    assert table["proximity"]["evaluable"] == 0 and math.isnan(table["proximity"]["share"])
    assert table["total"] == {"evaluable": 4, "passed": 3, "dead_zone_passes": 2, "share": pytest.approx(200.0 / 3)}
    assert list(table) == ["depth", "directional", "comparative", "proximity", "total"]


# --- matched groups ------------------------------------------------------------------------------


def paired_groups() -> list:
    """Color 1:0 vs 0:1, groups k=0..9: the positive prompt always passes (2 samples); the negated
    prompt passes both samples for k<3, one of two for k=3, none otherwise.
    Deltas: 0,0,0,−50, then six × −100 → mean −650/10 = −65."""
    records = []
    for k in range(10):
        for sample in range(2):
            records.append(record(f"color_pos1_neg0_{k:03d}", "gamma", sample, [pos_ok()]))
            ok = k < 3 or (k == 3 and sample == 0)
            records.append(
                record(
                    f"color_pos0_neg1_{k:03d}",
                    "gamma",
                    sample,
                    [neg_ok()] if ok else [statement(0, "negated", False, "forbidden_rendered")],
                )
            )
    # an unpaired prompt (no 0:1 partner) must not enter the deltas
    records.append(record("color_pos1_neg0_050", "gamma", 0, [pos_ok()]))
    # load 2: 2:0 vs 0:2 in depth, one group, negation better: 0% → 100%
    records.append(record("depth_pos2_neg0_004", "gamma", 0, [pos_ok(0), statement(1, "positive", False, "dead_zone")]))
    records.append(record("depth_pos0_neg2_004", "gamma", 0, [neg_ok(0), neg_ok(1)]))
    return records


def test_matched_group_delta_sign_and_interval():
    table = matched_group_deltas(paired_groups(), n_resamples=2000, seed=7)
    color = table["color"]["1:0 vs 0:1"]
    assert color["groups"] == 10
    assert color["positive"] == pytest.approx(100.0)
    assert color["negated"] == pytest.approx(35.0)  # (100·3 + 50) / 10
    assert color["delta"] == pytest.approx(-65.0)
    assert color["ci_low"] <= color["delta"] <= color["ci_high"]
    assert color["ci_high"] < 0  # every resample of these deltas is negative
    assert color["ci_low"] >= -100.0
    assert table["color"]["all"]["delta"] == pytest.approx(-65.0)
    depth = table["depth"]["2:0 vs 0:2"]
    assert (depth["groups"], depth["delta"]) == (1, pytest.approx(100.0))
    assert depth["ci_low"] == pytest.approx(100.0) and depth["ci_high"] == pytest.approx(100.0)
    overall = table["all"]["all"]
    assert overall["groups"] == 11
    assert overall["delta"] == pytest.approx((-650.0 + 100.0) / 11)
    assert table["material"]["all"]["groups"] == 0 and math.isnan(table["material"]["all"]["delta"])


def test_bootstrap_is_deterministic_for_a_seed():
    values = [0.0, 0.0, 0.0, -50.0] + [-100.0] * 6
    first = mean_interval(values, resamples=500, seed=3)
    assert first == mean_interval(values, resamples=500, seed=3)
    assert first != mean_interval(values, resamples=500, seed=4)
    assert first[0] <= -65.0 <= first[1]
    assert all(math.isnan(v) for v in mean_interval([], resamples=500))


def test_overall_interval_resamples_prompts_with_their_images():
    # Two prompts of four images: all of color_pos1_neg0_000's pass, none of color_pos1_neg0_001's.
    records = [record("color_pos1_neg0_000", "m", s, [pos_ok()]) for s in range(4)]
    records += [
        record("color_pos1_neg0_001", "m", s, [statement(0, "positive", False, "subject_missing")]) for s in range(4)
    ]
    records.append(record("color_pos1_neg0_002", "m", 0, [], error="unreadable"))  # an error row: not a prompt drawn
    assert table3(records)["m"]["overall"] == pytest.approx(50.0)
    # A resample draws the two prompts whole: both passing (100%), one of each (50%) or both failing
    # (0%), with chances 1/4, 1/2, 1/4; the 2.5th and 97.5th percentiles are then 0% and 100%.
    # (Drawing the eight images one by one would give a far narrower interval.)
    assert overall_interval(records, n_resamples=2000, seed=3) == (0.0, 100.0)
    # The draws are `resample_indices` over the prompts with a scored image, in corpus order.
    draws = resample_indices(2, resamples=200, seed=5)
    shares = sorted(100.0 * (draws == 0).sum(axis=1) / 2)
    low, high = overall_interval(records, n_resamples=200, seed=5)
    assert shares[4] <= low <= shares[5] and shares[194] <= high <= shares[195]


def test_overall_interval_of_equal_prompts_is_the_point_and_empty_is_nan():
    records = [
        record(
            f"depth_pos0_neg1_{k:03d}",
            "m",
            s,
            [neg_ok()] if s < 3 else [statement(0, "negated", False, "forbidden_rendered")],
        )
        for k in range(5)
        for s in range(4)
    ]
    assert overall_interval(records, n_resamples=300) == (pytest.approx(75.0), pytest.approx(75.0))
    assert all(math.isnan(v) for v in overall_interval([record("depth_pos0_neg1_000", "m", 0, [], error="x")]))


# --- the whole report ---------------------------------------------------------------------------


def test_build_report_pools_failure_causes_and_dead_zones_over_models():
    report = build_report(hand_results(), n_resamples=50, seed=1)
    assert report.models == ("alpha", "beta")
    assert report.failure_causes[POOLED]["failed"] == 7 + 1
    assert report.failure_causes[POOLED]["forbidden_share"]["all"] == pytest.approx(50.0)
    assert report.failure_causes[POOLED]["forbidden_share"]["material"] == pytest.approx(100.0)
    assert report.dead_zone[POOLED]["total"]["evaluable"] == 4
    assert report.provenance["beta"] == {"evaluator_version": "1.0.0", "config_hash": "h9"}
    data = report.to_dict()
    assert data["table3"]["alpha"]["settings"]["2:0"] is None  # NaN → null in JSON
    assert data["matched_deltas"]["alpha"]["color"]["1:0 vs 0:1"]["delta"] == pytest.approx(-50.0)
    assert "inputs" not in data  # built from records: nothing read, nothing left out
    told = build_report(hand_results(), n_resamples=10, inputs={"files": ["a.jsonl"], "left_out": []})
    assert told.to_dict()["inputs"] == {"files": ["a.jsonl"], "left_out": []}


def test_markdown_has_paper_layout_with_one_decimal():
    report = build_report(hand_results(), n_resamples=50)
    table = table3_markdown(report)
    lines = table.splitlines()
    header = next(line for line in lines if line.startswith("| **Model**")).replace("**", "")
    assert header.split(" | ")[1:9] == ["1:0", "0:1", "2:0", "1:1", "0:2", "2:1", "1:2", "2:2"]
    assert "Color | Material | Compar. | Depth | Direct. | Proxim. | Overall" in header
    # The paper's two header rows above the labels: polarity and load | semantic category, then the loads.
    top = lines.index(next(line for line in lines if "Statement polarity and load" in line))
    assert (
        lines[top].split(" | ")[1] == "Statement polarity and load"
        and lines[top].split(" | ")[9] == "Semantic category"
    )
    loads = lines[top + 2].replace("**", "").split(" | ")
    assert [loads[i] for i in (1, 3, 6, 8, 9, 11)] == [
        "Load 1",
        "Load 2",
        "Load 3",
        "Load 4",
        "Attributes",
        "Relations",
    ]
    assert "scored with different evaluator versions or configurations" in table  # alpha h1, beta h9
    same = build_report([r for r in hand_results() if r.model_key == "alpha"], n_resamples=10)
    assert "different evaluator" not in table3_markdown(same)
    alpha_row = next(line for line in table.splitlines() if line.startswith("| alpha"))
    # 1:0 50.0, 0:1 40.0, color 25.0, depth 58.3, overall 40.0, gap −10.0
    assert alpha_row.startswith("| alpha † | 50.0 | 40.0 | – |")
    assert "| 25.0 | – | – | 58.3 | 0.0 | – | 40.0 | -10.0 |" in alpha_row  # beta is better in 1:0, color, overall
    whole = report_markdown(report)
    for title in (
        "Table 3",
        "Statement accuracy",
        "Failure causes",
        "Dead-zone passes",
        "Matched-group deltas",
        "Provenance",
    ):
        assert title in whole


def test_a_model_with_only_error_rows_has_no_accuracy_and_no_counts():
    rows = [record("color_pos1_neg0_000", "broken", s, [], error="boom") for s in range(2)]
    (table,) = table3(rows).values()
    assert (table["images"], table["passed"], table["errors"]) == (0, 0, 2)
    assert math.isnan(table["overall"]) and all(math.isnan(v) for v in table["settings"].values())
    accuracy = statement_accuracy(rows)["all"]
    assert (accuracy["positive_n"], accuracy["negated_n"]) == (0, 0) and math.isnan(accuracy["positive"])
    assert failure_causes(rows)["failed"] == 0
