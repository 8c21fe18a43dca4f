"""The spot check's policy and its guarantee (space/verification.py), and the check itself on
seeded fabricated and honest files (space/spotcheck.py), with a fast perception-free double.

The bounds are the issue's: a file whose verdicts differ from a re-score on >= 2% of its images
is accepted with probability <= 1%; an honest one (each image flipped with probability 0.2%) is
rejected with probability <= 1%. They are recomputed here from scipy's binomial (and, for the
draw without replacement, the hypergeometric), not read from the module.
"""

from __future__ import annotations

import math
import random

import pytest
from PIL import Image
from scipy.stats import binom, hypergeom

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from space.spotcheck import spot_check, submission_seed
from space.verification import SpotCheckPlan, draw_sample, results_digest, sample_seed, spot_check_plan
from tests.helpers.space_helpers import result_line


@pytest.mark.parametrize("total", [19_200, 4_800, 1_000])
def test_the_plan_meets_both_bounds_exactly(total):
    plan = spot_check_plan(total)
    n, d = plan.sample_size, plan.max_disagreements
    assert n <= total
    assert binom.cdf(d, n, 0.02) <= 0.01  # a file off on 2% of its images gets through
    assert binom.sf(d, n, 0.002) <= 0.01  # an honest file is turned away
    # drawn without replacement from `total` images, of which ceil(2%) disagree: the exact law
    assert hypergeom.cdf(d, total, math.ceil(0.02 * total), n) <= 0.01
    assert hypergeom.sf(d, total, math.floor(0.002 * total), n) <= 0.01
    assert plan.false_accept() == pytest.approx(binom.cdf(d, n, 0.02))
    assert plan.false_reject() == pytest.approx(binom.sf(d, n, 0.002))


def test_the_plan_is_the_smallest_and_the_same_for_every_benchmark_size():
    plan = spot_check_plan(19_200)
    assert (plan.sample_size, plan.max_disagreements) == (577, 4)
    assert spot_check_plan(4_800) == spot_check_plan(1_000) == plan
    for smaller in range(plan.sample_size - 40, plan.sample_size):
        # no tolerance d works for a smaller sample: the honest bound needs d >= the first d below,
        # and with it the cheat bound fails
        honest_d = next(d for d in range(smaller) if binom.sf(d, smaller, 0.002) <= 0.01)
        assert binom.cdf(honest_d, smaller, 0.02) > 0.01


def test_too_few_images_are_all_rescored():
    plan = spot_check_plan(100)
    assert plan.sample_size == 100 and binom.sf(plan.max_disagreements, 100, 0.002) <= 0.01
    with pytest.raises(ValueError):
        spot_check_plan(0)


def test_sample_and_seed():
    plan = SpotCheckPlan(577, 4)
    first = draw_sample(19_200, plan, seed=7)
    assert first == draw_sample(19_200, plan, seed=7) and len(set(first)) == 577 and first == sorted(first)
    assert first != draw_sample(19_200, plan, seed=8)
    digest = results_digest(['{"a": 1}'])
    seed = sample_seed(b"secret", "id1", digest)
    assert seed == sample_seed(b"secret", "id1", digest)
    assert len({seed, sample_seed(b"other", "id1", digest), sample_seed(b"secret", "id2", digest)}) == 3
    assert seed != sample_seed(b"secret", "id1", results_digest(['{"a": 2}']))
    with pytest.raises(ValueError, match="secret is empty"):
        sample_seed(b"", "id1", digest)


class FlatImages:
    """An ImageSource double: the same small image for every key asked."""

    def images(self, keys):
        for key in keys:
            yield key, Image.new("RGB", (64, 64), (120, 120, 120))


def all_fail(images, prompts, model_key, sample_indices):
    return [
        ResultRecord.model_validate(result_line(prompt, index, model_key, passed=False))
        for prompt, index in zip(prompts, sample_indices, strict=True)
    ]


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def truth(prompts):
    """What a re-score finds for every image: all fail (the double's empty scenes)."""
    fail = {p.prompt_id: ResultRecord.model_validate(result_line(p, 0, "toy", passed=False)) for p in prompts}
    return [fail[p.prompt_id].model_copy(update={"sample_index": s}) for p in prompts for s in range(4)]


def flipped(truth, prompts, share: float, seed: int) -> list[ResultRecord]:
    """The true records with `share` of the images, chosen with `seed`, claimed as passes."""
    by_id = {p.prompt_id: p for p in prompts}
    chosen = set(random.Random(seed).sample(range(len(truth)), round(share * len(truth))))
    records = list(truth)
    for position in chosen:
        record = truth[position]
        records[position] = ResultRecord.model_validate(
            result_line(by_id[record.prompt_id], record.sample_index, "toy", passed=True)
        )
    return records


@pytest.mark.slow
@pytest.mark.parametrize("share, accepted", [(0.05, False), (0.25, False), (0.002, True)])
def test_seeded_inflations_are_rejected_and_honest_flips_accepted(truth, prompts, share, accepted):
    index, plan = PromptIndex(prompts), spot_check_plan(len(truth))
    for seed in range(10):
        results = flipped(truth, prompts, share, seed)
        sample = submission_seed(f"submission{seed}", results, secret=b"test secret")
        outcome = spot_check(results, FlatImages(), index, all_fail, plan=plan, seed=sample)
        assert outcome.accepted is accepted, (share, seed, outcome.checked, len(outcome.disagreements))
        if accepted:
            assert outcome.checked == 577 and len(outcome.disagreements) <= 4
