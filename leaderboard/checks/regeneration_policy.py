"""The regeneration check's policy: how many images to regenerate, how alike is "the model's own", how many may not be.

The spot check proves that a file's verdicts match its images; it cannot see where the images came
from. So the verification job also regenerates a sample of them from the recorded model, commit,
seed and settings (`generation.reproduce.recorded_spec`) and compares each with the submitted image.

**The similarity** (`leaderboard.checks.image_similarity.image_similarity`, its own module: the job computes it,
the Space, which plans jobs from this one, does not) is SSIM (Wang et al. 2004, scikit-image's
`structural_similarity` with their Gaussian window, sigma 1.5, K1 0.01, K2 0.03) of the two images
in grey, each resized to 64 x 64. The seed fixes an image's layout: where things are, their shapes,
light and dark. Another seed of the same prompt draws the same things elsewhere, and a semantic
embedding (DINOv2, SigLIP) is built to call those alike, which is exactly what must be told apart
here. SSIM at 64 px compares the layout and averages away the fine texture where hardware drift
(another GPU, attention kernel, precision or batch size) lands. It needs no weights and is
deterministic on the CPU. `benchmarks/regeneration_calibration.py` measures both sides.

**An image is the model's own** when its similarity to the regenerated image is at least t
(`THRESHOLD`), and its recorded seed is the benchmark's seed for its sample
(`generation.reproduce.seed_problem`: the seed is fixed by prompt and sample, so best-of-n over
other seeds cannot be recorded honestly).

**The plan** (`regeneration_plan(total_images)`): k images, at most m not the model's own, chosen
as the spot check's n and d are (`leaderboard.checks.spot_check_policy`), exactly under the binomial:

- a file in which 10% or more of the images are not the model's own (`CHEAT_SHARE`) is accepted with
  probability <= 1% (`ERROR`). Such an image passes the similarity test by chance with probability
  <= 1% (`IMPOSTOR_RATE`), so each sampled image fails it with probability >= 10% x 99%;
- an honest file, each of whose images falls below t with probability <= 1% (`HONEST_MISS_RATE`,
  hardware drift), is rejected with probability <= 1%.

For the benchmark's 19,200 images that is **k = 114, m = 4**. A file with fewer images than k has
every image regenerated. A 10% share bounds what best-of-n buys: each replaced image raises the
overall accuracy by at most one image's share, so an entry passes with more than 10 points bought
this way with probability <= 1% (best-of-4 replaces most images and is caught for certain).

**t is provisional.** `THRESHOLD` = 0.5 lies in the gap the calibration on tiny random pipelines
shows (benchmarks/RESULTS.md: the same seed under every perturbation measured there and injected
latent drift up to sigma = 1 >= 0.69; other seeds and another model <= 0.15; the separating t
0.42). It will be set from `benchmarks/gpu.sh`'s run on a real model: the midpoint between the 1st
percentile of the same seed under the perturbations real runs see and the 99th percentile of other
seeds, kept only if the observed error rates there are within `HONEST_MISS_RATE` and
`IMPOSTOR_RATE` (docs/leaderboard.md).

The sample's seed is the spot check's HMAC (`leaderboard.checks.spot_check_policy.sample_seed`) of the
submission id and its results under the server secret, in its own domain (`regeneration_seed`).
Pure functions: no model, no file, no store.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from leaderboard.checks.sampling_plan import draw_positions, sampled_check_plan
from leaderboard.checks.spot_check_policy import sample_seed

CHEAT_SHARE = 0.10  # share of images not the model's own that must be caught ...
IMPOSTOR_RATE = 0.01  # ... when such an image reaches t by chance at most this often
HONEST_MISS_RATE = 0.01  # the assumption: an honest image falls below t at most this often (provisional)
ERROR = 0.01  # the largest probability of either mistake
THRESHOLD = 0.5  # t: the model's own when the similarity is at least this (provisional, module docstring)


@dataclass(frozen=True)
class RegenerationPlan:
    """Regenerate `sample_size` images; accept when at most `max_not_own` are not the model's own."""

    sample_size: int
    max_not_own: int
    threshold: float = THRESHOLD

    def accepts(self, not_own: int) -> bool:
        """Whether a regeneration check that found this many images not the model's own accepts the file.

        Args:
            not_own: sampled images whose regeneration fell below the threshold (or could not be made).

        Returns:
            True when they are at most `max_not_own`.
        """
        return not_own <= self.max_not_own

    def is_own(self, similarity: float) -> bool:
        """Whether a submitted image is the model's own, by its similarity to the image regenerated.

        Args:
            similarity: SSIM of the submitted and regenerated images (`image_similarity`).

        Returns:
            True at or above the plan's threshold.
        """
        return similarity >= self.threshold

    def false_accept(self, share: float = CHEAT_SHARE, impostor: float = IMPOSTOR_RATE) -> float:
        """P(accept) for a file of which `share` of the images are not the model's own (binomial).

        Args:
            share: the share of the file's images that are not the model's own.
            impostor: the chance that such an image still reaches the threshold.

        Returns:
            The probability that the sample holds at most `max_not_own` images below the threshold.
        """
        from scipy.stats import binom  # only when a probability is asked for

        return float(binom.cdf(self.max_not_own, self.sample_size, share * (1 - impostor)))

    def false_reject(self, miss: float = HONEST_MISS_RATE) -> float:
        """P(reject) for an honest file whose images fall below the threshold at `miss` (binomial).

        Args:
            miss: the share of an honest file's images whose regeneration falls below the threshold.

        Returns:
            The probability that the sample holds more than `max_not_own` of them.
        """
        from scipy.stats import binom  # only when a probability is asked for

        return float(binom.sf(self.max_not_own, self.sample_size, miss))

    def describe(self) -> str:
        """The plan in words, for an entry's reason.

        Returns:
            "N images regenerated, at most K may fall below similarity T".
        """
        return (
            f"{self.sample_size} images regenerated, at most {self.max_not_own} may fall below "
            f"similarity {self.threshold:g}"
        )


@lru_cache(maxsize=64)
def regeneration_plan(
    total_images: int,
    *,
    share: float = CHEAT_SHARE,
    impostor: float = IMPOSTOR_RATE,
    miss: float = HONEST_MISS_RATE,
    error: float = ERROR,
    threshold: float = THRESHOLD,
) -> RegenerationPlan:
    """The smallest sample (and its tolerance) meeting both error bounds: `sampling_plan.sampled_check_plan`
    with caught = share × (1 − impostor) and honest = miss.

    Every image when the file has fewer (with the tolerance an honest file needs).

    Args:
        total_images: the images of the submitted file.
        share: the share of images not the model's own that must be caught.
        impostor: the chance such an image still reaches the threshold.
        miss: the share of an honest file's images that fall below the threshold.
        error: the largest P(accept such a file) and P(reject an honest one).
        threshold: the similarity at or above which an image is the model's own.

    Returns:
        The sample size, the images below the threshold it tolerates, and the threshold.

    Raises:
        ValueError: `total_images` below 1, or rates outside 0 < miss < share × (1 − impostor) < 1,
            0 < error < 1.
    """
    if total_images < 1:
        raise ValueError(f"a regeneration check needs at least one image, got {total_images}")
    caught = share * (1 - impostor)
    if not 0 < miss < caught < 1 or not 0 < error < 1:
        raise ValueError("need 0 < miss < share x (1 - impostor) < 1 and 0 < error < 1")
    size, allowed = sampled_check_plan(total_images, caught=caught, honest=miss, error=error)
    return RegenerationPlan(size, allowed, threshold)


def regeneration_seed(secret: bytes, submission_id: str, digest: str) -> int:
    """The seed of a submission's regeneration sample: the spot check's HMAC in its own domain.

    Args:
        secret: the server's secret.
        submission_id: the submission's id.
        digest: its results' digest (`verification.results_digest`).

    Returns:
        The sample's seed (never the spot check's for the same submission).

    Raises:
        ValueError: an empty secret.
    """
    return sample_seed(secret, f"{submission_id}:regeneration", digest)


def draw_regeneration_sample(total_images: int, plan: RegenerationPlan, seed: int) -> list[int]:
    """The positions to regenerate, drawn without replacement (`sampling_plan.draw_positions`).

    Args:
        total_images: the images of the file.
        plan: the check's plan (its sample size).
        seed: the sample's seed (`regeneration_seed`).

    Returns:
        min(sample size, total_images) positions in 0 .. total_images - 1, ascending.
    """
    return draw_positions(total_images, plan.sample_size, seed)
