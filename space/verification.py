"""The spot check's policy, with its guarantee: how many images to re-score and how many may disagree.

A submission claims a verdict for each of its images. The Space re-scores a random sample of
them and counts the images whose verdicts differ (the image's pass/fail, or any statement's,
in either direction). `spot_check_plan(total_images)` is the smallest sample, with its largest
number of tolerated disagreements, such that, exactly under the binomial:

- a file whose verdicts differ from a re-score on >= 2% of its images (`CHEAT_RATE`) is accepted
  with probability <= 1% (`ERROR`): `binom.cdf(d, n, 0.02) <= 0.01`;
- an honest file, whose images each flip with probability <= 0.2% (`HONEST_RATE`: hardware
  non-determinism at score margins), is rejected with probability <= 1%: `binom.sf(d, n, 0.002) <= 0.01`.

For the benchmark's 19,200 images that is n = 577, d = 4. The sample is drawn without
replacement, so for the cheat the exact law is hypergeometric, which is tighter than the
binomial here (tests/space/test_verification.py checks both for 19,200, 4,800 and 1,000 images).
For the overall score this means: every inflated image is a disagreement, so a verified (sampled)
entry whose file differs from a re-score by 2 points of overall accuracy or more got through
with probability <= 1% (a category holds a sixth of the images: up to 12 points there).

The sample's seed is `sample_seed(secret, submission_id, results_digest)`: an HMAC of the stored
submission id and its results with a server secret, so nobody can know before submitting which
images will be re-scored. Pure functions: no model, no file, no store.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from scipy.stats import binom

CHEAT_RATE = 0.02  # disagreeing share of images that must be caught ...
HONEST_RATE = 0.002  # ... and the share of flips an honest file may have
ERROR = 0.01  # the largest probability of either mistake
LARGEST_SAMPLE = 20_000  # the search's end (the benchmark has 19,200 images)


@dataclass(frozen=True)
class SpotCheckPlan:
    """Re-score `sample_size` images; accept when at most `max_disagreements` of them disagree."""

    sample_size: int
    max_disagreements: int

    def accepts(self, disagreements: int) -> bool:
        return disagreements <= self.max_disagreements

    def false_accept(self, rate: float = CHEAT_RATE) -> float:
        """P(accept) for a file whose images disagree at `rate` (binomial)."""
        return float(binom.cdf(self.max_disagreements, self.sample_size, rate))

    def false_reject(self, rate: float = HONEST_RATE) -> float:
        """P(reject) for an honest file whose images flip at `rate` (binomial)."""
        return float(binom.sf(self.max_disagreements, self.sample_size, rate))

    def describe(self) -> str:
        return f"{self.sample_size} images re-scored, at most {self.max_disagreements} may disagree"


def _tolerance(sample_size: int, honest: float, error: float) -> int:
    """The fewest disagreements to tolerate so an honest file is rejected with probability <= error."""
    allowed = int(binom.ppf(1 - error, sample_size, honest))
    while binom.sf(allowed, sample_size, honest) > error:
        allowed += 1
    return allowed


@lru_cache(maxsize=64)
def spot_check_plan(
    total_images: int, *, cheat: float = CHEAT_RATE, honest: float = HONEST_RATE, error: float = ERROR
) -> SpotCheckPlan:
    """The smallest sample (and its tolerance) meeting both error bounds, exactly under the binomial.

    For fewer images than that sample needs, every image is re-scored, with the tolerance an
    honest file needs; the bound on cheats then holds only when `cheat` of the images is more
    than that tolerance (the benchmark's 19,200 images are far from it)."""
    if total_images < 1:
        raise ValueError(f"a spot check needs at least one image, got {total_images}")
    if not 0 < honest < cheat < 1 or not 0 < error < 1:
        raise ValueError("need 0 < honest < cheat < 1 and 0 < error < 1")
    for size in range(1, min(total_images, LARGEST_SAMPLE) + 1):
        allowed = _tolerance(size, honest, error)
        if binom.cdf(allowed, size, cheat) <= error:
            return SpotCheckPlan(size, allowed)
    size = min(total_images, LARGEST_SAMPLE)
    return SpotCheckPlan(size, _tolerance(size, honest, error))


def results_digest(lines: Iterable[str]) -> str:
    """SHA-256 of a submission's result records (their JSON lines, in stored order)."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def sample_seed(secret: bytes, submission_id: str, digest: str) -> int:
    """The seed of a submission's sample: HMAC-SHA256 of its id and results under the server's secret."""
    if not secret:
        raise ValueError("the spot check's secret is empty")
    mac = hmac.new(secret, f"{submission_id}:{digest}".encode(), hashlib.sha256)
    return int.from_bytes(mac.digest(), "big")


def draw_sample(total_images: int, plan: SpotCheckPlan, seed: int) -> list[int]:
    """The positions (0 .. total_images - 1) to re-score, without replacement, in ascending order."""
    return sorted(random.Random(seed).sample(range(total_images), min(plan.sample_size, total_images)))
