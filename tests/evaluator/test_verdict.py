"""Verdicts: every failure cause on its own path, cause priority, dead-zone passes, image pass."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dataset_builder.records import PromptRecord, Statement
from evaluator.config import EVALUATOR_VERSION, PRESETS
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.results import ResultRecord
from evaluator.verdict import decide_statements, error_record

SHAPE = (200, 200)
COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")


def prompt(category: str, statements: list[tuple[str, str, str | None, str]]) -> PromptRecord:
    """A prompt record from (polarity, subject, target, predicate) tuples."""
    kind = "attribute" if category in ("color", "material") else "relation"
    num_pos = sum(p == "positive" for p, *_ in statements)
    num_neg = len(statements) - num_pos
    objects: list[str] = []
    for _, subject, target, _ in statements:
        for name in (subject, target):
            if name is not None and name not in objects:
                objects.append(name)
    return PromptRecord(
        prompt_id=f"{category}_pos{num_pos}_neg{num_neg}_000",
        group_id=f"{category}_load{len(statements)}_000",
        category=category,
        kind=kind,
        num_pos=num_pos,
        num_neg=num_neg,
        load=len(statements),
        setting=f"pos{num_pos}_neg{num_neg}",
        prompt="a photo of things",
        objects=objects,
        statements=[
            Statement(index=i, polarity=p, subject=s, target=t, predicate=v, text=f"{s} {v} {t or ''}".strip())
            for i, (p, s, t, v) in enumerate(statements)
        ],
    )


def box_mask(y0: int, x0: int, height: int, width: int) -> np.ndarray:
    mask = np.zeros(SHAPE, bool)
    mask[y0 : y0 + height, x0 : x0 + width] = True
    return mask


def seen(name: str, mask: np.ndarray | None = None, scores: dict | None = None, confidence: float = 0.9):
    box = None
    if mask is not None:
        ys, xs = np.nonzero(mask)
        box = (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
    return ObjectObservation(name=name, present=True, confidence=confidence, box=box, mask=mask, value_scores=scores)


def missing(name: str) -> ObjectObservation:
    return ObjectObservation(name=name, present=False, confidence=0.01)


def image(*objects: ObjectObservation, disparity: np.ndarray | None = None) -> ImageObservation:
    return ImageObservation(width=SHAPE[1], height=SHAPE[0], objects={o.name: o for o in objects}, disparity=disparity)


def color_scores(**top: float) -> dict[str, float]:
    scores = {c: 10.0 for c in COLORS}
    scores.update(top)
    return scores


def run(record: PromptRecord, observation: ImageObservation) -> ResultRecord:
    return decide_statements(record, observation, model_key="toy", sample_index=2)


# Subject at the left of the target, far apart horizontally and aligned vertically.
LEFT = box_mask(80, 10, 40, 40)
RIGHT = box_mask(80, 150, 40, 40)


# ----------------------------------------------------------------------------- attributes


def test_attribute_positive_pass_and_wrong_value():
    record = prompt("color", [("positive", "cup", None, "red")])
    good = run(record, image(seen("cup", LEFT, color_scores(red=30.0))))
    assert good.passed and good.statements[0].satisfied and good.statements[0].cause is None
    assert good.statements[0].observed == ["red"]
    assert good.statements[0].measurements["scores"]["red"] == 30.0
    bad = run(record, image(seen("cup", LEFT, color_scores(blue=30.0))))
    assert not bad.passed and bad.statements[0].cause == "wrong_value" and bad.statements[0].observed == ["blue"]


def test_attribute_negated_forbidden_rendered_even_within_the_margin():
    record = prompt("color", [("negated", "cup", None, "red")])
    # red within 0.5 of the top value counts as present: the negation fails.
    result = run(record, image(seen("cup", LEFT, color_scores(blue=30.0, red=29.7))))
    assert result.statements[0].cause == "forbidden_rendered"
    assert result.statements[0].observed == ["red", "blue"]  # vocabulary order
    passed = run(record, image(seen("cup", LEFT, color_scores(blue=30.0, red=29.0))))
    assert passed.passed and not passed.statements[0].dead_zone_pass


def test_attribute_subject_missing():
    record = prompt("material", [("positive", "cup", None, "glass"), ("negated", "bowl", None, "metal")])
    scores = {"wooden": 1.0, "metal": 2.0, "plastic": 3.0, "glass": 9.0}
    result = run(record, image(seen("cup", LEFT, scores), missing("bowl")))
    assert [s.cause for s in result.statements] == [None, "subject_missing"]
    assert result.statements[1].observed == [] and not result.passed
    assert [(o.name, o.present) for o in result.objects] == [("cup", True), ("bowl", False)]


def test_present_attribute_object_without_scores_is_a_perception_bug():
    record = prompt("color", [("positive", "cup", None, "red")])
    with pytest.raises(ValueError, match="no color value scores"):
        run(record, image(seen("cup", LEFT)))


# ----------------------------------------------------------------------------- relations


def test_relation_positive_pass():
    record = prompt("directional", [("positive", "cat", "dog", "left of")])
    result = run(record, image(seen("cat", LEFT), seen("dog", RIGHT)))
    assert result.passed
    statement = result.statements[0]
    assert statement.satisfied and statement.observed == ["left of"]
    assert statement.measurements["dx"] < -0.45


def test_relation_wrong_value_when_the_opposite_is_emitted():
    record = prompt("directional", [("positive", "cat", "dog", "left of")])
    result = run(record, image(seen("cat", RIGHT), seen("dog", LEFT)))
    assert result.statements[0].cause == "wrong_value" and result.statements[0].observed == ["right of"]


def test_relation_dead_zone_when_nothing_is_emitted_on_the_axis():
    record = prompt("directional", [("positive", "cat", "dog", "left of")])
    above = box_mask(10, 80, 40, 40)  # straight above: vertical relation only
    below = box_mask(150, 80, 40, 40)
    result = run(record, image(seen("cat", above), seen("dog", below)))
    assert result.statements[0].observed == ["above"]
    assert result.statements[0].cause == "dead_zone"


def test_proximity_asked_near_got_far_is_a_wrong_value():
    record = prompt("proximity", [("positive", "cat", "dog", "near")])
    result = run(record, image(seen("cat", LEFT), seen("dog", RIGHT)))
    assert result.statements[0].observed == ["far from"] and result.statements[0].cause == "wrong_value"


def test_comparative_dead_zone_on_the_area_axis_while_height_is_emitted():
    record = prompt("comparative", [("positive", "cat", "dog", "bigger than")])
    tall, wide = box_mask(10, 10, 40, 10), box_mask(100, 100, 10, 40)  # same area, different heights
    result = run(record, image(seen("cat", tall), seen("dog", wide)))
    assert result.statements[0].observed == ["taller than"]
    assert result.statements[0].cause == "dead_zone"


def test_negated_relation_forbidden_rendered():
    record = prompt("directional", [("negated", "cat", "dog", "left of")])
    result = run(record, image(seen("cat", LEFT), seen("dog", RIGHT)))
    assert result.statements[0].cause == "forbidden_rendered" and not result.passed


def test_negated_relation_dead_zone_pass_and_plain_pass():
    record = prompt("directional", [("negated", "cat", "dog", "left of")])
    stacked, under = box_mask(80, 80, 40, 40), box_mask(84, 84, 40, 40)  # same place: no predicate at all
    dead_zone = run(record, image(seen("cat", stacked), seen("dog", under)))
    assert dead_zone.passed and dead_zone.statements[0].dead_zone_pass and dead_zone.statements[0].observed == []
    above, below = box_mask(10, 80, 40, 40), box_mask(150, 80, 40, 40)  # "above" emitted: an ordinary pass
    vertical = run(record, image(seen("cat", above), seen("dog", below)))
    assert vertical.passed and not vertical.statements[0].dead_zone_pass
    assert vertical.statements[0].observed == ["above"]
    opposite = run(record, image(seen("cat", RIGHT), seen("dog", LEFT)))  # right of: a real pass
    assert opposite.passed and not opposite.statements[0].dead_zone_pass


def test_depth_statement_with_a_disparity_map():
    record = prompt("depth", [("positive", "cat", "dog", "in front of"), ("negated", "cat", "bird", "behind")])
    cat, dog, bird = box_mask(50, 20, 40, 40), box_mask(50, 60, 40, 40), box_mask(120, 20, 40, 40)
    disparity = np.zeros(SHAPE)
    disparity[cat], disparity[dog], disparity[bird] = 0.9, 0.2, 0.88
    result = run(record, image(seen("cat", cat), seen("dog", dog), seen("bird", bird), disparity=disparity))
    assert result.statements[0].satisfied and result.statements[0].observed == ["in front of"]
    assert result.statements[1].satisfied and result.statements[1].dead_zone_pass  # 0.02 apart: nothing
    assert result.passed


def test_depth_without_disparity_is_a_perception_bug():
    record = prompt("depth", [("positive", "cat", "dog", "in front of")])
    with pytest.raises(ValueError, match="disparity"):
        run(record, image(seen("cat", LEFT), seen("dog", RIGHT)))


def test_cause_priority_subject_before_target_before_rules():
    record = prompt(
        "directional",
        [("positive", "cat", "dog", "left of"), ("negated", "cat", "bird", "above")],
    )
    both_missing = run(record, image(missing("cat"), missing("dog"), seen("bird", RIGHT)))
    assert [s.cause for s in both_missing.statements] == ["subject_missing", "subject_missing"]
    target_missing = run(record, image(seen("cat", LEFT), missing("dog"), seen("bird", RIGHT)))
    assert [s.cause for s in target_missing.statements] == ["target_missing", None]
    assert target_missing.statements[0].measurements == {} and not target_missing.passed


def test_present_relation_object_without_mask_is_a_perception_bug():
    record = prompt("proximity", [("positive", "cat", "dog", "near")])
    with pytest.raises(ValueError, match="'dog' is present but has no mask"):
        run(record, image(seen("cat", LEFT), seen("dog")))


def test_unreported_objects_count_as_missing():
    record = prompt("proximity", [("positive", "cat", "dog", "near")])
    result = run(record, image(seen("cat", LEFT)))
    assert result.statements[0].cause == "target_missing"
    assert result.objects[1].present is False and result.objects[1].confidence == 0.0


def test_mixed_prompt_record_fields_and_json_round_trip():
    record = prompt(
        "directional",
        [
            ("positive", "cat", "dog", "left of"),
            ("positive", "cat", "bird", "above"),
            ("negated", "cat", "cow", "left of"),
            ("negated", "cat", "fox", "below"),
        ],
    )
    observation = image(
        seen("cat", box_mask(80, 80, 20, 20), confidence=0.8),
        seen("dog", box_mask(80, 160, 20, 20)),  # right of the cat: cat is left of dog ✓
        seen("bird", box_mask(85, 10, 20, 20)),  # beside the cat: "above" not emitted → dead zone
        seen("cow", box_mask(80, 150, 20, 20)),  # cat left of cow → forbidden
        seen("fox", box_mask(10, 85, 20, 20)),  # fox above the cat: cat below fox → forbidden
    )
    result = decide_statements(record, observation, model_key="toy", sample_index=3, config=PRESETS["previous"])
    assert [s.cause for s in result.statements] == [None, "dead_zone", "forbidden_rendered", "forbidden_rendered"]
    assert [s.polarity for s in result.statements] == ["positive", "positive", "negated", "negated"]
    assert not result.passed
    assert result.config_hash == PRESETS["previous"].config_hash != PRESETS["current"].config_hash
    assert result.evaluator_version == EVALUATOR_VERSION
    assert (result.model_key, result.prompt_id, result.sample_index) == ("toy", record.prompt_id, 3)
    assert result.objects[0].model_dump() == {
        "name": "cat",
        "present": True,
        "confidence": 0.8,
        "box": [80.0, 80.0, 100.0, 100.0],
    }
    assert [o.name for o in result.objects] == record.objects
    assert ResultRecord.model_validate_json(result.model_dump_json()) == result
    json.loads(result.model_dump_json())


def test_unknown_predicate_for_the_category_is_refused():
    record = prompt("proximity", [("positive", "cat", "dog", "left of")])
    with pytest.raises(ValueError, match="not a proximity predicate"):
        run(record, image(seen("cat", LEFT), seen("dog", RIGHT)))


def test_error_record():
    record = error_record("color_pos1_neg0_000", "toy", 1, "image is not a PNG", PRESETS["no_sam"])
    assert not record.passed and record.error == "image is not a PNG"
    assert record.statements == [] and record.objects == []
    assert record.config_hash == PRESETS["no_sam"].config_hash
    with pytest.raises(ValueError, match="needs a reason"):
        error_record("color_pos1_neg0_000", "toy", 1, " ")


@pytest.mark.slow
def test_invariants_over_real_corpus_prompts_with_random_observations():
    """Every category and setting of the built corpus, random perception: the record is always
    consistent (one cause exactly when failed, dead-zone passes only on passing negated
    relations, image pass = all present and all satisfied)."""
    from dataset_builder.loading import load_prompts
    from dataset_builder.vocabulary import CATEGORY_VOCABULARY

    rng = np.random.default_rng(5)
    prompts = [p for p in load_prompts() if p.prompt_id.endswith(("_000", "_001", "_002"))]
    assert len(prompts) == 6 * 8 * 3
    causes_seen = set()
    for record in prompts:
        objects = []
        for name in record.objects:
            if rng.random() < 0.1:
                objects.append(missing(name))
                continue
            y, x = rng.integers(0, 160, 2)
            h, w = rng.integers(5, 40, 2)
            scores = None
            if record.kind == "attribute":
                scores = {v: float(rng.normal(20, 1)) for v in CATEGORY_VOCABULARY[record.category]}
            objects.append(seen(name, box_mask(int(y), int(x), int(h), int(w)), scores))
        disparity = rng.random(SHAPE) if record.category == "depth" else None
        result = decide_statements(record, image(*objects, disparity=disparity), model_key="toy", sample_index=0)
        assert [o.name for o in result.objects] == record.objects
        for statement, verdict in zip(record.statements, result.statements, strict=False):
            assert verdict.index == statement.index and verdict.polarity == statement.polarity
            assert (verdict.cause is None) == verdict.satisfied
            causes_seen.add(verdict.cause)
            if verdict.dead_zone_pass:
                assert verdict.satisfied and statement.polarity == "negated" and record.kind == "relation"
            if verdict.cause == "dead_zone":
                assert statement.polarity == "positive" and record.category != "proximity"
        assert result.passed == (all(o.present for o in result.objects) and all(s.satisfied for s in result.statements))
    assert {"subject_missing", "target_missing", "forbidden_rendered", "wrong_value", "dead_zone", None} <= causes_seen


def _empty_mask_object(name: str, box: tuple[float, float, float, float]) -> ObjectObservation:
    """A detected object whose mask came back empty (it keeps its box)."""
    return ObjectObservation(name=name, present=True, confidence=0.7, box=box, mask=np.zeros(SHAPE, bool))


@pytest.mark.parametrize(
    "category, predicate",
    [("proximity", "near"), ("proximity", "far from"), ("directional", "left of"), ("comparative", "bigger than")],
)
def test_an_empty_mask_makes_the_pair_unmeasurable(category, predicate):
    record = prompt(category, [("positive", "cat", "dog", predicate), ("negated", "cat", "bird", predicate)])
    observation = image(
        _empty_mask_object("cat", (10.0, 80.0, 50.0, 120.0)), seen("dog", RIGHT), seen("bird", box_mask(0, 0, 5, 5))
    )
    result = run(record, observation)
    positive, negated = result.statements
    assert (positive.satisfied, positive.cause, positive.observed) == (False, "dead_zone", [])
    assert (negated.satisfied, negated.cause, negated.dead_zone_pass, negated.observed) == (True, None, True, [])
    assert positive.measurements == {"empty_mask_subject": True, "empty_mask_target": False}
    assert [o.mask_empty for o in result.objects] == [True, False, False]
    assert [o.present for o in result.objects] == [True, True, True] and result.objects[0].box == [10, 80, 50, 120]
    line = json.loads(result.model_dump_json())
    assert line["objects"][0]["mask_empty"] is True and "mask_empty" not in line["objects"][1]


def test_an_empty_target_mask_in_depth_gives_no_predicate():
    record = prompt("depth", [("negated", "cat", "dog", "in front of")])
    disparity = np.linspace(0, 1, SHAPE[0] * SHAPE[1]).reshape(SHAPE)
    result = run(
        record, image(seen("cat", LEFT), _empty_mask_object("dog", (150.0, 80.0, 190.0, 120.0)), disparity=disparity)
    )
    statement = result.statements[0]
    assert statement.satisfied and statement.dead_zone_pass
    assert statement.measurements == {"empty_mask_subject": False, "empty_mask_target": True}
    assert result.passed and [o.mask_empty for o in result.objects] == [False, True]


def test_an_empty_mask_attribute_object_is_judged_on_its_scores():
    record = prompt("color", [("positive", "cup", None, "red")])
    cup = _empty_mask_object("cup", (1.0, 1.0, 9.0, 9.0))
    cup.value_scores = color_scores(red=30.0)
    result = run(record, image(cup))
    assert result.passed and result.objects[0].mask_empty and result.statements[0].observed == ["red"]


def test_records_without_empty_masks_keep_their_bytes():
    record = prompt("directional", [("positive", "cat", "dog", "left of")])
    result = run(record, image(seen("cat", LEFT), seen("dog", RIGHT)))
    assert "mask_empty" not in result.model_dump_json()
    assert ResultRecord.model_validate_json(result.model_dump_json()) == result
