"""The one plan of every sampled check (leaderboard/checks/sampling_plan.py), at its boundaries, and both
checks that sample (the spot check, the regeneration check) sized by it."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from leaderboard.checks import regeneration_policy, spot_check_policy
from leaderboard.checks.sampling_plan import (
    LARGEST_SAMPLE,
    SEARCHED_PLANS,
    SampledPlan,
    draw_positions,
    sampled_check_plan,
    searched_plan,
    tolerated_failures,
)


def test_a_small_plan_derived_by_hand():
    # caught 0.5, honest 0.01, error 0.1. Tolerating 0 failures rejects an honest sample of n with
    # P = 1 - 0.99^n: 0.0100, 0.0199, 0.0297, 0.0394 for n = 1..4, all <= 0.1, so d = 0 throughout;
    # a caught sample passes with P = 0.5^n: 0.5, 0.25, 0.125, 0.0625; the first <= 0.1 is n = 4.
    assert sampled_check_plan(19_200, caught=0.5, honest=0.01, error=0.1) == SampledPlan(4, 0)


def test_the_caught_bound_is_inclusive():
    # error 0.125 = 0.5^3 exactly: n = 3 meets P(accept a caught sample) <= error with equality.
    assert sampled_check_plan(19_200, caught=0.5, honest=0.01, error=0.125) == SampledPlan(3, 0)
    assert sampled_check_plan(19_200, caught=0.5, honest=0.01, error=0.124) == SampledPlan(4, 0)


def test_the_honest_bound_is_inclusive():
    # One item that fails at 0.1: tolerating none rejects it with P = 0.1 exactly, which error 0.1 allows.
    assert tolerated_failures(1, 0.1, 0.1) == 0
    assert tolerated_failures(1, 0.1, 0.099) == 1
    # Two items at 0.1: P(> 0) = 0.19 > 0.1, P(> 1) = 0.01 <= 0.1.
    assert tolerated_failures(2, 0.1, 0.1) == 1


def test_the_tolerance_is_the_first_that_meets_the_bound_scanned_one_by_one():
    # The definition, scanned from 0 here (the product starts at the binomial's quantile and steps up
    # where its rounding fell short). (2, 0.1, 0.01) is such a case: P(X = 2) = 0.01 exactly, which
    # scipy's sf gives as 0.010000000000000002, so the quantile's 1 is one short and 2 is the first.
    from scipy.stats import binom

    for n in (1, 2, 3, 7, 40, 252, 652):
        for honest in (0.0026, 0.03, 0.1, 0.5):
            for error in (0.01, 0.05, 0.1, 0.2):
                first = next(d for d in range(n + 1) if binom.sf(d, n, honest) <= error)
                assert tolerated_failures(n, honest, error) == first, (n, honest, error)
    assert tolerated_failures(2, 0.1, 0.01) == 2


@pytest.mark.parametrize(
    ("caught", "honest", "expected"),
    [
        (0.02, 0.0026, SampledPlan(652, 5)),  # the spot check's rates (docs/leaderboard.md: n = 652, d = 5)
        (0.10 * 0.99, 0.03, SampledPlan(252, 14)),  # the regeneration check's (docs/leaderboard.md: k = 252, m = 14)
    ],
)
def test_the_documented_plans_are_the_smallest_that_meet_both_bounds(caught, honest, expected):
    plan = sampled_check_plan(19_200, caught=caught, honest=honest, error=0.01)
    assert plan == expected
    size, allowed = plan
    # Both bounds hold, d is the fewest that keeps an honest sample, and one item fewer is not enough.
    assert binom.sf(allowed, size, honest) <= 0.01 < binom.sf(allowed - 1, size, honest)
    assert binom.cdf(allowed, size, caught) <= 0.01
    fewer = size - 1
    assert binom.cdf(tolerated_failures(fewer, honest, 0.01), fewer, caught) > 0.01


def test_a_submission_smaller_than_the_sample_is_checked_whole():
    assert sampled_check_plan(2, caught=0.5, honest=0.01, error=0.1) == SampledPlan(2, 0)
    assert sampled_check_plan(1, caught=0.02, honest=0.0026, error=0.01) == SampledPlan(1, 0)  # P(> 0) = 0.26%
    huge = sampled_check_plan(10**9, caught=0.0002, honest=0.0001, error=0.01)
    assert huge.sample_size == LARGEST_SAMPLE


@pytest.mark.parametrize(
    ("total", "caught", "honest", "error"),
    [(0, 0.5, 0.01, 0.1), (10, 0.01, 0.01, 0.1), (10, 0.5, 0.0, 0.1), (10, 1.0, 0.01, 0.1), (10, 0.5, 0.01, 1.0)],
)
def test_a_plan_refuses_rates_out_of_order(total, caught, honest, error):
    with pytest.raises(ValueError):
        sampled_check_plan(total, caught=caught, honest=honest, error=error)


def test_positions_are_distinct_sorted_and_fixed_by_the_seed():
    drawn = draw_positions(19_200, 652, seed=7)
    assert drawn == draw_positions(19_200, 652, seed=7) and drawn != draw_positions(19_200, 652, seed=8)
    assert drawn == sorted(set(drawn)) and len(drawn) == 652 and 0 <= drawn[0] and drawn[-1] < 19_200
    assert draw_positions(3, 652, seed=7) == [0, 1, 2]


def test_both_sampled_checks_are_sized_and_drawn_by_the_one_plan(monkeypatch):
    calls = []

    def spy(total, *, caught, honest, error):
        calls.append((total, round(caught, 6), honest, error))
        return SampledPlan(9, 2)

    drawn = []
    monkeypatch.setattr(spot_check_policy, "sampled_check_plan", spy)
    monkeypatch.setattr(regeneration_policy, "sampled_check_plan", spy)
    for module in (spot_check_policy, regeneration_policy):
        monkeypatch.setattr(module, "draw_positions", lambda total, size, seed: drawn.append((total, size)) or [0])
    spot = spot_check_policy.spot_check_plan.__wrapped__(1_000)  # past the lru_cache
    regen = regeneration_policy.regeneration_plan.__wrapped__(1_000)
    assert (spot.sample_size, spot.max_disagreements) == (9, 2) and (regen.sample_size, regen.max_not_own) == (9, 2)
    # the regeneration check: 10% x 99% caught, 3% of honest images missing t per pair of machines (docs/leaderboard.md)
    assert calls == [(1_000, 0.02, 0.0026, 0.01), (1_000, 0.099, 0.03, 0.01)]
    spot_check_policy.draw_sample(1_000, spot, 1)
    regeneration_policy.draw_regeneration_sample(1_000, regen, 1)
    assert drawn == [(1_000, 9), (1_000, 9)]


@pytest.mark.parametrize(("rates", "plan"), sorted(SEARCHED_PLANS.items()))
def test_the_plans_written_down_are_what_the_search_finds(rates, plan):
    caught, honest, error = rates
    assert searched_plan(LARGEST_SAMPLE, caught=caught, honest=honest, error=error) == plan
    assert searched_plan(plan.sample_size, caught=caught, honest=honest, error=error) == plan  # the smallest total
    # Below its size a submission is checked whole, as the search says too.
    smaller = plan.sample_size - 1
    assert sampled_check_plan(smaller, caught=caught, honest=honest, error=error) == searched_plan(
        smaller, caught=caught, honest=honest, error=error
    )


def test_both_checks_default_rates_are_written_down():
    """So that stating either plan (the Submit tab, a job's plan) needs no search and no scipy."""
    spot = (spot_check_policy.CHEAT_RATE, spot_check_policy.HONEST_RATE, spot_check_policy.ERROR)
    regeneration = (
        regeneration_policy.CHEAT_SHARE * (1 - regeneration_policy.IMPOSTOR_RATE),
        regeneration_policy.HONEST_MISS_RATE,
        regeneration_policy.ERROR,
    )
    assert spot in SEARCHED_PLANS and regeneration in SEARCHED_PLANS
