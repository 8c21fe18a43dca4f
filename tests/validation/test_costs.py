"""Table 2's cost columns: read from run records (the judge's, beside its results, or --costs), never estimated."""

from __future__ import annotations

import json

import pytest

from judges.run_record import RUN_RECORD_SUFFIX, run_record_path
from negt2ibench.core.errors import UserError
from validation import costs
from validation.costs import beside, cost_from_record, gather_costs, parse_params


def test_the_reader_looks_where_the_judge_writes():
    assert costs.RUN_RECORD_SUFFIX == RUN_RECORD_SUFFIX
    # `judge --mode all --out q8.jsonl` writes q8.whole/pos/neg.jsonl and q8.run.json.
    assert run_record_path("out/q8.jsonl").name == "q8.run.json"
    assert run_record_path("out/q8.jsonl", rank=1, world=2).name == "q8.rank1.run.json"
    assert [p.name for p in beside("out/q8.pos.jsonl")] == ["q8.pos.run.json", "q8.run.json"]
    assert [p.name for p in beside("out/current.jsonl")] == ["current.run.json"]


def test_seconds_per_image_is_per_question_times_the_per_element_questions():
    # An `all` run: 0.2 s/question; pos asks 4.5 questions per image → 0.9 s/img (Table 8), not the
    # whole run's 2.1 s/img (which also asked the whole-prompt and negated-form questions).
    record = {"judge": "qwen3_vl_8b", "seconds_per_question": 0.2, "seconds_per_image": 2.1}
    record |= {"modes": {"whole": {"questions_per_image": 1.0}, "pos": {"questions_per_image": 4.5}}}
    record |= {"peak_memory_gib": 17.25, "memory_kind": "cuda", "params": ""}
    cost = cost_from_record(record, "q8.run.json")
    assert (cost.key, cost.seconds_per_image, cost.gib, cost.memory_kind) == (
        "qwen3_vl_8b",
        pytest.approx(0.9),
        17.25,
        "cuda",
    )
    assert cost.params == 8.0  # the record has none: the judge registry's "8B"
    # A record by evaluator name (the scorer's, written by hand): its own s/img; a judge mode maps to the judge.
    scorer = cost_from_record({"evaluator": "negt2ibench/current", "seconds_per_image": 0.4, "params": "600M"}, "s")
    assert (scorer.key, scorer.seconds_per_image, scorer.params, scorer.gib) == ("negt2ibench/current", 0.4, 0.6, None)
    assert cost_from_record({"evaluator": "internvl3_8b/pos"}, "x").key == "internvl3_8b"


def test_params_labels():
    assert [parse_params(t) for t in ("8B", "1.5b", "600M", "?", "", None, 11)] == [
        8.0,
        1.5,
        0.6,
        None,
        None,
        None,
        11.0,
    ]


@pytest.mark.parametrize(
    "data, message",
    [
        ([1, 2], "a cost record is a JSON object"),
        ({"params": "8B"}, 'names its evaluator by "judge" or "evaluator"'),
        ({"judge": "j", "peak_memory_gib": -1}, "peak_memory_gib must be a non-negative number"),
        ({"judge": "j", "seconds_per_image": "fast"}, "seconds_per_image must be a non-negative number"),
        ({"judge": "j", "modes": []}, "modes must be an object"),
    ],
)
def test_a_malformed_record_is_one_clear_error(data, message):
    with pytest.raises(UserError, match=message):
        cost_from_record(data, "r.json")


def test_explicit_records_win_over_the_ones_beside_the_results(tmp_path):
    (tmp_path / "q8.run.json").write_text(json.dumps({"judge": "qwen3_vl_8b", "seconds_per_image": 1.0}))
    explicit = tmp_path / "mine.json"
    explicit.write_text(json.dumps({"judge": "qwen3_vl_8b", "seconds_per_image": 0.5}))
    results = [tmp_path / "q8.pos.jsonl", tmp_path / "q8.neg.jsonl", tmp_path / "current.jsonl"]
    assert gather_costs(results)["qwen3_vl_8b"].seconds_per_image == 1.0
    found = gather_costs(results, [explicit])
    assert list(found) == ["qwen3_vl_8b"] and found["qwen3_vl_8b"].seconds_per_image == 0.5
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UserError, match="bad.json: not a JSON cost record"):
        gather_costs(results, [tmp_path / "bad.json"])
    with pytest.raises(UserError, match="no such cost record"):
        gather_costs(results, [tmp_path / "missing.json"])
