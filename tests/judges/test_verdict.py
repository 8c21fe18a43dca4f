"""Judge answers → result records (pure), the negation probe on hand-made records, and the record's bytes."""

from __future__ import annotations

import json
import math

import pytest

from dataset_builder.grammar import parse_prompt
from evaluator.results import ObjectResult, QuestionResult, ResultRecord, StatementResult
from judges.probe import ProbeError, negation_probe
from judges.questions import questions_for
from judges.verdict import RecordContext, judge_error_record, judge_record

RELATION = parse_prompt(
    "a photo of a backpack, a fork, and an apple, where the backpack is left of the fork and is not right of the apple"
).model_copy(update={"prompt_id": "directional_pos1_neg1_000", "group_id": "directional_load2_000"})


def context(mode: str) -> RecordContext:
    return RecordContext(evaluator=f"qwen3_vl_8b/{mode}", evaluator_version="judges-1.0.0", config_hash="abc")


def record_for(mode: str, p_yes: list[float], sample_index: int = 0) -> ResultRecord:
    return judge_record(
        RELATION,
        questions_for(RELATION, mode),
        p_yes,
        context=context(mode),
        model_key="sd_1_5",
        sample_index=sample_index,
    )


def test_pos_record_inverts_the_negated_statement_and_passes_when_every_element_does():
    # backpack, fork, apple present; "left of the fork?" yes; "right of the apple?" no → satisfied.
    record = record_for("pos", [0.9, 0.8, 0.7, 0.6, 0.2])
    assert record.passed is True
    assert record.evaluator == "qwen3_vl_8b/pos" and record.evaluator_version == "judges-1.0.0"
    assert record.score == pytest.approx((0.9 + 0.8 + 0.7 + 0.6 + 0.8) / 5)
    assert record.objects == [
        ObjectResult(name="backpack", present=True, confidence=0.9),
        ObjectResult(name="fork", present=True, confidence=0.8),
        ObjectResult(name="apple", present=True, confidence=0.7),
    ]
    assert record.statements == [
        StatementResult(index=0, polarity="positive", satisfied=True),
        StatementResult(index=1, polarity="negated", satisfied=True),
    ]
    assert record.questions[4] == QuestionResult(
        element="statement:1", question="Is the backpack right of the apple?", p_yes=0.2, p_satisfied=0.8
    )


def test_negated_statement_answered_yes_fails_as_forbidden_rendered():
    record = record_for("pos", [0.9, 0.8, 0.7, 0.6, 0.75])
    assert record.passed is False
    assert record.statements[1] == StatementResult(
        index=1, polarity="negated", satisfied=False, cause="forbidden_rendered"
    )
    assert record.questions[4].p_satisfied == pytest.approx(0.25)


def test_neg_mode_reads_yes_as_satisfied():
    record = record_for("neg", [0.9, 0.8, 0.7, 0.6, 0.75])
    assert record.passed is True
    assert record.questions[4] == QuestionResult(
        element="statement:1", question="Is the backpack not right of the apple?", p_yes=0.75, p_satisfied=0.75
    )


def test_causes_name_a_missing_object_first_then_the_wrong_value():
    # The fork is judged absent: the positive relation to it fails as target_missing.
    record = record_for("pos", [0.9, 0.3, 0.7, 0.4, 0.2])
    assert record.objects[1] == ObjectResult(name="fork", present=False, confidence=0.3)
    assert record.statements[0].cause == "target_missing"
    assert record.passed is False
    # Subject absent: every failing statement blames the subject.
    record = record_for("pos", [0.1, 0.9, 0.9, 0.4, 0.9])
    assert [s.cause for s in record.statements] == ["subject_missing", "subject_missing"]
    # All present: a positive statement answered "no" is a wrong value.
    record = record_for("pos", [0.9, 0.9, 0.9, 0.4, 0.1])
    assert [s.cause for s in record.statements] == ["wrong_value", None]


def test_exactly_one_half_is_not_satisfied():
    record = record_for("pos", [0.9, 0.9, 0.9, 0.5, 0.1])
    assert record.statements[0].satisfied is False and record.passed is False


def test_whole_record_has_one_question_and_no_elements():
    record = record_for("whole", [0.64])
    assert (record.passed, record.score, record.objects, record.statements) == (True, 0.64, [], [])
    assert [q.element for q in record.questions] == ["prompt"]
    assert record_for("whole", [0.5]).passed is False


def test_answers_must_match_questions():
    with pytest.raises(ValueError, match="5 questions but 4 answers"):
        record_for("pos", [0.9, 0.9, 0.9, 0.9])


def test_error_record():
    record = judge_error_record("x_000", "sd_1_5", 2, "bad image: truncated", context=context("neg"))
    assert (record.passed, record.error, record.evaluator, record.score) == (
        False,
        "bad image: truncated",
        "qwen3_vl_8b/neg",
        None,
    )


# -- the record's bytes --------------------------------------------------------------------------


def test_scorer_records_keep_their_bytes_and_judge_records_round_trip():
    scorer = ResultRecord(
        prompt_id="color_pos1_neg0_000",
        model_key="m",
        sample_index=0,
        passed=True,
        evaluator_version="1.0.0",
        config_hash="h",
    )
    assert scorer.model_dump_json() == (
        '{"prompt_id":"color_pos1_neg0_000","model_key":"m","sample_index":0,"passed":true,"objects":[],'
        '"statements":[],"evaluator_version":"1.0.0","config_hash":"h","error":null,"evaluator":"negt2ibench",'
        '"score":null}'
    )
    judged = record_for("pos", [0.9, 0.8, 0.7, 0.6, 0.2])
    text = judged.model_dump_json()
    assert json.loads(text)["questions"][0] == {
        "element": "object:backpack",
        "question": "Is there a backpack in the image?",
        "p_yes": 0.9,
        "p_satisfied": 0.9,
    }
    assert ResultRecord.model_validate_json(text) == judged


# -- negation probe ------------------------------------------------------------------------------


def test_probe_on_hand_made_records():
    # Image 0: "right of the apple?" 0.9 vs "not right of the apple?" 0.2 → flip, |0.9+0.2-1| = 0.1.
    # Image 1: 0.7 vs 0.6 → no flip (both yes), error 0.3. Image 2 is only in the pos run.
    pos = [
        record_for("pos", [0.9, 0.9, 0.9, 0.9, 0.9], sample_index=0),
        record_for("pos", [0.9, 0.9, 0.9, 0.9, 0.7], sample_index=1),
        record_for("pos", [0.9, 0.9, 0.9, 0.9, 0.1], sample_index=2),
    ]
    neg = [
        record_for("neg", [0.9, 0.9, 0.9, 0.9, 0.2], sample_index=0),
        record_for("neg", [0.9, 0.9, 0.9, 0.9, 0.6], sample_index=1),
    ]
    result = negation_probe(pos, neg)
    assert result["judge"] == "qwen3_vl_8b"
    assert (result["n_images"], result["n_statements"], result["flips"]) == (2, 2, 1)
    assert result["flip_rate"] == 0.5
    assert result["complement_error"] == pytest.approx(0.2)
    # pos passes neither paired image (both answer "yes" to the affirmative question); neg passes image 1 only.
    assert result["called_correct_pos"] == 0.0
    assert result["called_correct_neg"] == 0.5


def test_probe_ignores_error_rows_and_returns_nan_without_negated_statements():
    error = judge_error_record(RELATION.prompt_id, "sd_1_5", 0, "bad image: x", context=context("pos"))
    result = negation_probe([error], [record_for("neg", [0.9, 0.9, 0.9, 0.9, 0.2])])
    assert result["n_images"] == 0 and result["n_statements"] == 0
    assert math.isnan(result["flip_rate"]) and math.isnan(result["complement_error"])
    assert math.isnan(result["called_correct_pos"])


def test_probe_refuses_swapped_or_mixed_runs():
    pos, neg = [record_for("pos", [0.9] * 5)], [record_for("neg", [0.9] * 5)]
    with pytest.raises(ProbeError, match="pos_records must be a judge's 'pos' run"):
        negation_probe(neg, pos)
    other = [r.model_copy(update={"evaluator": "internvl3_8b/neg"}) for r in neg]
    with pytest.raises(ProbeError, match="pos run is judge 'qwen3_vl_8b' but the neg run is judge 'internvl3_8b'"):
        negation_probe(pos, other)
