"""The fresh draw's policy (`leaderboard.checks.fresh_draw_policy`): its size from the interval it must reach, its
prompts (never a published one, 9 in each of the 48 cells, the same for the same secret), and its
numbers (both accuracies with their intervals, the gap and whether its interval excludes 0)."""

from __future__ import annotations

from collections import Counter

import pytest

from dataset_builder.corpus import DEFAULT_SEED, DEFAULT_TRAIN_SEED, build_corpus, build_train_corpus
from dataset_builder.vocabulary import CATEGORIES, SETTINGS, setting_name
from evaluator.config import EVALUATOR_VERSION, PRESETS
from evaluator.results import ResultRecord
from leaderboard.checks.fresh_draw_policy import (
    FRESH_PER_CELL,
    FRESH_SEED_BASE,
    fresh_draw_size,
    fresh_numbers,
    fresh_prompts,
    fresh_seed,
    worst_half_width,
)
from leaderboard.checks.fresh_draw_run import _fresh_record


def test_432_prompts_reach_a_half_width_of_5_points_and_384_do_not():
    # 1.96^2 x 0.25 / 0.05^2 = 384.15 prompts at the largest variance of a share (1/4): 385 needed,
    # 9 per cell x 48 cells = 432 (8 per cell, 384, is just short)
    assert fresh_draw_size() == 432 and FRESH_PER_CELL == 9
    assert worst_half_width(432) == pytest.approx(4.715, abs=1e-3) and worst_half_width(384) > 5.0
    assert fresh_draw_size(half_width=10.0) == 144  # 96.04 -> 97 -> 3 per cell


@pytest.fixture(scope="module")
def published():
    test, train = build_corpus(DEFAULT_SEED), build_train_corpus(DEFAULT_TRAIN_SEED)
    return {"texts": {r.prompt for r in test + train}, "ids": {r.prompt_id for r in test + train}}


@pytest.mark.parametrize("secret", [b"space secret", b"another"])
def test_no_fresh_prompt_is_a_published_one_and_every_cell_holds_nine(secret, published):
    seed = fresh_seed(secret, "3f2a9c1e" * 4)
    prompts = fresh_prompts(seed)
    assert seed > FRESH_SEED_BASE > max(DEFAULT_SEED, DEFAULT_TRAIN_SEED)
    assert not {p.prompt for p in prompts} & published["texts"]
    assert not {p.prompt_id for p in prompts} & published["ids"]
    assert all(p.prompt_id.startswith("fresh_") for p in prompts)
    cells = Counter((p.category, p.setting) for p in prompts)
    assert cells == {(c, setting_name(*s)): 9 for c in CATEGORIES for s in SETTINGS}
    assert len({p.prompt for p in prompts}) == 432


def test_each_cell_is_sampled_across_its_whole_pool_not_from_its_front():
    """The 9 prompts of a cell are a uniform draw from the cell's unpublished prompts: over the 48 cells their
    positions in the pool (corpus order) average near the middle and reach every fifth of it. A draw that
    took the first 9 of each pool would average near 5% of the way in and never reach the back."""
    from dataset_builder.corpus import build_fresh_corpus, published_combinations, record_combination

    seed = fresh_seed(b"space secret", "0123456789abcdef0123456789abcdef")
    published = published_combinations()
    pools: dict[tuple[str, str], list[str]] = {}
    for record in build_fresh_corpus(seed):
        if record_combination(record) not in published:
            pools.setdefault((record.category, record.setting), []).append(record.prompt_id)
    positions = []  # each drawn prompt's place in its cell's pool, 0 (front) to 1 (back)
    for prompt in fresh_prompts(seed):
        pool = pools[(prompt.category, prompt.setting)]
        positions.append(pool.index(prompt.prompt_id) / (len(pool) - 1))
    assert len(positions) == 432 and min(len(pool) for pool in pools.values()) > 3 * FRESH_PER_CELL
    assert 0.4 < sum(positions) / len(positions) < 0.6  # uniform: 0.5 (its standard error here is 0.014)
    fifths = Counter(min(int(position * 5), 4) for position in positions)
    assert all(70 <= fifths[k] <= 105 for k in range(5)), fifths  # 86.4 expected in each


def test_the_same_secret_gives_the_same_draw_and_another_secret_another():
    entry = "0123456789abcdef0123456789abcdef"
    first = fresh_prompts(fresh_seed(b"space secret", entry), per_cell=1)
    assert first == fresh_prompts(fresh_seed(b"space secret", entry), per_cell=1)
    assert {p.prompt for p in first} != {p.prompt for p in fresh_prompts(fresh_seed(b"other", entry), per_cell=1)}
    assert fresh_seed(b"space secret", entry) != fresh_seed(b"space secret", "f" * 32)  # each entry its own


def record(prompt_id: str, sample: int, passed: bool, error: str | None = None) -> ResultRecord:
    return ResultRecord(
        prompt_id=prompt_id,
        model_key="m",
        sample_index=sample,
        passed=passed,
        error=error,
        evaluator_version=EVALUATOR_VERSION,
        config_hash=PRESETS["current"].config_hash,
    )


def test_the_numbers_are_image_accuracies_with_intervals_and_the_gap():
    # fresh: 2 prompts, 3 of 8 images pass (37.5%); public: 4 prompts, 12 of 16 pass (75%); one error row
    # on each side is left out, as the report leaves it out. Resampling fresh's 2 prompts gives 75% (a, a),
    # 37.5% or 0% (b, b) with probabilities 1/4, 1/2, 1/4: its 2.5th and 97.5th percentiles are 0 and 75
    fresh = [record("a", s, s < 3) for s in range(4)] + [record("b", s, False) for s in range(4)]
    fresh.append(record("b", 4, True, error="unreadable image"))
    public = [record(f"p{k}", s, s != k) for k in range(4) for s in range(4)] + [record("p0", 9, True, "x")]
    numbers = fresh_numbers(fresh, public)
    assert numbers.accuracy == 37.5 and numbers.public == 75.0 and numbers.gap == -37.5
    assert numbers.interval[0] <= 37.5 <= numbers.interval[1] and numbers.interval == (0.0, 75.0)
    assert numbers.public_interval == (75.0, 75.0)  # every public prompt passes 3 of its 4 images
    assert numbers.gap_interval == (-75.0, 0.0)


def test_a_gap_whose_interval_excludes_zero_is_flagged():
    from leaderboard.store.entries import FreshDraw

    common = {"seed": 5, "prompts": 432, "images": 1728, "accuracy": 10.0, "interval": [8.0, 12.0]}
    common |= {"public": 20.0, "public_interval": [19.0, 21.0], "gap": -10.0}
    assert FreshDraw(**common, gap_interval=[-12.5, -7.5]).flagged
    assert not FreshDraw(**common, gap_interval=[-12.5, 0.5]).flagged


def test_the_stored_draw_keeps_each_number_to_2_decimals():
    # fast, beside the slow run's test: 1 of 12 fresh images passes (8.333...%), 3 of 4 public ones
    # (75%): the gap -66.666... is stored as -66.67, the interval bounds likewise (the entry page's
    # precision), never with a third decimal
    fresh = [record(f"f{k}", s, (k, s) == (0, 0)) for k in range(3) for s in range(4)]
    public = [record("p", s, s != 3) for s in range(4)]
    draw = _fresh_record(7, 3, fresh, public)
    assert (draw.seed, draw.prompts, draw.images) == (7, 3, 12)
    assert (draw.accuracy, draw.public, draw.gap) == (8.33, 75.0, -66.67)
    numbers = [*draw.interval, *draw.public_interval, *draw.gap_interval]
    assert [round(number, 2) for number in numbers] == numbers
