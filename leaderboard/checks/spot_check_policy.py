"""The spot check's policy, with its guarantee: how many images to re-score and how many may disagree.

A submission claims a record for each of its images. The Space re-scores a random sample of
them and counts the images whose compared fields differ (`leaderboard.checks.compared_fields.COMPARED_FIELDS`: the
image's error state and pass/fail, each object's presence, each statement's verdict, cause and
dead-zone flag, in either direction). `spot_check_plan(total_images)` is the smallest sample,
with its largest number of tolerated disagreements, such that, exactly under the binomial:

- a file whose records differ from a re-score on >= 2% of its images (`CHEAT_RATE`) is accepted
  with probability <= 1% (`ERROR`): `binom.cdf(d, n, 0.02) <= 0.01`;
- an honest file, whose images each differ with probability <= `HONEST_RATE` (hardware
  non-determinism at score margins), is rejected with probability <= 1%: `binom.sf(d, n, HONEST_RATE) <= 0.01`.

The honest rate. The assumption is that an honest re-score flips the *verdict* (pass/fail or a
statement's) of at most 0.2% of the images (`VERDICT_FLIP_RATE`). A compared field changes only
when a thresholded comparison lands on the other side (a detection against the presence
threshold, a value score against s_max - beta, a relation measurement against one of its
thresholds), and a cause or a dead-zone flag flips at the same kind of margin as a verdict. So
the rate scales with the comparisons the fields rest on: `verdict_comparisons(prompt)` (each
object's presence, each statement's own predicate) against `compared_comparisons(prompt)` (also,
for a positive relation, the other predicate of its axis, which tells `wrong_value` from
`dead_zone`; for a negated one, every predicate of the pair, which tells a dead-zone pass). Over
the corpus that is 20/3 against 31/6 comparisons per image, 40/31 as many, so the honest rate is
0.2% x 40/31 = 0.258%, rounded up to 0.26%. For the benchmark's 19,200 images the plan is then
n = 652, d = 5. The sample is drawn without replacement, so for the cheat the exact law is
hypergeometric, which is tighter than the binomial here (tests/leaderboard/checks/test_spot_check_policy.py checks
both for 19,200, 4,800 and 1,000 images, and the rate against the corpus).

For the overall score this means: every inflated image is a disagreement, so a verified (sampled)
entry whose file differs from a re-score by 2 points of overall accuracy or more got through
with probability <= 1% (a category holds a sixth of the images: up to 12 points there). Per
account, not per try, with `leaderboard.checks.full_rescore_policy`: after a spot check rejects one
of an account's files, none of its files is ranked on a sample any more.

The sample's seed is `sample_seed(secret, submission_id, results_digest)`: an HMAC of the stored
submission id and its results with a server secret, so nobody can know before submitting which
images will be re-scored. Pure functions: no model, no file, no store.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from dataset_builder.records import PromptRecord
from evaluator.rules import RELATION_AXES
from leaderboard.checks.sampling_plan import draw_positions, sampled_check_plan

CHEAT_RATE = 0.02  # disagreeing share of images that must be caught ...
VERDICT_FLIP_RATE = 0.002  # the assumption: an honest re-score flips the verdicts of at most 0.2% of images
HONEST_RATE = 0.0026  # ... so any compared field differs on at most 0.2% x 40/31 of them (module docstring)
ERROR = 0.01  # the largest probability of either mistake


@dataclass(frozen=True)
class SpotCheckPlan:
    """Re-score `sample_size` images; accept when at most `max_disagreements` of them disagree."""

    sample_size: int
    max_disagreements: int

    def accepts(self, disagreements: int) -> bool:
        """Whether a spot check that found this many disagreeing images accepts the file.

        Args:
            disagreements: re-scored images that disagree with the submitted records.

        Returns:
            True when they are at most `max_disagreements`.
        """
        return disagreements <= self.max_disagreements

    def false_accept(self, rate: float = CHEAT_RATE) -> float:
        """P(accept) for a file whose images disagree at `rate` (binomial).

        Args:
            rate: the share of the file's images that disagree (default: the cheat the plan is sized for).

        Returns:
            The probability that the sample holds at most `max_disagreements` of them.
        """
        from scipy.stats import binom  # only when a probability is asked for

        return float(binom.cdf(self.max_disagreements, self.sample_size, rate))

    def false_reject(self, rate: float = HONEST_RATE) -> float:
        """P(reject) for an honest file whose images flip at `rate` (binomial).

        Args:
            rate: the share of an honest file's images that flip on re-scoring (default: the plan's).

        Returns:
            The probability that the sample holds more than `max_disagreements` of them.
        """
        from scipy.stats import binom  # only when a probability is asked for

        return float(binom.sf(self.max_disagreements, self.sample_size, rate))

    def describe(self) -> str:
        """The plan in words, for an entry's reason.

        Returns:
            "N images re-scored, at most K may disagree".
        """
        return f"{self.sample_size} images re-scored, at most {self.max_disagreements} may disagree"


@lru_cache(maxsize=64)
def spot_check_plan(
    total_images: int, *, cheat: float = CHEAT_RATE, honest: float = HONEST_RATE, error: float = ERROR
) -> SpotCheckPlan:
    """The smallest sample (and its tolerance) meeting both error bounds: `sampling_plan.sampled_check_plan`.

    For fewer images than that sample needs, every image is re-scored, with the tolerance an
    honest file needs; the bound on cheats then holds only when `cheat` of the images is more
    than that tolerance (the benchmark's 19,200 images are far from it).

    Args:
        total_images: the images of the submitted file.
        cheat: the share of disagreeing images a cheat must be caught at.
        honest: the share of images an honest file flips on re-scoring.
        error: the largest P(accept a cheat) and P(reject an honest file).

    Returns:
        The sample size and the disagreements it tolerates (at most `sampling_plan.LARGEST_SAMPLE` images).

    Raises:
        ValueError: `total_images` below 1, or rates outside 0 < honest < cheat < 1, 0 < error < 1.
    """
    if total_images < 1:
        raise ValueError(f"a spot check needs at least one image, got {total_images}")
    if not 0 < honest < cheat < 1 or not 0 < error < 1:
        raise ValueError("need 0 < honest < cheat < 1 and 0 < error < 1")
    return SpotCheckPlan(*sampled_check_plan(total_images, caught=cheat, honest=honest, error=error))


# Thresholded comparisons per axis of a relation (docs/scoring.md): directional and comparative
# test one measurement against two thresholds (dx < -t, dx > t; a_A > 1.05 a_B, a_B > 1.05 a_A);
# proximity one (g < 0.75 R, else far); depth one (the difference against its threshold; the
# sign, which picks in front of or behind, is far from 0 whenever the threshold is passed).
THRESHOLDS_PER_AXIS = {"directional": 2, "comparative": 2, "proximity": 1, "depth": 1}


def verdict_comparisons(prompt: PromptRecord) -> int:
    """The thresholded comparisons an image's verdict rests on.

    Args:
        prompt: the image's prompt.

    Returns:
        Each object's presence and each statement's own predicate (its value for an attribute, its
        relation's threshold): objects + statements.
    """
    return len(prompt.objects) + len(prompt.statements)


def compared_comparisons(prompt: PromptRecord) -> int:
    """The thresholded comparisons the compared fields rest on.

    The verdict's, and per relation statement the others that decide its cause (positive: the
    axis's other threshold, `wrong_value` or `dead_zone`) or its dead-zone flag (negated: every
    threshold of the pair).

    Args:
        prompt: the image's prompt.

    Returns:
        `verdict_comparisons(prompt)` plus those of the relation statements' causes and flags.
    """
    extra = 0
    if prompt.kind == "relation":
        per_axis = THRESHOLDS_PER_AXIS[prompt.category]
        per_pair = len(RELATION_AXES[prompt.category]) * per_axis
        for statement in prompt.statements:
            extra += per_axis - 1 if statement.polarity == "positive" else per_pair - 1
    return verdict_comparisons(prompt) + extra


def results_digest(lines: Iterable[str]) -> str:
    """SHA-256 of a submission's result records.

    Args:
        lines: the records' JSON lines, in stored order (without their newlines).

    Returns:
        The hex digest of the lines, each followed by a newline.
    """
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def sample_seed(secret: bytes, submission_id: str, digest: str) -> int:
    """The seed of a submission's sample: HMAC-SHA256 of its id and results under the server's secret.

    Args:
        secret: the server's secret (`leaderboard.checks.check_setup.verification_secret`).
        submission_id: the submission's id.
        digest: its results' digest (`results_digest`).

    Returns:
        The MAC as a (256-bit) integer.

    Raises:
        ValueError: an empty secret.
    """
    if not secret:
        raise ValueError("the spot check's secret is empty")
    mac = hmac.new(secret, f"{submission_id}:{digest}".encode(), hashlib.sha256)
    return int.from_bytes(mac.digest(), "big")


def draw_sample(total_images: int, plan: SpotCheckPlan, seed: int) -> list[int]:
    """The positions to re-score, drawn without replacement (`sampling_plan.draw_positions`).

    Args:
        total_images: the images of the file.
        plan: the spot check's plan (its sample size).
        seed: the sample's seed (`sample_seed`).

    Returns:
        min(sample size, total_images) positions in 0 .. total_images - 1, in ascending order.
    """
    return draw_positions(total_images, plan.sample_size, seed)
