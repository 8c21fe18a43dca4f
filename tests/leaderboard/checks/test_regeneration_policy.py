"""The regeneration check's policy (`leaderboard.checks.regeneration_policy`): k and m from the error budget, checked
exactly against the binomial; the sample's seed in its own domain; the similarity on pictures whose
answer is known; and what an image's row records of its making (`leaderboard.store.image_sources.GenerationRecord`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from scipy.stats import binom

from leaderboard.checks.image_similarity import image_similarity
from leaderboard.checks.regeneration_policy import (
    THRESHOLD,
    draw_regeneration_sample,
    regeneration_plan,
    regeneration_seed,
)
from leaderboard.checks.spot_check_policy import sample_seed
from leaderboard.store.image_sources import GenerationRecord


def test_the_plan_meets_both_bounds_and_is_the_smallest_that_does():
    plan = regeneration_plan(19_200)
    assert (plan.sample_size, plan.max_not_own, plan.threshold) == (114, 4, THRESHOLD)
    # a file with 10% of its images not the model's own, each passing t by chance at most 1%: each sampled
    # image fails with probability 0.099; an honest image falls below t with probability 0.01
    assert binom.cdf(4, 114, 0.099) <= 0.01 and binom.sf(4, 114, 0.01) <= 0.01
    assert plan.false_accept() == pytest.approx(binom.cdf(4, 114, 0.099)) and plan.false_reject() <= 0.01
    # 113 images: 4 tolerated misses leave a cheat at > 1%, 3 leave an honest file at > 1%
    assert binom.cdf(4, 113, 0.099) > 0.01 and binom.sf(3, 113, 0.01) > 0.01
    assert regeneration_plan(4_800) == plan and regeneration_plan(114) == plan
    small = regeneration_plan(40)  # every image, with the tolerance an honest file needs
    assert (small.sample_size, small.max_not_own) == (40, 2) and binom.sf(2, 40, 0.01) <= 0.01 < binom.sf(1, 40, 0.01)
    with pytest.raises(ValueError):
        regeneration_plan(0)


def test_the_sample_has_its_own_seed_and_draws_without_replacement():
    seed = regeneration_seed(b"secret", "entry", "digest")
    assert seed == regeneration_seed(b"secret", "entry", "digest") != sample_seed(b"secret", "entry", "digest")
    assert seed != regeneration_seed(b"other", "entry", "digest")
    drawn = draw_regeneration_sample(19_200, regeneration_plan(19_200), seed)
    assert len(drawn) == len(set(drawn)) == 114 and drawn == sorted(drawn) and drawn[-1] < 19_200


def scene(seed: int, side: int = 256) -> Image.Image:
    """A picture of a few blocks, laid out by SEED."""
    rng = np.random.default_rng(seed)
    pixels = np.full((side, side, 3), 40, dtype=np.uint8)
    for _ in range(5):
        x, y = rng.integers(0, side - 64, size=2)
        pixels[y : y + 64, x : x + 64] = rng.integers(60, 255, size=3)
    return Image.fromarray(pixels)


def test_the_similarity_is_one_for_the_same_picture_and_low_for_another_layout():
    picture = scene(1)
    assert image_similarity(picture, picture.copy()) == pytest.approx(1.0)
    grainy = Image.fromarray(
        np.clip(np.asarray(picture, dtype=float) + np.random.default_rng(0).normal(0, 8, (256, 256, 3)), 0, 255).astype(
            np.uint8
        )
    )
    assert image_similarity(picture, grainy) > 0.9  # fine noise averages away at 64 px
    assert image_similarity(picture, picture.resize((512, 512))) > 0.95  # compared at one size
    assert image_similarity(picture, scene(2)) < THRESHOLD  # the same kind of picture, laid out otherwise


@pytest.mark.parametrize(
    "cells, expected",
    [
        (
            {"seed": 7, "model_id": "a/b", "model_key": "k", "params": json.dumps({"steps": 2})},
            (7, "a/b", {"steps": 2}, ""),
        ),
        ({"seed": True, "params": "not json"}, (None, "", {}, "its params are not JSON")),
        ({"params": "[1, 2]"}, (None, "", {}, "its params are not a JSON object")),
        ({"params": "x" * 70_000}, (None, "", {}, "its params are not JSON")),
        ({}, (None, "", {}, "")),
    ],
)
def test_a_rows_generation_record_is_read_whatever_it_holds(cells, expected):
    record = GenerationRecord.from_cells(cells)
    assert (record.seed, record.model_id, record.params, record.params_problem) == expected
