"""The regeneration check's policy: how many images to regenerate, when an image is "the model's own",
how many may not be, and the verdict test that sees what any edit is for.

The spot check proves that a file's verdicts match its images; it cannot see where the images came
from. So the verification job regenerates a sample of them from the model the records name
(`generation.reproduce.regeneration_spec`) with the benchmark's seeds and compares each pair.

**The measure** (`own_image`): both images at 256 x 256 (area-averaged) in CIELAB, the per-pixel
CIEDE2000 (scikit-image; lightness, chroma and hue as a person sees them) averaged over every square
window of 2% of the area (`REGION_SHARE`, 36 x 36 px: the agreed size of the smallest object the check
must see, issue 51), decided on the **worst window**: the model's own when it is at most t
(`THRESHOLD`). Drift is small everywhere; an edit is large somewhere. Grey SSIM at 64 px, the measure
before, stays near 1 for a region recoloured at equal brightness, a pasted or erased object of up to
a third of the picture, another picture nudged to the own brightness layout (benchmarks/RESULTS.md).

**The verdict test** (`verdict_flips`, `sign_test`): a cheat's aim is always to turn failed statements
into passed ones. The job scores each regenerated image with the entry's scorer: honest drift moves a
borderline verdict either way with equal chance, an edit moves it toward a pass. Each image counts once,
by the net direction of its moves (its statements share its objects, so their moves are not
independent; images are); the entry is rejected when ``binom.sf(F - 1, F + U, 1/2) <= SIGN_ERROR``
(one-sided sign test: 7 favourable against none is the smallest rejection at 1%).

**The plan** (`regeneration_plan`): k images, at most m not the model's own, exactly under the binomial
(`leaderboard.checks.sampling_plan`): a file of which 10% or more is not the model's own
(`CHEAT_SHARE`; such an image reaches t by chance <= 1%, `IMPOSTOR_RATE`) is accepted with probability
<= 1% (`ERROR`), and an honest one is rejected with probability <= 1% when each image misses t with
probability <= 3% (`HONEST_MISS_RATE`). Drift is systematic per machine, so misses are not independent
across machines, but they are *given* the two machines (the submitter's and the job's), and
`binom.sf(m, k, p)` grows with p: the bound holds for every pair of machines missing at most 3%. A
machine beyond that shows in the entry's own drift (`entry_drift` > `DRIFT_BOUND`): a pixel rejection
is then inconclusive and a rerun on another machine decides, while the verdict test still decides
(`regeneration_verdict`). For 19,200 images: **k = 252, m = 14**; a smaller file has every image
regenerated. t and the drift bound are provisional (tiny pipelines and real photographs on the CPU;
`benchmarks/gpu.sh` sets them for real models).

The sample's seed is the spot check's HMAC of the submission id and its results under the server
secret, in its own domain (`regeneration_seed`). Pure functions: no model, no file, no store;
scikit-image is imported only when images are compared (the Space plans jobs from this module).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from evaluator.results import ResultRecord, is_error_row
from leaderboard.checks.sampling_plan import draw_positions, sampled_check_plan
from leaderboard.checks.spot_check_policy import sample_seed

CHEAT_SHARE = 0.10  # share of images not the model's own that must be caught ...
IMPOSTOR_RATE = 0.01  # ... when such an image reaches t by chance at most this often
HONEST_MISS_RATE = 0.03  # an honest image misses t at most this often on any pair of machines (bounded)
ERROR = 0.01  # the largest probability of either mistake
SIGN_ERROR = 0.01  # the verdict test's largest P(reject) for flips that are a fair coin
COMPARED_SIDE = 256  # both images are compared at this side
REGION_SHARE = 0.02  # a region of this share of the area: the smallest the check must see
THRESHOLD = 5.0  # t: the worst region's mean CIEDE2000 at most this (provisional, benchmarks/RESULTS.md)
DRIFT_BOUND = 2.0  # the entry's own drift above this: the pixel side is inconclusive (provisional)
MEASURE = "the worst 2% region's mean CIEDE2000 at 256 px"


@dataclass(frozen=True)
class OwnImage:
    """Whether a submitted image is the model's own (`own_image`), and what was measured."""

    own: bool
    difference: float  # the worst region's mean CIEDE2000
    median: float  # the median region's: the image's drift
    region: tuple[float, float, float, float]  # the worst region: left, top, right, bottom, as fractions
    within: float  # the share of regions within t (1.0 exactly when `own`)


def region_window(side: int = COMPARED_SIDE, share: float = REGION_SHARE) -> int:
    """The side in pixels of a square covering SHARE of a SIDE x SIDE image.

    Args:
        side: the compared image's side.
        share: the region's share of the area.

    Returns:
        round(side x sqrt(share)), at least 1 (36 at 256 and 2%).
    """
    return max(1, round(side * share**0.5))


def _lab(image: Any, side: int) -> Any:
    import numpy as np
    from PIL import Image
    from skimage.color import rgb2lab

    resized = image.convert("RGB").resize((side, side), Image.Resampling.BOX)
    return rgb2lab(np.asarray(resized, dtype=np.float64) / 255.0)


def own_image(submitted: Any, regenerated: Any, threshold: float = THRESHOLD) -> OwnImage:
    """Whether SUBMITTED is REGENERATED drifted, or an edit of it, or another picture (module docstring).

    Args:
        submitted: the submitted PIL image.
        regenerated: the image the recorded model made again with the benchmark's seed.
        threshold: t, the largest worst-region difference of the model's own image.

    Returns:
        Own or not, the worst region's mean CIEDE2000 and where it is (fractions of the submitted
        image), the median region's, and the share of regions within t.
    """
    import numpy as np
    from scipy.ndimage import uniform_filter
    from skimage.color import deltaE_ciede2000

    side, window = COMPARED_SIDE, region_window()
    per_pixel = deltaE_ciede2000(_lab(submitted, side), _lab(regenerated, side))
    means = uniform_filter(per_pixel, size=window, mode="nearest")
    # The filter centres window [i - w//2, i - w//2 + w) on i: keep the windows wholly inside the image.
    low = window // 2
    inside = means[low : side - window + low + 1, low : side - window + low + 1]
    top, left = np.unravel_index(int(np.argmax(inside)), inside.shape)
    worst = float(inside[top, left])
    region = (left / side, top / side, (left + window) / side, (top + window) / side)
    within = float(np.mean(inside <= threshold))
    return OwnImage(worst <= threshold, worst, float(np.median(inside)), region, within)


def region_text(region: Sequence[float]) -> str:
    """Where a region is, in words.

    Args:
        region: left, top, right, bottom as fractions of the image.

    Returns:
        "x 40-54%, y 10-24% of the image".
    """
    left, top, right, bottom = (round(100 * value) for value in region)
    return f"x {left}–{right}%, y {top}–{bottom}% of the image"


@dataclass(frozen=True)
class RegenerationPlan:
    """Regenerate `sample_size` images; accept when at most `max_not_own` are not the model's own."""

    sample_size: int
    max_not_own: int
    threshold: float = THRESHOLD

    def accepts(self, not_own: int) -> bool:
        """Whether a regeneration check that found this many images not the model's own accepts the file.

        Args:
            not_own: sampled images whose regeneration missed the threshold (or could not be made).

        Returns:
            True when they are at most `max_not_own`.
        """
        return not_own <= self.max_not_own

    def is_own(self, difference: float) -> bool:
        """Whether a submitted image is the model's own, by its worst region's difference (`own_image`).

        Args:
            difference: the worst region's mean CIEDE2000 between the submitted and regenerated images.

        Returns:
            True at or below the plan's threshold.
        """
        return difference <= self.threshold

    def false_accept(self, share: float = CHEAT_SHARE, impostor: float = IMPOSTOR_RATE) -> float:
        """P(accept) for a file of which `share` of the images are not the model's own (binomial).

        Args:
            share: the share of the file's images that are not the model's own.
            impostor: the chance that such an image still reaches the threshold.

        Returns:
            The probability that the sample holds at most `max_not_own` images beyond the threshold.
        """
        from scipy.stats import binom  # only when a probability is asked for

        return float(binom.cdf(self.max_not_own, self.sample_size, share * (1 - impostor)))

    def false_reject(self, miss: float = HONEST_MISS_RATE) -> float:
        """P(reject) for an honest file whose images miss the threshold at `miss` (binomial).

        Args:
            miss: the share of an honest file's images whose regeneration misses the threshold.

        Returns:
            The probability that the sample holds more than `max_not_own` of them.
        """
        from scipy.stats import binom  # only when a probability is asked for

        return float(binom.sf(self.max_not_own, self.sample_size, miss))

    def describe(self) -> str:
        """The plan in words, for an entry's reason.

        Returns:
            "N images regenerated, at most K may differ by more than CIEDE2000 T in a 2% region".
        """
        return (
            f"{self.sample_size} images regenerated, at most {self.max_not_own} may differ by more than "
            f"CIEDE2000 {self.threshold:g} in a region of {REGION_SHARE:.0%} of the image"
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
        miss: the share of an honest file's images that miss the threshold, on any pair of machines.
        error: the largest P(accept such a file) and P(reject an honest one).
        threshold: the worst-region difference at or below which an image is the model's own.

    Returns:
        The sample size, the images beyond the threshold it tolerates, and the threshold.

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


class VerdictFlips(NamedTuple):
    """Images whose verdicts moved between the submitted record and the regenerated image's score."""

    favourable: int  # toward the submission: more passed in the submitted record than in the regeneration
    unfavourable: int  # the other way


def verdict_moves(submitted: ResultRecord, regenerated: ResultRecord) -> tuple[int, int]:
    """The compared verdicts of one image that moved, by direction.

    Each object present in the submitted record and absent in the regeneration's, and each statement
    satisfied there and not here, moves toward the submission; the reverse, against it. An error row
    on either side moves nothing (the spot check compares those).

    Args:
        submitted: the submitted record of the image.
        regenerated: the record of its regeneration, scored by the same scorer.

    Returns:
        (toward the submission, against it).
    """
    if is_error_row(submitted) or is_error_row(regenerated):
        return 0, 0
    present = {obj.name: obj.present for obj in regenerated.objects}
    satisfied = {statement.index: statement.satisfied for statement in regenerated.statements}
    pairs = [(obj.present, present[obj.name]) for obj in submitted.objects if obj.name in present]
    pairs += [(s.satisfied, satisfied[s.index]) for s in submitted.statements if s.index in satisfied]
    return sum(first and not second for first, second in pairs), sum(second and not first for first, second in pairs)


def image_flip(submitted: ResultRecord, regenerated: ResultRecord) -> int:
    """The net direction of one image's verdict moves (`verdict_moves`).

    Args:
        submitted: the submitted record of the image.
        regenerated: the record of its regeneration, scored by the same scorer.

    Returns:
        +1 when more moved toward the submission, -1 when more moved against it, 0 when they cancel or none did.
    """
    toward, against = verdict_moves(submitted, regenerated)
    return (toward > against) - (toward < against)


def verdict_flips(submitted: Sequence[ResultRecord], regenerated: Sequence[ResultRecord]) -> VerdictFlips:
    """Count the sample's images whose verdicts favour the submission, and those that go against it.

    Args:
        submitted: the submitted records of the sampled images.
        regenerated: the records of their regenerations, in the same order.

    Returns:
        (favourable, unfavourable), one image counting at most once (`image_flip`).

    Raises:
        ValueError: the two lists differ in length.
    """
    if len(submitted) != len(regenerated):
        raise ValueError(f"{len(submitted)} submitted records against {len(regenerated)} regenerated ones")
    directions = [image_flip(first, second) for first, second in zip(submitted, regenerated, strict=True)]
    return VerdictFlips(directions.count(1), directions.count(-1))


@dataclass(frozen=True)
class SignTest:
    """The one-sided sign test of the verdict flips (`sign_test`)."""

    favourable: int
    unfavourable: int
    p_value: float  # P(at least `favourable` of the flips favour the submission | each does with 1/2)
    rejects: bool

    def describe(self) -> str:
        """The test in words, for an entry's reason.

        Returns:
            "F of the N images whose verdicts moved favour the submission ... (P = p)", or that none moved.
        """
        moved = self.favourable + self.unfavourable
        if not moved:
            return "no image's verdicts moved"
        return (
            f"{self.favourable} of the {moved} images whose verdicts moved favour the submission, "
            f"{self.unfavourable} go against it (a fair coin gives that many or more with P = {self.p_value:.2g})"
        )


def sign_test(favourable: int, unfavourable: int, error: float = SIGN_ERROR) -> SignTest:
    """Whether more flips favour the submission than drift, a fair coin, gives at `error`.

    Args:
        favourable: images whose verdicts moved toward a pass in the submitted record.
        unfavourable: images whose verdicts moved the other way.
        error: the largest P(reject) when each flip favours the submission with probability 1/2.

    Returns:
        The test: p = binom.sf(favourable - 1, favourable + unfavourable, 1/2), rejecting when p <= error
        (never when nothing moved).

    Raises:
        ValueError: a negative count, or `error` outside (0, 1).
    """
    if favourable < 0 or unfavourable < 0 or not 0 < error < 1:
        raise ValueError("need counts >= 0 and 0 < error < 1")
    from scipy.stats import binom  # only when a probability is asked for: the app starts without scipy

    moved = favourable + unfavourable
    # nothing in the submission's favour (nothing moved included): p = 1, above any error < 1
    p_value = float(binom.sf(favourable - 1, moved, 0.5)) if favourable else 1.0
    return SignTest(favourable, unfavourable, p_value, p_value <= error)


def entry_drift(agreeing: Sequence[float]) -> float | None:
    """The entry's own drift: the median, over the sampled images whose verdicts all agree with the submitted
    records, of each image's median-region difference (`OwnImage.median`). Drift is diffuse, so it raises
    the median region; an edit of a few regions does not, and neither does a few edited images.

    Args:
        agreeing: `OwnImage.median` of each regenerated image whose compared verdicts did not move.

    Returns:
        Their median, or None when there are none.
    """
    if not agreeing:
        return None
    ordered = sorted(agreeing)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


@dataclass(frozen=True)
class RegenerationVerdict:
    """The check's decision (`regeneration_verdict`): the outcome, and what each side said."""

    outcome: Literal["reproduced", "rejected", "inconclusive"]
    pixel: Literal["accepts", "rejects", "inconclusive"]
    sign: SignTest | None  # None: the verdict test did not run (no scorer)


def regeneration_verdict(
    plan: RegenerationPlan,
    not_own: int,
    sign: SignTest | None,
    drift: float | None,
    *,
    inconclusive_before: int = 0,
    drift_bound: float = DRIFT_BOUND,
) -> RegenerationVerdict:
    """Reject when the pixel plan or the verdict test rejects; a pixel rejection on a machine whose drift
    is beyond the bound is inconclusive once (a rerun on another machine decides; the verdict test still
    decides now).

    Args:
        plan: the check's plan.
        not_own: sampled images not the model's own.
        sign: the verdict test (None: it did not run).
        drift: the entry's own drift (`entry_drift`; None: unknown).
        inconclusive_before: earlier runs whose pixel side was inconclusive (then the pixel side decides:
            two machines saw the same excess, so it is the images').
        drift_bound: the largest drift the plan's honest miss rate holds for.

    Returns:
        The outcome, the pixel side's say and the verdict test.
    """
    pixel: Literal["accepts", "rejects", "inconclusive"] = "accepts" if plan.accepts(not_own) else "rejects"
    if pixel == "rejects" and drift is not None and drift > drift_bound and not inconclusive_before:
        pixel = "inconclusive"
    if (sign is not None and sign.rejects) or pixel == "rejects":
        return RegenerationVerdict("rejected", pixel, sign)
    return RegenerationVerdict("inconclusive" if pixel == "inconclusive" else "reproduced", pixel, sign)


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
