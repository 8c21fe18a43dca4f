"""The detections type from detector to drawing: per-object selection by class name, the
instances statements use, and the drawing's rows for perception-made and hand-made observations."""

from __future__ import annotations

import numpy as np
import pytest
import supervision as sv

from evaluator.config import PRESETS
from evaluator.observation import ImageObservation, ObjectObservation, best_instances
from tests.helpers.perception_helpers import make_prompt, random_image, tiny_perception


def detections() -> sv.Detections:
    """Five kept detections: cup ×3 (a tie at the top), dog ×1, bus ×1 (below the counting threshold)."""
    return sv.Detections(
        xyxy=np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16], [17, 18, 19, 20]], float),
        confidence=np.array([0.9, 0.9, 0.2, 0.7, 0.1]),
        class_id=np.array([47, 47, 47, 18, 6]),
        data={"class_name": np.array(["cup", "cup", "cup", "dog", "bus"])},
    )


def test_an_object_reads_the_rows_of_its_class():
    cup = ObjectObservation.from_detections("cup", detections(), counting_threshold=0.5)
    assert (cup.present, cup.confidence, cup.box, cup.count) == (True, 0.9, (1.0, 2.0, 3.0, 4.0), 2)
    assert isinstance(cup.confidence, float) and all(isinstance(v, float) for v in cup.box)
    bus = ObjectObservation.from_detections("bus", detections(), counting_threshold=0.5)
    assert (bus.present, bus.confidence, bus.count) == (True, 0.1, 0)
    cat = ObjectObservation.from_detections("cat", detections(), counting_threshold=0.5)
    assert (cat.present, cat.confidence, cat.box, cat.mask, cat.count) == (False, 0.0, None, None, 0)


def test_best_instances_follow_the_names_and_skip_absent_classes():
    used = best_instances(detections(), ["dog", "cat", "cup"])
    assert list(used["class_name"]) == ["dog", "cup"]
    assert used.xyxy.tolist() == [[13, 14, 15, 16], [1, 2, 3, 4]]  # the first of the tied cups
    assert len(best_instances(detections(), ["cat"])) == 0


PROMPTS = [make_prompt("proximity", ["cup", "dog"]), make_prompt("color", ["bus", "car"])]
IMAGES = [random_image(21, (96, 80)), random_image(22, (88, 72))]


@pytest.mark.slow
def test_perception_keeps_the_used_instances_with_their_final_masks():
    for preset in ("current", "no_sam"):
        observations = tiny_perception(PRESETS[preset]).observe(IMAGES, PROMPTS)
        rows_seen = 0
        for observation in observations:
            present = [obj for obj in observation.objects.values() if obj.present]
            drawn = observation.as_detections()
            assert drawn is observation.detections
            assert list(drawn["class_name"]) == [obj.name for obj in present]
            assert drawn.mask.shape == (len(present), observation.height, observation.width)
            for row, obj in enumerate(present):
                assert np.shares_memory(drawn.mask[row], obj.mask)  # one mask, not a copy
                assert np.array_equal(drawn.mask[row], obj.mask) and obj.mask.any()
                assert tuple(drawn.xyxy[row]) == obj.box and drawn.confidence[row] == obj.confidence
            rows_seen += len(present)
        assert rows_seen >= 2, preset


def test_a_hand_made_observation_draws_its_present_objects():
    mask = np.zeros((40, 50), bool)
    mask[5:10, 5:20] = True
    observation = ImageObservation(
        width=50,
        height=40,
        objects={
            "cup": ObjectObservation("cup", True, 0.8, (5.0, 5.0, 20.0, 10.0), mask),
            "dog": ObjectObservation("dog", False),
        },
    )
    drawn = observation.as_detections()
    assert list(drawn["class_name"]) == ["cup"] and drawn.xyxy.tolist() == [[5.0, 5.0, 20.0, 10.0]]
    assert np.array_equal(drawn.mask[0], mask) and drawn.confidence.tolist() == [0.8]
    assert len(ImageObservation(width=50, height=40).as_detections()) == 0
