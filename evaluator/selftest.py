"""`negt2ibench selftest`: the four real models on real photographs, what the evaluator sees against what is known.

Tests here run tiny random models, so nothing in the test suite shows that the real checkpoints
load and see what they should. This command does, once, on the machine that will score: three
photographs shipped in scikit-image's wheel (`skimage.data`), read through the real verdict path
(an `Evaluator` of the Python API, which `negt2ibench selftest` passes in):

- `chelsea()`: a cat filling the frame; `coffee()`: a red cup on a red saucer; `stereo_motorcycle()`:
  a red motorcycle in a garage (left view) with its Middlebury ground-truth disparity.
- Each object is present at the paper's thresholds (kept above the presence threshold and at
  least the counting threshold 0.5), its box overlaps a box drawn by hand (IoU ≥ 0.5), and its
  mask lies inside its box and fills a plausible part of it (not the box itself).
- "a photo of a red cup" and "a photo of a red motorcycle" pass; "a photo of a non-red motorcycle"
  fails because the forbidden red was seen.
- Depth-Anything V2's disparity rank-correlates with the stereo ground truth over its valid pixels
  (Spearman ρ ≥ 0.5): larger means nearer, as the depth rule assumes.

Exit 0 when every check holds, 1 when one fails, 2 when weights are missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from evaluator.config import EvaluatorConfig

if TYPE_CHECKING:
    from PIL import Image

    from evaluator.observation import ImageObservation

Box = tuple[float, float, float, float]

# Drawn by hand on the photographs, (x0, y0, x1, y1) in pixels.
REFERENCE_BOXES: dict[str, Box] = {
    "cat": (0, 0, 400, 300),  # chelsea(), 451 × 300: the cat's head and chest fill the frame
    "cup": (170, 15, 410, 305),  # coffee(), 600 × 400: rim to handle, without the saucer
    "motorcycle": (92, 75, 685, 455),  # stereo_motorcycle() left view, 741 × 500: tail light to front wheel
}
MIN_BOX_IOU = 0.5
MIN_MASK_INSIDE = 0.95  # share of the mask's pixels inside its box (grown by 2% of the image side)
MASK_FILL = (0.2, 0.98)  # a mask fills part of its box; a full box means no mask came back
MIN_DEPTH_SPEARMAN = 0.5
DETECTION_PROMPTS = {  # the object's detection is read from scoring these (only the named object matters)
    "cat": "a photo of a cat and a dog, where the cat is left of the dog",
    "cup": "a photo of a red cup",
    "motorcycle": "a photo of a red motorcycle",
}
DEPTH_PROMPT = "a photo of a motorcycle and a bench, where the motorcycle is in front of the bench"


class Scorer(Protocol):
    """What the checks need of the Python API's `Evaluator` (this layer sits below it)."""

    config: EvaluatorConfig

    def load(self) -> Any: ...

    def score(self, image: Any, prompt: str) -> Any: ...  # an output with `record` and `observation`


@dataclass(frozen=True)
class Check:
    """One expectation about what the evaluator sees, and what it measured."""

    name: str
    expected: str
    measured: str
    passed: bool


@dataclass(frozen=True)
class Photos:
    """The photographs and the stereo ground truth (disparity: NaN/inf where the benchmark has none)."""

    cat: Image.Image
    cup: Image.Image
    motorcycle: Image.Image
    disparity: np.ndarray


def load_photos() -> Photos:
    """The photographs from scikit-image's wheel (no download)."""
    from PIL import Image
    from skimage import data

    left, _right, disparity = data.stereo_motorcycle()
    return Photos(
        cat=Image.fromarray(data.chelsea()),
        cup=Image.fromarray(data.coffee()),
        motorcycle=Image.fromarray(left),
        disparity=np.asarray(disparity, dtype=np.float64),
    )


# -- pure measurements -------------------------------------------------------------------------


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union of two (x0, y0, x1, y1) boxes."""
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def mask_in_box(mask: np.ndarray, box: Box, margin: float) -> tuple[float, float]:
    """(share of the mask's pixels inside the box grown by `margin` px, share of the box the mask fills)."""
    area = int(mask.sum())
    if area == 0:
        return 0.0, 0.0
    height, width = mask.shape
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    grown = mask[
        max(0, int(y0 - margin)) : min(height, int(y1 + margin)),
        max(0, int(x0 - margin)) : min(width, int(x1 + margin)),
    ]
    box_area = max(1, (min(x1, width) - max(x0, 0)) * (min(y1, height) - max(y0, 0)))
    inside_box = int(mask[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)].sum())
    return float(grown.sum()) / area, inside_box / box_area


def spearman(prediction: np.ndarray, truth: np.ndarray) -> tuple[float, int]:
    """Spearman's ρ between two maps over the pixels where both are finite, and how many there were."""
    from scipy.stats import spearmanr

    valid = np.isfinite(prediction) & np.isfinite(truth)
    count = int(valid.sum())
    if count < 3:
        return float("nan"), count
    return float(spearmanr(prediction[valid], truth[valid]).statistic), count


# -- checks ------------------------------------------------------------------------------------


def object_checks(name: str, observation: ImageObservation, counting_threshold: float) -> list[Check]:
    """Present at the thresholds, a plausible box, a mask inside its box."""
    obj = observation.get(name)
    reference = REFERENCE_BOXES[name]
    low, high = MASK_FILL
    mask_expected = f"≥ {MIN_MASK_INSIDE:.0%} inside its box, filling {low:.0%}–{high:.0%} of it"
    present = obj.present and obj.confidence >= counting_threshold
    checks = [
        Check(
            f"{name}: detected",
            f"present, confidence ≥ {counting_threshold:g}",
            f"confidence {obj.confidence:.2f}" if obj.present else "not detected",
            present,
        )
    ]
    if not obj.present or obj.box is None:
        checks.append(Check(f"{name}: box", f"IoU ≥ {MIN_BOX_IOU:g} with {reference}", "no detection", False))
        checks.append(Check(f"{name}: mask", mask_expected, "no detection", False))
        return checks
    iou = box_iou(obj.box, reference)
    shown = "(" + ", ".join(f"{v:.0f}" for v in obj.box) + ")"
    checks.append(
        Check(
            f"{name}: box", f"IoU ≥ {MIN_BOX_IOU:g} with {reference}", f"IoU {iou:.2f}, box {shown}", iou >= MIN_BOX_IOU
        )
    )
    if obj.mask is None:
        checks.append(Check(f"{name}: mask", mask_expected, "no mask", False))
        return checks
    inside, fill = mask_in_box(obj.mask, obj.box, margin=0.02 * max(observation.width, observation.height))
    checks.append(
        Check(
            f"{name}: mask",
            mask_expected,
            f"{inside:.0%} inside, fills {fill:.0%}",
            inside >= MIN_MASK_INSIDE and low <= fill <= high,
        )
    )
    return checks


def _top_values(observation: ImageObservation, name: str, count: int = 3) -> str:
    scores = observation.get(name).value_scores or {}
    ranked = sorted(scores.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{value} {score:.1f}" for value, score in ranked) or "no scores"


def verdict_check(name: str, output, subject: str, *, should_pass: bool) -> Check:
    """The image verdict of a colour prompt: a pass, or a fail because the forbidden value was seen."""
    record = output.record
    causes = [statement.cause for statement in record.statements if statement.cause]
    if should_pass:
        expected, holds = "passes", record.passed
    else:
        expected, holds = "fails: forbidden_rendered", (not record.passed) and causes == ["forbidden_rendered"]
    verdict = "passes" if record.passed else f"fails: {', '.join(causes) or 'no cause'}"
    return Check(name, expected, f"{verdict} (top: {_top_values(output.observation, subject)})", holds)


def depth_check(disparity: np.ndarray | None, truth: np.ndarray) -> Check:
    expected = f"Spearman ρ ≥ {MIN_DEPTH_SPEARMAN:g} with the stereo ground truth (larger = nearer)"
    if disparity is None:
        return Check("motorcycle: disparity", expected, "no disparity map", False)
    rho, count = spearman(np.asarray(disparity, dtype=np.float64), truth)
    return Check(
        "motorcycle: disparity", expected, f"ρ = {rho:.2f} over {count:,} pixels", bool(rho >= MIN_DEPTH_SPEARMAN)
    )


def run_checks(evaluator: Scorer, photos: Photos | None = None) -> list[Check]:
    """Every check, in order; loads the models first (a missing weight raises `MissingWeightsError`)."""
    photos = photos or load_photos()
    evaluator.load()
    threshold = evaluator.config.counting_threshold
    images = {"cat": photos.cat, "cup": photos.cup, "motorcycle": photos.motorcycle}
    checks: list[Check] = []
    outputs = {name: evaluator.score(images[name], DETECTION_PROMPTS[name]) for name in images}
    for name, output in outputs.items():
        checks += object_checks(name, output.observation, threshold)
    checks.append(verdict_check('"a photo of a red cup"', outputs["cup"], "cup", should_pass=True))
    checks.append(verdict_check('"a photo of a red motorcycle"', outputs["motorcycle"], "motorcycle", should_pass=True))
    non_red = evaluator.score(photos.motorcycle, "a photo of a non-red motorcycle")
    checks.append(verdict_check('"a photo of a non-red motorcycle"', non_red, "motorcycle", should_pass=False))
    checks.append(depth_check(evaluator.score(photos.motorcycle, DEPTH_PROMPT).observation.disparity, photos.disparity))
    return checks


def format_checks(checks: Sequence[Check]) -> str:
    """The table printed by `negt2ibench selftest`: check, expected, measured, ok/FAIL."""
    rows = [("check", "expected", "measured", "result")] + [
        (check.name, check.expected, check.measured, "ok" if check.passed else "FAIL") for check in checks
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
