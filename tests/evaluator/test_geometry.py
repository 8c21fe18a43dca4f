"""The exact mask geometry behind the relation rules: the three facing-surface methods, the disc
spans and the depth measurements, each against a brute-force full-image reference (moved from
test_rules.py when the geometry engine left `evaluator.rules`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage

from evaluator import geometry
from evaluator.config import PRESETS
from evaluator.rules import all_relation_predicates
from tests.helpers.mask_helpers import reference_gap, scattered_blobs

CURRENT = PRESETS["current"]


# Cost settings that make `facing_window` pick one method (the choice never changes the result).
FACING_METHODS = {
    "edt": {"_EDT_COST_PER_PIXEL": 1e-9, "_KD_COST_PER_POINT": 1e9, "_SPAN_COST_PER_SPAN": 1e9},
    "kd": {"_EDT_COST_PER_PIXEL": 1e9, "_KD_COST_PER_POINT": 1e-9, "_SPAN_COST_PER_SPAN": 1e9},
    "spans": {"_EDT_COST_PER_PIXEL": 1e9, "_KD_COST_PER_POINT": 1e9, "_SPAN_COST_PER_SPAN": 1e-9},
}


@pytest.mark.parametrize("method", sorted(FACING_METHODS))
def test_every_facing_method_agrees_with_brute_force(monkeypatch, method):
    """EDT window, tiled KD-tree and painted disc spans: three exact ways to the same facing pixels,
    for reaches from touching to far beyond the tile size (tiles settled at every level)."""
    for name, cost in FACING_METHODS[method].items():
        monkeypatch.setattr(geometry, name, cost)
    used = {"edt": 0, "kd": 0, "spans": 0}  # calls of each method's function from geometry

    def counted(name, function):
        def call(*args, **kwargs):
            used[name] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(geometry, "_distance_to", counted("edt", geometry._distance_to))
    monkeypatch.setattr(geometry, "_within_reach_kd", counted("kd", geometry._within_reach_kd))
    monkeypatch.setattr(geometry, "_within_reach_spans", counted("spans", geometry._within_reach_spans))
    rng = np.random.default_rng(23)
    shape = (120, 120)
    for trial in range(30):
        a, b = scattered_blobs(rng, shape), scattered_blobs(rng, shape)
        mask_a, geo_a, mask_b, geo_b = geometry.pair_geometry(a, b)
        reach = geometry.reach_for_gap(float(rng.choice([0.0, rng.uniform(0, 10), rng.uniform(10, 150)])))
        expected = a & (ndimage.distance_transform_edt(~b) <= reach)
        y0, x0, window = geometry.facing_window(mask_a, geo_a, mask_b, geo_b, reach)
        found = np.zeros_like(a)
        found[y0 : y0 + window.shape[0], x0 : x0 + window.shape[1]] = window
        assert np.array_equal(found, expected), (trial, reach)
    # The cost settings forced the method under test (and the trials reached it).
    assert {name: count > 0 for name, count in used.items()} == {name: name == method for name in used}


def test_disc_half_widths_follow_the_distance_test_exactly():
    for reach in (1.0, math.sqrt(2) + 1e-9, 5.0, 5.0 + 1e-9, 17.000000001, 63.7):
        offsets = np.arange(-int(reach), int(reach) + 1)
        widths = geometry._disc_half_widths(offsets, reach)
        for dy, w in zip(offsets, widths, strict=False):
            assert math.sqrt(w * w + dy * dy) <= reach < math.sqrt((w + 1) ** 2 + dy * dy)


def reference_depth(mask_a: np.ndarray, mask_b: np.ndarray, disparity: np.ndarray) -> tuple[int, float, int, float]:
    """Facing surfaces of the current preset the slow way: full-image distance transforms."""
    gap = reference_gap(mask_a, mask_b)
    reach = geometry.reach_for_gap(gap + CURRENT.depth_band_px)
    facing_a = mask_a & (ndimage.distance_transform_edt(~mask_b) <= reach)
    facing_b = mask_b & (ndimage.distance_transform_edt(~mask_a) <= reach)
    return (
        int(facing_a.sum()),
        float(disparity[facing_a].mean()),
        int(facing_b.sum()),
        float(disparity[facing_b].mean()),
    )


def test_depth_measurements_equal_a_brute_force_reference_to_the_last_bit():
    rng = np.random.default_rng(5)
    shape = (160, 160)
    for _ in range(25):
        a, b = scattered_blobs(rng, shape), scattered_blobs(rng, shape)
        disparity = rng.random(shape, dtype=np.float32)
        disparity[a] += np.float32(rng.uniform(-0.3, 0.3))
        measured = all_relation_predicates(a, b, disparity)["depth"].measurements
        count_a, mean_a, count_b, mean_b = reference_depth(a, b, disparity)
        assert measured["gap"] == pytest.approx(reference_gap(a, b))
        assert (measured["facing_pixels_a"], measured["facing_pixels_b"]) == (count_a, count_b)
        assert (measured["facing_disparity_a"], measured["facing_disparity_b"]) == (mean_a, mean_b)  # exact
