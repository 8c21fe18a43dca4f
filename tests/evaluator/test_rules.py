"""Table 14 rules on synthetic masks: both sides of every threshold, touching/overlapping masks,
dead zones, exact ties, constructed disparity maps, and every input error."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evaluator.config import PRESETS
from evaluator.rules import all_relation_predicates, attribute_values, axis_of, relation_predicates
from tests.helpers.mask_helpers import box, disc, pixel, random_blobs, reference_gap

CURRENT = PRESETS["current"]
PREVIOUS = PRESETS["previous"]


# ----------------------------------------------------------------------------- attributes


def test_color_counts_every_value_within_the_margin():
    scores = {v: 20.0 for v in ("orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")}
    assert attribute_values({**scores, "red": 30.0, "orange": 29.6}, "color") == {"red", "orange"}
    assert attribute_values({**scores, "red": 30.0, "orange": 29.5}, "color") == {"red", "orange"}  # s_v = s_max − β
    assert attribute_values({**scores, "red": 30.0, "orange": 29.4}, "color") == {"red"}


def test_material_uses_the_top_value_only_and_keeps_exact_ties():
    assert attribute_values({"wooden": 25.0, "metal": 24.99, "plastic": 3.0, "glass": 1.0}, "material") == {"wooden"}
    assert attribute_values({"wooden": 25.0, "metal": 25.0, "plastic": 3.0, "glass": 1.0}, "material") == {
        "wooden",
        "metal",
    }


def test_attribute_margin_comes_from_the_config():
    scores = {"wooden": 25.0, "metal": 24.5, "plastic": 3.0, "glass": 1.0}
    assert attribute_values(scores, "material", CURRENT.replace(material_margin=0.5)) == {"wooden", "metal"}


@pytest.mark.parametrize(
    "scores, category, message",
    [
        ({"wooden": 1.0}, "size", "unknown attribute category 'size'"),
        ({"wooden": 1.0, "metal": 2.0, "plastic": 3.0}, "material", "missing glass"),
        ({"wooden": 1.0, "metal": 2.0, "plastic": 3.0, "glass": 1.0, "stone": 9.0}, "material", "unknown stone"),
        ({"wooden": float("nan"), "metal": 2.0, "plastic": 3.0, "glass": 1.0}, "material", "not finite for wooden"),
    ],
)
def test_attribute_errors_name_the_problem(scores, category, message):
    with pytest.raises(ValueError, match=message):
        attribute_values(scores, category)


# ----------------------------------------------------------------------------- directional


def test_geneval_paper_vs_code_worked_example():
    """Two 40×40 boxes, centres 100 px apart horizontally and 20 px vertically, GenEval-like
    constants (shrink 0.1, axis 0.5): the dead zone per axis is 0.1 × 80 = 8 px, so
    dx = −(100 − 8)/|d| and dy = −(20 − 8)/|d|: only the horizontal relation is emitted."""
    geneval_like = CURRENT.replace(directional_shrink=0.1, directional_axis_threshold=0.5)
    a, b = box(100, 50, 40, 40, (400, 400)), box(120, 150, 40, 40, (400, 400))
    result = relation_predicates("directional", a, b, config=geneval_like)
    distance = math.hypot(100, 20)
    assert result.predicates == {"left of"}
    assert result.measurements["dx"] == pytest.approx(-(100 - 8) / distance)
    assert result.measurements["dy"] == pytest.approx(-(20 - 8) / distance)  # ≈ −0.118, inside the dead zone
    assert result.measurements["shrink_x"] == pytest.approx(8.0)
    assert result.measurements["center_distance"] == pytest.approx(distance)
    # B relative to A: the mirror image.
    assert relation_predicates("directional", b, a, config=geneval_like).predicates == {"right of"}


def test_directional_current_constants_by_hand():
    # 20×20 boxes, A's centre 40 px right of and 10 px below B's: shrink 0.075 × 40 = 3 px per axis.
    a, b = box(110, 140, 20, 20), box(100, 100, 20, 20)
    result = relation_predicates("directional", a, b)
    distance = math.hypot(40, 10)
    assert result.measurements["dx"] == pytest.approx(37 / distance)  # 0.897 > 0.45
    assert result.measurements["dy"] == pytest.approx(7 / distance)  # 0.170: vertical dead zone
    assert result.predicates == {"right of"}


NO_SHRINK = CURRENT.replace(directional_shrink=0.0)


@pytest.mark.parametrize("sx, sy", [(1, 1), (-1, 1), (1, -1), (-1, -1)])
def test_directional_both_sides_of_the_axis_threshold(sx, sy):
    horizontal = {1: "right of", -1: "left of"}[sx]
    vertical = {1: "below", -1: "above"}[sy]
    b = pixel(100, 100)
    # dx = 9 / √370 = 0.468 > 0.45 and dy = 17 / √370 = 0.884: both axes.
    both = relation_predicates("directional", pixel(100 + 17 * sy, 100 + 9 * sx), b, config=NO_SHRINK)
    assert both.predicates == {horizontal, vertical}
    # dx = 10 / √500 = 0.447 < 0.45: horizontal dead zone, vertical only.
    vertical_only = relation_predicates("directional", pixel(100 + 20 * sy, 100 + 10 * sx), b, config=NO_SHRINK)
    assert vertical_only.predicates == {vertical}
    # Swap the axes: horizontal only.
    horizontal_only = relation_predicates("directional", pixel(100 + 10 * sy, 100 + 20 * sx), b, config=NO_SHRINK)
    assert horizontal_only.predicates == {horizontal}


def test_directional_shrink_stops_at_zero_and_never_flips_the_sign():
    # 100-wide boxes whose centres are 10 px apart: shrink 0.075 × 200 = 15 px > 10 px.
    a, b = box(150, 60, 10, 100), box(20, 50, 10, 100)
    result = relation_predicates("directional", a, b)
    assert result.measurements["dx"] == 0.0
    assert result.predicates == {"below"}


def test_directional_identical_centres_emit_nothing():
    a, b = box(50, 50, 40, 40), box(60, 60, 20, 20)  # same centre, nested
    result = relation_predicates("directional", a, b)
    assert result.predicates == frozenset()
    assert result.measurements["dx"] == 0.0 and result.measurements["dy"] == 0.0


def test_centres_are_pixel_centroids_not_box_centres():
    # An L shape: box centre (x=9.5) but most pixels in the left column.
    a = np.zeros((200, 200), bool)
    a[0:20, 0:2] = True
    a[18:20, 0:20] = True
    centroid_x = float(np.nonzero(a)[1].mean())
    result = relation_predicates("directional", a, pixel(150, 150))
    assert result.measurements["center_a_x"] == pytest.approx(centroid_x)
    assert centroid_x != pytest.approx(9.5)
    assert result.measurements["extent_sum_x"] == 21  # extents from the bounding box
    assert result.measurements["extent_sum_y"] == 21


# ----------------------------------------------------------------------------- proximity


@pytest.mark.parametrize(
    "b, gap",
    [
        (box(50, 70, 20, 20), 0.0),  # 4-adjacent: touching
        (box(70, 70, 20, 20), 0.0),  # only corners 8-adjacent: touching
        (box(60, 60, 20, 20), 0.0),  # overlapping
        (box(50, 71, 20, 20), 1.0),  # one empty column
        (box(50, 80, 20, 20), 10.0),  # ten empty columns
        (box(72, 73, 20, 20), 4.0),  # diagonal: corner centres (69, 69) and (72, 73) are 5 apart
    ],
)
def test_proximity_gap_definition(b, gap):
    a = box(50, 50, 20, 20)  # rows 50..69, columns 50..69
    result = relation_predicates("proximity", a, b)
    assert result.measurements["gap"] == pytest.approx(reference_gap(a, b))
    assert result.measurements["gap"] == pytest.approx(gap)
    assert result.measurements["touching"] == (gap == 0.0)


def test_proximity_near_and_far_on_both_sides_of_0_75_r():
    a = box(50, 50, 20, 20)
    radius = math.sqrt(400 / math.pi)  # 11.28; 0.75 R = 8.46
    near = relation_predicates("proximity", a, box(50, 78, 20, 20))  # 8 empty columns
    far = relation_predicates("proximity", a, box(50, 79, 20, 20))  # 9 empty columns
    assert near.measurements["radius"] == pytest.approx(radius)
    assert near.measurements["gap"] == 8.0 and near.predicates == {"near"}
    assert far.measurements["gap"] == 9.0 and far.predicates == {"far from"}
    assert relation_predicates("proximity", a, box(55, 55, 5, 5)).predicates == {"near"}  # overlap


def test_proximity_exactly_at_the_threshold_is_far():
    """g = γR exactly (γ chosen so the product is exact in floating point): far from; a hair
    more γ: near. Integer masks cannot put g at 0.75R itself (R involves √π)."""
    a, b = box(50, 50, 20, 20), box(50, 80, 20, 30)  # gap 10
    radius = relation_predicates("proximity", a, b).measurements["radius"]
    factor = 10.0 / radius
    while factor * radius != 10.0:
        factor = np.nextafter(factor, 1.0 if factor * radius < 10.0 else 0.0)
    at = relation_predicates("proximity", a, b, config=CURRENT.replace(proximity_gap_factor=float(factor)))
    assert at.measurements["gap_threshold"] == 10.0 and at.predicates == {"far from"}
    above = float(np.nextafter(factor, 1.0))
    assert relation_predicates("proximity", a, b, config=CURRENT.replace(proximity_gap_factor=above)).predicates == {
        "near"
    }


def test_previous_preset_uses_the_tighter_gap_factor():
    a, b = box(50, 50, 20, 20), box(50, 77, 20, 20)  # gap 7: < 0.75 R = 8.46, ≥ 0.50 R = 5.64
    assert relation_predicates("proximity", a, b).predicates == {"near"}
    assert relation_predicates("proximity", a, b, config=PREVIOUS).predicates == {"far from"}


def test_gap_matches_brute_force_on_random_shapes():
    rng = np.random.default_rng(7)
    for _ in range(120):
        a, b = random_blobs(rng, (64, 64)), random_blobs(rng, (64, 64))
        assert relation_predicates("proximity", a, b).measurements["gap"] == pytest.approx(reference_gap(a, b))


def test_gap_for_a_disc_inside_a_ring():
    """Boxes overlap but masks do not: the search must not stop at the box distance."""
    ring = disc(100, 100, 60) & ~disc(100, 100, 40)
    core = disc(100, 100, 10)
    result = relation_predicates("proximity", ring, core)
    assert result.measurements["gap"] == pytest.approx(reference_gap(ring, core))
    assert 28 <= result.measurements["gap"] <= 30


def test_gap_for_discs_in_opposite_corners():
    """Box-to-box distance underestimates the gap of round shapes on a diagonal: the search widens."""
    a, b = disc(30, 30, 20), disc(170, 170, 25)
    result = relation_predicates("proximity", a, b)
    assert result.measurements["gap"] == pytest.approx(reference_gap(a, b))
    assert result.predicates == {"far from"}


# ----------------------------------------------------------------------------- comparative


def test_comparative_area_both_sides_and_ties_within_the_ratio():
    a = box(10, 10, 10, 10)  # area 100, height 10
    assert relation_predicates("comparative", a, box(50, 50, 10, 10)).predicates == frozenset()
    tie = box(50, 50, 10, 10) | box(60, 50, 1, 5)  # area 105 = 1.05 × 100 exactly, height 11
    result = relation_predicates("comparative", a, tie)
    assert result.measurements["area_b"] == 105 and result.measurements["area_ratio"] == 100 / 105
    assert "bigger than" not in result.predicates and "smaller than" not in result.predicates
    bigger_b = box(50, 50, 10, 10) | box(60, 50, 1, 6)  # area 106 > 105
    assert "smaller than" in relation_predicates("comparative", a, bigger_b).predicates
    assert "bigger than" in relation_predicates("comparative", bigger_b, a).predicates


def test_comparative_height_is_independent_of_area():
    tall, wide = box(10, 10, 40, 10), box(100, 100, 10, 40)  # both area 400
    result = relation_predicates("comparative", tall, wide)
    assert result.predicates == {"taller than"}
    assert relation_predicates("comparative", wide, tall).predicates == {"shorter than"}
    # heights 20 vs 21: 21 is not > 1.05 × 20; 22 is.
    assert relation_predicates("comparative", box(0, 0, 21, 5), box(50, 50, 20, 5)).measurements["height_ratio"] == 1.05
    assert (
        not {"taller than", "shorter than"}
        & relation_predicates("comparative", box(0, 0, 21, 5), box(50, 50, 20, 5)).predicates
    )
    assert "taller than" in relation_predicates("comparative", box(0, 0, 22, 5), box(50, 50, 20, 5)).predicates


def test_previous_preset_size_ratio():
    a, b = box(0, 0, 10, 10), box(50, 50, 11, 10)  # areas 100 vs 110, heights 10 vs 11
    assert relation_predicates("comparative", a, b).predicates == {"smaller than", "shorter than"}
    assert relation_predicates("comparative", a, b, config=PREVIOUS).predicates == frozenset()


# ----------------------------------------------------------------------------- depth


def depth_scene(value_a: float, value_b: float, gap: int, shape=(200, 200)):
    """A: rows 50..89, columns 20..59; B: same rows, to the right with `gap` empty columns.
    Background 0 and one pixel at 1, so the disparity range is exactly 1."""
    a = box(50, 20, 40, 40, shape)
    b = box(50, 60 + gap, 40, 40, shape)
    disparity = np.zeros(shape)
    disparity[0, 0] = 1.0
    disparity[a] = value_a
    disparity[b] = value_b
    return a, b, disparity


def test_depth_touching_objects_emit_by_larger_disparity():
    a, b, disparity = depth_scene(0.9, 0.4, gap=0)
    result = relation_predicates("depth", a, b, disparity)
    assert result.predicates == {"in front of"}
    assert result.measurements["depth_difference"] == pytest.approx(0.5)
    assert result.measurements["depth_threshold"] == pytest.approx(0.05)
    assert relation_predicates("depth", b, a, disparity).predicates == {"behind"}


def test_depth_difference_below_the_base_threshold_emits_nothing():
    a, b, disparity = depth_scene(0.44, 0.40, gap=0)  # 0.04 < 0.05
    assert relation_predicates("depth", a, b, disparity).predicates == frozenset()
    a, b, disparity = depth_scene(0.46, 0.40, gap=0)  # 0.06 ≥ 0.05
    assert relation_predicates("depth", a, b, disparity).predicates == {"in front of"}


def test_depth_difference_is_scaled_by_the_disparity_range_and_the_threshold_is_inclusive():
    a, b, disparity = depth_scene(0.9, 0.4, gap=0)
    disparity[0, 0] = 2.0  # the range is 2: the difference of the means is halved
    assert relation_predicates("depth", a, b, disparity).measurements["depth_difference"] == pytest.approx(0.25)
    a, b, disparity = depth_scene(1.0, 0.0, gap=0)
    disparity[0, 0] = 20.0  # 1 / 20 = 0.05: the base threshold exactly (gap 0)
    at_threshold = relation_predicates("depth", a, b, disparity)
    assert at_threshold.measurements["depth_difference"] == at_threshold.measurements["depth_threshold"] == 0.05
    assert at_threshold.predicates == {"in front of"}


def test_depth_threshold_grows_with_the_gap():
    radius = math.sqrt(1600 / math.pi)  # 22.57
    threshold = 0.05 + 0.10 * 20 / radius  # gap 20: 0.139
    a, b, disparity = depth_scene(0.52, 0.40, gap=20)  # 0.12 < 0.139
    result = relation_predicates("depth", a, b, disparity)
    assert result.measurements["depth_threshold"] == pytest.approx(threshold)
    assert result.predicates == frozenset()
    a, b, disparity = depth_scene(0.55, 0.40, gap=20)  # 0.15 ≥ 0.139
    assert relation_predicates("depth", a, b, disparity).predicates == {"in front of"}


def test_depth_uses_the_facing_surface_only():
    """Gap 4: A's facing surface is its pixels with gap ≤ 4 + 16 to B, i.e. its 17 rightmost
    columns (centre distances 5..21). Those are near (0.9); A's far side is far (0.0)."""
    a, b, disparity = depth_scene(0.0, 0.5, gap=4)
    disparity[50:90, 43:60] = 0.9  # A's 17 rightmost columns
    b_far = (slice(50, 90), slice(64 + 17, 104))
    disparity[b_far] = 0.0  # B's far side too: only its facing 17 columns count
    result = relation_predicates("depth", a, b, disparity)
    assert result.measurements["facing_pixels_a"] == 17 * 40
    assert result.measurements["facing_pixels_b"] == 17 * 40
    assert result.measurements["facing_disparity_a"] == pytest.approx(0.9)
    assert result.measurements["facing_disparity_b"] == pytest.approx(0.5)
    assert result.predicates == {"in front of"}


def test_contact_band_rule_of_the_previous_preset():
    # Band 12 px: objects 12 px apart are in contact, 13 px apart are not.
    a, b, disparity = depth_scene(0.9, 0.4, gap=12)
    in_contact = relation_predicates("depth", a, b, disparity, config=PREVIOUS)
    assert in_contact.predicates == {"in front of"}
    assert in_contact.measurements["depth_threshold"] == pytest.approx(0.05)  # no g/R term
    assert in_contact.measurements["facing_pixels_a"] == 1 * 40  # gap 12 ≤ 12: A's last column only
    a, b, disparity = depth_scene(0.9, 0.4, gap=13)
    apart = relation_predicates("depth", a, b, disparity, config=PREVIOUS)
    assert apart.predicates == frozenset() and apart.measurements["facing_pixels_a"] == 0
    assert apart.measurements["facing_pixels_b"] == 0 and apart.measurements["depth_difference"] is None
    # The current rule still decides the far pair.
    assert relation_predicates("depth", a, b, disparity).predicates == {"in front of"}


def test_depth_with_a_flat_disparity_map_emits_nothing():
    a, b, _ = depth_scene(0.0, 0.0, gap=0)
    result = relation_predicates("depth", a, b, np.full(a.shape, 3.0))
    assert result.predicates == frozenset() and result.measurements["depth_difference"] is None


# ----------------------------------------------------------------------------- shared behaviour and errors


def test_measurements_are_json_safe_plain_python():
    a, b, disparity = depth_scene(0.9, 0.4, gap=3)
    results = all_relation_predicates(a, b, disparity)
    assert set(results) == {"directional", "proximity", "comparative", "depth"}
    for category, result in results.items():
        assert result == relation_predicates(category, a, b, disparity)
        for value in result.measurements.values():
            assert type(value) in (float, int, bool, str, type(None)), (category, value)
        json.dumps(result.measurements)


def test_all_relation_predicates_leaves_out_depth_without_a_disparity_map():
    assert set(all_relation_predicates(box(0, 0, 5, 5), box(9, 9, 5, 5))) == {"directional", "proximity", "comparative"}


def test_non_boolean_masks_count_non_zero_pixels():
    a, b = box(10, 10, 10, 10), box(10, 40, 10, 10)
    assert relation_predicates("directional", a.astype(np.uint8), b.astype(float)) == relation_predicates(
        "directional", a, b
    )


def test_axis_of():
    assert axis_of("directional", "above") == ("above", "below")
    assert axis_of("comparative", "shorter than") == ("taller than", "shorter than")
    with pytest.raises(ValueError, match="not a proximity predicate"):
        axis_of("proximity", "left of")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: relation_predicates("size", box(0, 0, 5, 5), box(9, 9, 5, 5)), "unknown relation category 'size'"),
        (lambda: relation_predicates("proximity", box(0, 0, 5, 5), box(0, 0, 5, 5, (100, 100))), "shapes differ"),
        (lambda: relation_predicates("proximity", np.zeros((3, 3, 3), bool), box(0, 0, 5, 5)), "mask_a must be a 2-D"),
        (lambda: relation_predicates("proximity", box(0, 0, 5, 5), np.zeros(5, bool)), "mask_b must be a 2-D"),
        (lambda: relation_predicates("comparative", np.zeros((200, 200), bool), box(0, 0, 5, 5)), "mask_a is empty"),
        (lambda: relation_predicates("directional", box(0, 0, 5, 5), np.zeros((200, 200), bool)), "mask_b is empty"),
        (lambda: relation_predicates("depth", box(0, 0, 5, 5), box(9, 9, 5, 5)), "need a disparity map"),
        (lambda: relation_predicates("depth", box(0, 0, 5, 5), box(9, 9, 5, 5), np.zeros((10, 10))), "disparity shape"),
        (
            lambda: relation_predicates("depth", box(0, 0, 5, 5), box(9, 9, 5, 5), np.full((200, 200), np.nan)),
            "non-finite",
        ),
        (
            lambda: relation_predicates("depth", box(0, 0, 5, 5), box(9, 9, 5, 5), np.full((200, 200), "x")),
            "must hold real numbers, got dtype <U1",
        ),
        (
            lambda: relation_predicates("depth", box(0, 0, 5, 5), box(9, 9, 5, 5), np.zeros((200, 200), complex)),
            "must hold real numbers, got dtype complex128",
        ),
    ],
)
def test_input_errors_name_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
