"""GenEval's rules against GenEval's code (djghosh13/geneval@af4902f, evaluation/evaluate_images.py).

Every expected verdict and reason here is derived by hand from the cited lines of that file, not
from `evaluator.geneval.rules`; the arithmetic is written out beside each case. Line numbers
("evaluate_images.py:233") refer to that commit.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from evaluator.geneval import GENEVAL, GenEvalDetection, geneval_verdict, relative_position, select_detections
from evaluator.geneval.config import GenEvalConfig, parse_options
from evaluator.geneval.prompts import load_geneval_prompts, metadata_problem
from evaluator.geneval.rules import box_iou, colour_requests
from negt2ibench.core.errors import UsageError


def box(cx: float, cy: float, w: float = 10, h: float = 10) -> tuple[float, float, float, float]:
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def det(score: float, at=(50, 50), size=(10, 10), color=None) -> GenEvalDetection:
    return GenEvalDetection(box(*at, *size), score, color)


SINGLE = {"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"}
TWO_DOGS = {
    "tag": "counting",
    "include": [{"class": "dog", "count": 2}],
    "exclude": [{"class": "dog", "count": 3}],  # create_prompts.py: "not N + 1" (seed, Paper vs code 3)
    "prompt": "a photo of two dogs",
}


def right_of(relation: str = "right of") -> dict:
    """GenEval's position metadata: the target first, the subject with [relation, target group]."""
    return {
        "tag": "position",
        "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": [relation, 0]}],
        "prompt": f"a photo of a dog {relation} a cat",
    }


# -- thresholds: float32 scores, strictly above (evaluate_images.py:230-233) ---------------------------
# bbox[index] is mmdet's float32 array; `bbox[...][ordering, 4] > confidence_threshold` compares a float32
# array with a Python float, which numpy (1.23 in GenEval's environment.yml, and 2.x) does in float32:
# float32(0.3) = 0.300000011920929, float32(0.9) = 0.899999976158142.


@pytest.mark.parametrize(
    ("score", "correct"),
    [
        (0.3, False),  # float32(0.3) > float32(0.3) is False
        (float(np.float32(0.3)), False),
        (0.30000002, False),  # rounds to float32(0.3) (8.1e-9 away; the next float32 is 2.2e-8 away)
        (0.3000001, True),  # rounds to 0.30000010, above float32(0.3)
        (0.29999999, False),
    ],
)
def test_the_threshold_is_strict_and_compared_in_float32(score, correct):
    verdict = geneval_verdict(SINGLE, {"dog": [det(score)]})
    assert verdict.correct is correct
    assert verdict.reason == ("" if correct else "expected dog>=1, found 0")  # :179


def test_counting_uses_0_9_in_float32_and_scores_between_count_for_nothing():
    # 0.900000003 > 0.9 in float64, but float32(0.900000003) = float32(0.9) (2.7e-8 away vs 3.3e-8): not above.
    verdict = geneval_verdict(TWO_DOGS, {"dog": [det(0.95), det(0.900000003, at=(80, 50))]})
    assert (verdict.correct, verdict.reason) == (False, "expected dog>=2, found 1")
    # 0.5 passes 0.3 but not counting's 0.9 (:230): two dogs above 0.9, the third ignored -> correct.
    verdict = geneval_verdict(TWO_DOGS, {"dog": [det(0.95), det(0.91, at=(80, 50)), det(0.5, at=(20, 50))]})
    assert (verdict.correct, verdict.reason) == (True, "")
    # Three above 0.9: include (top 2) passes, exclude (3 >= 3, :217) fails.
    three = {"dog": [det(0.95), det(0.91, at=(80, 50)), det(0.92, at=(20, 50))]}
    verdict = geneval_verdict(TWO_DOGS, three)
    assert (verdict.correct, verdict.reason) == (False, "expected dog<3, found 3")  # :219


def test_the_thresholds_come_from_the_options():
    config = GENEVAL.with_options(parse_options(["threshold=0.5", "counting_threshold=0.96"]))
    assert geneval_verdict(SINGLE, {"dog": [det(0.45)]}, config).correct is False
    assert geneval_verdict(TWO_DOGS, {"dog": [det(0.97), det(0.95, at=(80, 50))]}, config).reason == (
        "expected dog>=2, found 1"
    )


# -- selection: sorted, capped at 16, suppression only below 1 (:232-244) ------------------------------


def test_duplicate_boxes_count_twice_unless_max_overlap_is_below_one():
    duplicates = {"dog": [det(0.95), det(0.95)]}  # the same box twice
    assert geneval_verdict(TWO_DOGS, duplicates).correct is True  # NMS_THRESHOLD == 1: no suppression (:241)
    config = GENEVAL.with_options({"max_overlap": "0.5"})  # IoU 1 >= 0.5: the second is dropped
    assert geneval_verdict(TWO_DOGS, duplicates, config).reason == "expected dog>=2, found 1"


def test_overlap_uses_genevals_plus_one_areas():
    # compute_iou (:130-137): (0,0,9,9) and (5,0,14,9) have areas (9-0+1)*(9-0+1) = 100 each, intersection
    # (9-5+1)*(9-0+1) = 50, union 150: IoU 1/3. Without the +1 it would be 36/126 = 0.286.
    a, b = (0.0, 0.0, 9.0, 9.0), (5.0, 0.0, 14.0, 9.0)
    assert box_iou(a, b) == pytest.approx(1 / 3)
    pair = {"dog": [GenEvalDetection(a, 0.95), GenEvalDetection(b, 0.94)]}
    assert geneval_verdict(TWO_DOGS, pair, GENEVAL.replace(max_overlap=0.3)).reason == "expected dog>=2, found 1"
    assert geneval_verdict(TWO_DOGS, pair, GENEVAL.replace(max_overlap=0.34)).correct is True
    assert box_iou((0, 0, -5, -5), (10, 10, 5, 5)) == 0.0  # no union at all: 0 (:137)


def test_more_than_sixteen_instances_are_capped_before_the_exclude_clause():
    scores = [0.99 - 0.002 * i for i in range(20)]
    dogs = [det(score, at=(10 + 5 * i, 50)) for i, score in enumerate(scores)]
    random.Random(0).shuffle(dogs)  # any order: GenEval sorts (:232)
    verdict = geneval_verdict(TWO_DOGS, {"dog": dogs})
    # ordering[:MAX_OBJECTS] (:234) keeps 16; the exclude clause counts that list: "found 16", not 20.
    assert (verdict.correct, verdict.reason) == (False, "expected dog<3, found 16")
    kept = [detection.score for detection in verdict.detected["dog"]]
    assert kept == sorted(scores, reverse=True)[:16]
    # max_objects=2: the capped list has 2 < 3, so the exclude clause passes even with 20 dogs detected.
    assert geneval_verdict(TWO_DOGS, {"dog": dogs}, GENEVAL.replace(max_objects=2)).correct is True


def test_classes_with_nothing_above_the_threshold_are_absent_and_ties_keep_the_order_given():
    first, second = det(0.5, at=(20, 50)), det(0.5, at=(80, 50))
    selected = select_detections({"dog": [first, second], "cat": [det(0.1)]}, "two_object")
    assert list(selected) == ["dog"] and selected["dog"] == (first, second)  # :243: empty classes deleted


# -- include clauses: count, colour on the top `count`, position (:173-213) -----------------------------


def test_colour_is_read_on_the_top_instances_only():
    red_dog = {
        "tag": "colors",
        "include": [{"class": "dog", "count": 1, "color": "red"}],
        "prompt": "a photo of a red dog",
    }
    # found_objects = objects[...][:count] (:176): only the most confident dog's colour counts.
    blue_first = {"dog": [det(0.9, color="blue"), det(0.5, at=(80, 50), color="red")]}
    verdict = geneval_verdict(red_dog, blue_first)
    assert (verdict.correct, verdict.reason) == (False, "expected red dog>=1, found 0 red; and 1 blue")  # :187-189
    red_first = {"dog": [det(0.9, color="red"), det(0.5, at=(80, 50), color="blue")]}
    assert geneval_verdict(red_dog, red_first).correct is True
    # Only the top detection needs a colour; one without any is a caller error.
    assert geneval_verdict(red_dog, {"dog": [det(0.9, color="red"), det(0.5, at=(80, 50))]}).correct is True
    with pytest.raises(ValueError, match="needs the colour"):
        geneval_verdict(red_dog, {"dog": [det(0.9), det(0.5, at=(80, 50), color="red")]})


def test_the_colour_reason_lists_the_colours_seen_in_genevals_order():
    two_red = {"tag": "colors", "include": [{"class": "dog", "count": 2, "color": "red"}], "prompt": "two red dogs"}
    found = {"dog": [det(0.9, color="blue"), det(0.8, at=(80, 50), color="red")]}
    # ", ".join(f"{colors.count(c)} {c}" for c in COLORS if c in colors): COLORS puts red before blue (:76).
    assert geneval_verdict(two_red, found).reason == "expected red dog>=2, found 1 red; and 1 red, 1 blue"
    assert colour_requests(two_red, select_detections(found, "colors")) == {"dog": 2}
    assert colour_requests(two_red, {"dog": found["dog"][:1]}) == {}  # too few: the count fails, no colour read


def test_a_failed_colour_skips_the_position_and_fails_its_group():
    metadata = {
        "tag": "color_attr",
        "include": [
            {"class": "cat", "count": 1, "color": "red"},
            {"class": "dog", "count": 1, "position": ["right of", 0]},
        ],
        "prompt": "a red cat and a dog right of it",
    }
    verdict = geneval_verdict(metadata, {"cat": [det(0.9, color="blue")], "dog": [det(0.9, at=(100, 50))]})
    # The cat's colour fails, so matched_groups[0] is None (:212) and the dog has no target (:196).
    assert verdict.reason == "expected red cat>=1, found 0 red; and 1 blue\nno target for dog to be right of"


def test_missing_targets():
    only_dog = {"dog": [det(0.9, at=(100, 50))]}
    verdict = geneval_verdict(right_of(), only_dog)
    assert verdict.reason == "expected cat>=1, found 0\nno target for dog to be right of"  # :179, :196
    assert geneval_verdict(right_of(), {}).reason == "expected cat>=1, found 0\nexpected dog>=1, found 0"


# -- the position rule (:140-157): dead zone subtracted, divided by the raw distance, cut at 0.5 ----------
# Boxes 10 × 10: dim_a + dim_b = 20 per axis, dead zone 0.1 × 20 = 2 px.


@pytest.mark.parametrize(
    ("dx", "relations"),
    [
        (2.0, ()),  # |2| - 2 = 0 on x, 0 on y: everything under 1e-3 -> set() (:148)
        (2.5, ()),  # revised 0.5 / 2.5 = 0.2: not > 0.5 (the paper's per-axis rule would say "right of")
        (4.0, ()),  # revised 2 / 4 = 0.5 exactly: the cut is strict (:154)
        (4.5, ("right of",)),  # 2.5 / 4.5 = 0.556 > 0.5
        (-4.5, ("left of",)),
    ],
)
def test_offsets_at_the_dead_zone_edges(dx, relations):
    assert relative_position(box(50 + dx, 50), box(50, 50)) == relations


def test_at_45_degrees_both_axes_pass_or_neither():
    # offset (10, 10): revised (8, 8) / 14.142 = 0.566 on each axis -> right of and below (y grows down).
    assert relative_position(box(60, 60), box(50, 50)) == ("right of", "below")
    # 30 × 30 boxes: dead zone 6, revised (4, 4) / 14.142 = 0.283 -> nothing.
    assert relative_position(box(60, 60, 30, 30), box(50, 50, 30, 30)) == ()
    # The reason joins the relations found (:205), here in the rule's order.
    found = {"cat": [det(0.9)], "dog": [det(0.9, at=(60, 60))]}
    assert geneval_verdict(right_of(), found).correct is True
    assert (
        geneval_verdict(right_of("above"), found).reason == "expected dog above target, found right of and below target"
    )


def test_the_seed_example_where_code_and_paper_differ():
    # Seed 001, Paper vs code 2: 40 × 40 boxes, centres 100 px apart horizontally and 20 vertically; dead zone
    # 8 px. offset = (-100, 20): dx = -92 / 101.98 = -0.90 -> left of; dy = 12 / 101.98 = 0.12 -> nothing.
    dog, cat = box(100, 120, 40, 40), box(200, 100, 40, 40)
    assert relative_position(dog, cat) == ("left of",)
    found = {"cat": [GenEvalDetection(cat, 0.9)], "dog": [GenEvalDetection(dog, 0.9)]}
    assert geneval_verdict(right_of("left of"), found).correct is True
    assert geneval_verdict(right_of("below"), found).reason == "expected dog below target, found left of target"


def test_position_against_a_whole_target_group():
    # Two cats required: the dog must be right of both (:198-207); the first pair that fails stops the clause.
    metadata = {
        "tag": "position",
        "include": [{"class": "cat", "count": 2}, {"class": "dog", "count": 1, "position": ["right of", 0]}],
        "prompt": "a dog right of two cats",
    }
    cats = [det(0.9, at=(20, 50)), det(0.8, at=(200, 50))]
    verdict = geneval_verdict(metadata, {"cat": cats, "dog": [det(0.9, at=(100, 50))]})
    assert verdict.reason == "expected dog right of target, found left of target"


def test_detections_in_any_order_give_the_same_verdict():
    found = [det(0.9 - 0.1 * i, at=(30 * i, 50)) for i in range(5)]
    reference = geneval_verdict(TWO_DOGS | {"tag": "two_object"}, {"dog": found})
    for seed in range(5):
        shuffled = list(found)
        random.Random(seed).shuffle(shuffled)
        again = geneval_verdict(TWO_DOGS | {"tag": "two_object"}, {"dog": shuffled})
        assert (again.correct, again.reason, again.detected) == (
            reference.correct,
            reference.reason,
            reference.detected,
        )


def test_details_rows_are_float32_values_as_geneval_writes_them():
    verdict = geneval_verdict(SINGLE, {"dog": [GenEvalDetection((1.1, 2.2, 3.3, 4.4), 0.7)]})
    # box.tolist() of mmdet's float32 row (:255): the float32 values, as Python floats.
    assert verdict.details() == {"dog": [[float(np.float32(v)) for v in (1.1, 2.2, 3.3, 4.4, 0.7)]]}


# -- metadata, options and the shipped prompts ----------------------------------------------------------


def test_malformed_metadata_is_a_clear_error():
    with pytest.raises(ValueError, match="needs a tag"):
        geneval_verdict({"include": []}, {})
    with pytest.raises(ValueError, match="needs a count"):
        geneval_verdict({"tag": "x", "include": [{"class": "dog"}]}, {})
    with pytest.raises(ValueError, match="not an earlier one"):
        bad = {"tag": "position", "include": [{"class": "dog", "count": 1, "position": ["left of", 0]}]}
        geneval_verdict(bad, {"dog": [det(0.9)]})
    assert "earlier include clause" in metadata_problem(
        {"tag": "position", "prompt": "p", "include": [{"class": "dog", "count": 1, "position": ["left of", 0]}]}
    )
    assert "unknown colour" in metadata_problem(
        {"tag": "c", "prompt": "p", "include": [{"class": "d", "count": 1, "color": "teal"}]}
    )


def test_genevals_553_prompts_are_shipped_and_valid():
    prompts = load_geneval_prompts()
    assert len(prompts) == 553 and prompts[0].prompt == "a photo of a bench"
    assert [sum(p.tag == tag for p in prompts) for tag in ("single_object", "two_object", "counting")] == [80, 99, 80]
    assert all(metadata_problem(p.metadata) is None for p in prompts)
    assert prompts[12].prompt_id == "geneval_00012"


def test_options_are_genevals_and_change_the_hash():
    config = GENEVAL.with_options(parse_options(["max_objects=8", "bgcolor=original", "crop=0", "model=my/m2f"]))
    assert (config.max_objects, config.bgcolor, config.crop, config.detector_model_id) == (
        8,
        "original",
        False,
        "my/m2f",
    )
    assert config.config_hash != GENEVAL.config_hash
    assert GENEVAL.replace(name="other").config_hash == GENEVAL.config_hash  # the name is not hashed
    for bad in (["nope=1"], ["threshold"], ["threshold=x"], ["max_objects=-1"], ["bgcolor=notacolour"]):
        with pytest.raises(UsageError):
            GENEVAL.with_options(parse_options(bad))
    assert isinstance(GENEVAL, GenEvalConfig) and GENEVAL.threshold == 0.3 and GENEVAL.position_threshold == 0.1
