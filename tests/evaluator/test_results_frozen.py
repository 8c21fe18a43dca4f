"""`FrozenResultRecord`, the result record the report's reader keeps: the same fields and
properties as a `ResultRecord`, the same lines accepted and refused with the same words, and thawed
back to the same bytes."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from evaluator.results import (
    FrozenResultRecord,
    ObjectResult,
    QuestionResult,
    ResultRecord,
    parse_frozen_result,
    thaw_result,
)
from tests.helpers.report_helpers import hand_results, sweep_files


def _judge_record() -> ResultRecord:
    """A record with every optional part: a judge's questions, an empty mask, a score, measurements."""
    (base,) = hand_results()[:1]
    objects = [ObjectResult(name="dog", present=True, confidence=0.9, box=[1, 2, 3, 4], mask_empty=True)]
    statements = [s.model_copy(update={"observed": ["left of"], "measurements": {"dx": -0.7}}) for s in base.statements]
    questions = [QuestionResult(element="prompt", question="Is there a dog?", p_yes=0.8, p_satisfied=0.8)]
    return base.model_copy(update={"objects": objects, "statements": statements, "questions": questions, "score": 0.5})


def test_every_line_of_a_sweep_thaws_to_its_own_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = [line for path in sweep_files(tmp_path) for line in open(path, "rb").read().splitlines()]
    lines.append(_judge_record().model_dump_json().encode())
    read = 0
    for line in lines:
        try:
            model = ResultRecord.model_validate_json(line)
        except ValidationError as refused:
            with pytest.raises(ValidationError) as by_twin:
                parse_frozen_result(line)
            assert by_twin.value.errors() == refused.errors()
            continue
        twin = parse_frozen_result(line)
        assert type(twin) is FrozenResultRecord
        assert thaw_result(twin) == model and thaw_result(twin).model_dump_json() == model.model_dump_json()
        assert (twin.key, twin.image_score) == (model.key, model.image_score)
        read += 1
    assert read > 1000  # the sweep's records, not only its bad lines


@pytest.mark.parametrize(
    "change",
    [
        {"surplus": 1},  # an extra key, worded by the model ("Extra inputs are not permitted")
        {"objects": [{"name": "dog", "present": True, "confidence": 0.5, "colour": "red"}]},
        {"statements": [{"index": 0, "polarity": "neither", "satisfied": True}]},
        {"sample_index": "two"},
        {"questions": [{"element": "prompt"}]},
    ],
)
def test_a_bad_record_is_refused_in_the_models_words(change):
    line = json.dumps({**json.loads(_judge_record().model_dump_json()), **change})
    with pytest.raises(ValidationError) as by_model:
        ResultRecord.model_validate_json(line)
    with pytest.raises(ValidationError) as by_twin:
        parse_frozen_result(line)
    assert by_twin.value.errors() == by_model.value.errors()
    assert by_model.value.errors()[0]["type"] != "unexpected_keyword_argument"


def test_a_frozen_record_is_read_only_and_a_model_thaws_to_itself():
    twin = parse_frozen_result(_judge_record().model_dump_json())
    with pytest.raises(AttributeError):
        twin.passed = True  # type: ignore[misc]
    model = _judge_record()
    assert thaw_result(model) is model
