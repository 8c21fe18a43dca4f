"""The spot check's policy and its guarantee (leaderboard/checks/spot_check_policy.py), and the check itself on
seeded fabricated and honest files (leaderboard/checks/spot_check_run.py), with a fast perception-free double.

The bounds the policy promises: a file whose compared fields differ from a re-score on >= 2% of its
images is accepted with probability <= 1%; an honest one (each image differing with probability
0.26%: 0.2% of verdicts x 40/31, derived below from the corpus) is rejected with probability
<= 1%. They are recomputed here from scipy's binomial (and, for the draw without replacement, the
hypergeometric), not read from the module. The secret's source, NEGT2I_VERIFY_SECRET, is tested
across processes.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from fractions import Fraction

import pytest
from PIL import Image
from scipy.stats import binom, hypergeom

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import SECRET_ENV, verification_secret
from leaderboard.checks.spot_check_policy import (
    HONEST_RATE,
    VERDICT_FLIP_RATE,
    SpotCheckPlan,
    compared_comparisons,
    draw_sample,
    results_digest,
    sample_seed,
    spot_check_plan,
    verdict_comparisons,
)
from leaderboard.checks.spot_check_run import spot_check, submission_seed
from tests.helpers.space_helpers import result_line

HONEST = 0.0026  # 0.2% x 40/31 = 0.258%, rounded up (test_the_honest_rate_is_the_verdicts_scaled_by_the_comparisons)


@pytest.mark.parametrize("total", [19_200, 4_800, 1_000])
def test_the_plan_meets_both_bounds_exactly(total):
    plan = spot_check_plan(total)
    n, d = plan.sample_size, plan.max_disagreements
    assert n <= total
    assert binom.cdf(d, n, 0.02) <= 0.01  # a file off on 2% of its images gets through
    assert binom.sf(d, n, HONEST) <= 0.01  # an honest file is turned away
    # drawn without replacement from `total` images, of which ceil(2%) disagree: the exact law
    assert hypergeom.cdf(d, total, math.ceil(0.02 * total), n) <= 0.01
    assert hypergeom.sf(d, total, math.floor(HONEST * total), n) <= 0.01
    assert plan.false_accept() == pytest.approx(binom.cdf(d, n, 0.02))
    assert plan.false_reject() == pytest.approx(binom.sf(d, n, HONEST))


def test_the_plan_is_the_smallest_and_the_same_for_every_benchmark_size():
    plan = spot_check_plan(19_200)
    assert (plan.sample_size, plan.max_disagreements) == (652, 5)
    assert spot_check_plan(4_800) == spot_check_plan(1_000) == plan
    for smaller in range(plan.sample_size - 40, plan.sample_size):
        # no tolerance d works for a smaller sample: the honest bound needs d >= the first d below,
        # and with it the cheat bound fails
        honest_d = next(d for d in range(smaller) if binom.sf(d, smaller, HONEST) <= 0.01)
        assert binom.cdf(honest_d, smaller, 0.02) > 0.01


def test_the_honest_rate_is_the_verdicts_scaled_by_the_comparisons(prompts):
    """The thresholded comparisons behind an image's verdict and behind its compared fields, counted
    by hand from docs/scoring.md for one prompt of each kind, then over the corpus: the honest
    rate is 0.2% (of verdicts) x 40/31 (compared / verdict comparisons per image)."""
    by_id = {p.prompt_id: p for p in prompts}
    # color 1:1: 2 objects + 2 value tests; causes add nothing (wrong_value / forbidden_rendered once present)
    assert (verdict_comparisons(by_id["color_pos1_neg1_000"]), compared_comparisons(by_id["color_pos1_neg1_000"])) == (
        4,
        4,
    )
    # directional 1:1: 3 objects + 2 predicates; the positive one's other threshold (wrong_value or
    # dead_zone) +1, the negated one's three other thresholds of the pair (dead-zone pass) +3
    assert (
        verdict_comparisons(by_id["directional_pos1_neg1_000"]),
        compared_comparisons(by_id["directional_pos1_neg1_000"]),
    ) == (5, 9)
    # comparative 0:2: 3 objects + 2 predicates, +3 per negated statement (area and height, two thresholds each)
    assert (
        verdict_comparisons(by_id["comparative_pos0_neg2_000"]),
        compared_comparisons(by_id["comparative_pos0_neg2_000"]),
    ) == (5, 11)
    # proximity 2:2 and depth 2:2: one threshold per pair (near / far; the depth difference): nothing added
    for prompt_id in ("proximity_pos2_neg2_000", "depth_pos2_neg2_000"):
        assert verdict_comparisons(by_id[prompt_id]) == compared_comparisons(by_id[prompt_id]) == 9
    verdicts = sum(verdict_comparisons(p) for p in prompts)
    compared = sum(compared_comparisons(p) for p in prompts)
    assert (Fraction(verdicts, len(prompts)), Fraction(compared, len(prompts))) == (Fraction(31, 6), Fraction(20, 3))
    assert VERDICT_FLIP_RATE == 0.002 and HONEST_RATE == HONEST
    assert HONEST_RATE >= VERDICT_FLIP_RATE * compared / verdicts > HONEST_RATE - 0.00005  # 0.258% rounded up


def test_too_few_images_are_all_rescored():
    plan = spot_check_plan(100)
    assert plan.sample_size == 100 and binom.sf(plan.max_disagreements, 100, HONEST) <= 0.01
    with pytest.raises(ValueError):
        spot_check_plan(0)


def test_the_tolerance_is_inclusive_and_the_rates_must_be_ordered():
    assert SpotCheckPlan(10, 2).accepts(2) and not SpotCheckPlan(10, 2).accepts(3)
    assert SpotCheckPlan(10, 0).accepts(0) and not SpotCheckPlan(10, 0).accepts(1)
    assert spot_check_plan(1) == SpotCheckPlan(1, 0)  # one image: re-scored, none may disagree
    for bad in (
        {"honest": 0.0},
        {"honest": 0.02},  # not below the cheat rate
        {"cheat": 1.0},
        {"error": 0.0},
        {"error": 1.0},
    ):
        with pytest.raises(ValueError, match="need 0 < honest < cheat < 1 and 0 < error < 1"):
            spot_check_plan(100, **bad)
    assert spot_check_plan(100, cheat=0.5, error=0.5).sample_size <= 100


def test_sample_and_seed():
    plan = SpotCheckPlan(652, 5)
    first = draw_sample(19_200, plan, seed=7)
    assert first == draw_sample(19_200, plan, seed=7) and len(set(first)) == 652 and first == sorted(first)
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
@pytest.mark.parametrize("share, accepted", [(0.05, False), (0.25, False), (0.0026, True)])
def test_seeded_inflations_are_rejected_and_honest_flips_accepted(truth, prompts, share, accepted):
    index, plan = PromptIndex(prompts), spot_check_plan(len(truth))
    for seed in range(10):
        results = flipped(truth, prompts, share, seed)
        sample = submission_seed(f"submission{seed}", results, secret=b"test secret")
        outcome = spot_check(results, FlatImages(), index, all_fail, plan=plan, seed=sample)
        assert outcome.accepted is accepted, (share, seed, outcome.checked, len(outcome.disagreements))
        if accepted:
            assert outcome.checked == 652 and len(outcome.disagreements) <= 5


SEED_OF_THIS_PROCESS = """
import sys
from leaderboard.checks.spot_check_run import submission_seed
from tests.helpers.space_helpers import result_line
from dataset_builder.loading import load_prompts
from evaluator.results import ResultRecord
prompt = load_prompts(None)[0]
print(submission_seed("submission", [ResultRecord.model_validate(result_line(prompt, 0, "toy", passed=False))]))
"""


def seed_in_a_new_process(secret: str | None) -> int:
    env = {key: value for key, value in os.environ.items() if key != SECRET_ENV}
    if secret is not None:
        env[SECRET_ENV] = secret
    done = subprocess.run(
        [sys.executable, "-c", SEED_OF_THIS_PROCESS], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return int(done.stdout.strip())


@pytest.mark.slow
def test_the_secret_is_negt2i_verify_secret_else_one_per_process(prompts, monkeypatch):
    """A maintainer with the Space's NEGT2I_VERIFY_SECRET draws the Space's samples (another
    process, the same seed); without it every process draws its own, unknown to any other."""
    records = [ResultRecord.model_validate(result_line(prompts[0], 0, "toy", passed=False))]
    digest = results_digest(record.model_dump_json() for record in records)
    monkeypatch.setenv(SECRET_ENV, "the space's secret")
    assert verification_secret() == b"the space's secret"
    here = submission_seed("submission", records)
    assert here == sample_seed(b"the space's secret", "submission", digest)
    assert seed_in_a_new_process("the space's secret") == here  # the same secret elsewhere: the same sample
    assert seed_in_a_new_process("another secret") != here
    monkeypatch.delenv(SECRET_ENV)
    own = verification_secret()
    assert len(own) == 32 and own == verification_secret() and own != b"the space's secret"
    assert submission_seed("submission", records) == sample_seed(own, "submission", digest)
    assert len({seed_in_a_new_process(None), seed_in_a_new_process(None), submission_seed("submission", records)}) == 3
    monkeypatch.setenv(SECRET_ENV, "")  # set but empty: not a secret, so this process's own
    assert verification_secret() == own
