"""One plan for every sampled check: how many items to check, and how many may fail, from the error budget.

A sampled check (the spot check, the regeneration check, and any later one) looks at a random sample
of a submission's images and counts those that fail it. A submission is *caught* when each sampled
image fails with probability at least `caught` (a cheat of the size the check exists for), and
*honest* when each fails with probability at most `honest` (what drift does to an honest file). The
plan is the smallest sample n, with the fewest tolerated failures d, such that, exactly under the
binomial:

- an honest submission is rejected with probability <= `error`: `binom.sf(d, n, honest) <= error`;
- a caught one is accepted with probability <= `error`: `binom.cdf(d, n, caught) <= error`.

For fewer items than that n needs, every item is checked with the tolerance an honest file needs;
the bound on a caught file then holds only when it fails more than d of them. Each check states its
own rates and what an item failing means (`spot_check_policy`, `regeneration_policy`). Pure
functions: no model, no file, no store.
"""

from __future__ import annotations

import random
from typing import NamedTuple

LARGEST_SAMPLE = 20_000  # the search's end (the benchmark has 19,200 images)


class SampledPlan(NamedTuple):
    """A sampled check's plan: check `sample_size` items, accept at most `allowed_failures` failing."""

    sample_size: int
    allowed_failures: int


# The plans of the checks' own rates (caught, honest, error), searched once and written down; the
# tests search each again (tests/leaderboard/checks/test_sampling_plan.py). An app that only states
# them (the Submit tab says 652 of 19,200) then never imports scipy.stats, about a second of its start.
SEARCHED_PLANS: dict[tuple[float, float, float], SampledPlan] = {
    (0.02, 0.0026, 0.01): SampledPlan(652, 5),  # the spot check (`spot_check_policy`)
    (0.10 * (1 - 0.01), 0.03, 0.01): SampledPlan(252, 14),  # the regeneration check (`regeneration_policy`)
}


def tolerated_failures(sample_size: int, honest: float, error: float) -> int:
    """The fewest failures to tolerate so that an honest sample is rejected with probability <= error.

    Args:
        sample_size: the items checked.
        honest: the chance that an honest item fails.
        error: the largest P(reject an honest submission).

    Returns:
        The smallest d with `binom.sf(d, sample_size, honest) <= error`.
    """
    from scipy.stats import binom  # imported when a plan is searched, not when a known one is stated

    allowed = int(binom.ppf(1 - error, sample_size, honest))
    while binom.sf(allowed, sample_size, honest) > error:
        allowed += 1
    return allowed


def sampled_check_plan(total: int, *, caught: float, honest: float, error: float) -> SampledPlan:
    """The smallest sample, and the failures it tolerates, that meets both error bounds (module docstring).

    Args:
        total: the items of the submission (at least 1).
        caught: the chance that an item of a submission the check must catch fails (0 < honest < caught < 1).
        honest: the chance that an item of an honest submission fails.
        error: the largest P(accept a caught submission) and P(reject an honest one) (0 < error < 1).

    Returns:
        (sample size, allowed failures), the sample at most `min(total, LARGEST_SAMPLE)` items.

    Raises:
        ValueError: `total` below 1, or the rates out of their order.
    """
    if total < 1:
        raise ValueError(f"a sampled check needs at least one item, got {total}")
    if not 0 < honest < caught < 1 or not 0 < error < 1:
        raise ValueError("need 0 < honest < caught < 1 and 0 < error < 1")
    largest = min(total, LARGEST_SAMPLE)
    known = SEARCHED_PLANS.get((caught, honest, error))
    if known is not None and known.sample_size <= largest:
        return known  # what the search below finds: it stops at the same size whatever the total beyond it
    return searched_plan(largest, caught=caught, honest=honest, error=error)


def searched_plan(largest: int, *, caught: float, honest: float, error: float) -> SampledPlan:
    """`sampled_check_plan`'s search over the sample sizes 1 .. `largest` (its arguments checked there).

    Args:
        largest: the largest sample to consider (the submission's items, at most `LARGEST_SAMPLE`).
        caught, honest, error: as `sampled_check_plan` takes them.

    Returns:
        (sample size, allowed failures): the first size that meets both bounds, else `largest`.
    """
    from scipy.stats import binom

    for size in range(1, largest + 1):
        allowed = tolerated_failures(size, honest, error)
        if binom.cdf(allowed, size, caught) <= error:
            return SampledPlan(size, allowed)
    return SampledPlan(largest, tolerated_failures(largest, honest, error))


def draw_positions(total: int, sample_size: int, seed: int) -> list[int]:
    """The positions a sampled check looks at, drawn without replacement.

    Args:
        total: the items of the submission.
        sample_size: the plan's sample size.
        seed: the sample's seed (each check's HMAC of the submission under the server's secret).

    Returns:
        min(sample_size, total) positions in 0 .. total - 1, in ascending order.
    """
    return sorted(random.Random(seed).sample(range(total), min(sample_size, total)))
