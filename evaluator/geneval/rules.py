"""GenEval's rules as its code has them, with no model: detections and a prompt's metadata in, a verdict out.

Written from djghosh13/geneval@af4902f, evaluation/evaluate_images.py (cited by line below), which
differs from the paper where the seed's "Paper vs code" section says; this follows the code:

- selection (:230-244): per class, scores compared as float32 (mmdet's scores are float32 and numpy
  compares a float32 array with a Python float in float32), strictly above the threshold (0.9 for
  the `counting` task, else 0.3), most confident first, at most `max_objects` (16), then overlap
  suppression only when `max_overlap` is below 1 (:241);
- include clauses (:173-213) on the top-`count` detections of their class: the count, then the
  colour, then the position against every detection of the matched target group ("no target" when
  that group failed); exclude clauses (:215-219) on the whole capped list;
- the position rule (:140-157) on box centres, in float32 as numpy runs it on mmdet's boxes: the
  dead zone `position_threshold`·(size_A + size_B) taken off each axis, nothing when both parts are
  under 1e-3, each part divided by the raw centre distance, a relation where it passes ±0.5.

Two things GenEval leaves to chance are fixed here: tied scores keep the order the detections were
given in (GenEval's `argsort(...)[::-1]` reverses mmdet's order of ties, which means nothing), and the
relations in a reason are listed left of, right of, above, below (GenEval joins a Python set, whose
order changes with the process's hash seed).

`geneval_reward` is the reward Flow-GRPO trains on, written from yifan123/reward-server@92ac29f
(MIT), reward_server/gen_eval.py: its `evaluate_reward` (:201-264) on the same selection (:274-289).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .config import COLORS, GENEVAL, GenEvalConfig

Box = tuple[float, float, float, float]
RELATIONS: tuple[str, ...] = ("left of", "right of", "above", "below")  # relative_position's order
COUNTING = "counting"


@dataclass(frozen=True)
class GenEvalDetection:
    """One detection of one class: its box (x0, y0, x1, y1 in pixels), its score, and the colour
    classifier's decision for it (None where no colour was asked for)."""

    box: Box
    score: float
    color: str | None = None

    def details_row(self) -> list[float]:
        """The row GenEval writes in `details` (:255): the box and the score, as float32 values."""
        return [float(np.float32(value)) for value in (*self.box, self.score)]


@dataclass(frozen=True)
class GenEvalVerdict:
    """`correct` and GenEval's `reason` text (one line per failed clause, "" when correct), with the
    detections the rules kept per class (GenEval's `detected`, written as `details`)."""

    correct: bool
    reason: str
    detected: dict[str, tuple[GenEvalDetection, ...]] = field(default_factory=dict)

    def details(self) -> dict[str, list[list[float]]]:
        return {name: [d.details_row() for d in found] for name, found in self.detected.items()}


def score_threshold(tag: str, config: GenEvalConfig = GENEVAL) -> float:
    """The confidence threshold of a task (:230): `counting_threshold` for counting, else `threshold`."""
    return config.counting_threshold if tag == COUNTING else config.threshold


def box_iou(box_a: Sequence[float], box_b: Sequence[float]) -> float:
    """GenEval's `compute_iou` (:130-137): areas with the +1 pixel convention, in float32, 0 for no union."""
    a = np.asarray(box_a[:4], dtype=np.float32)
    b = np.asarray(box_b[:4], dtype=np.float32)

    def area(box: np.ndarray) -> np.float32:
        return max(box[2] - box[0] + 1, 0) * max(box[3] - box[1] + 1, 0)

    inter = area(np.array([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])], dtype=np.float32))
    union = area(a) + area(b) - inter
    return float(inter / union) if union else 0.0


def select_detections(
    detections: Mapping[str, Sequence[GenEvalDetection]], tag: str, config: GenEvalConfig = GENEVAL
) -> dict[str, tuple[GenEvalDetection, ...]]:
    """Per class, the detections GenEval keeps (:230-244): above the task's threshold (float32,
    strict), most confident first, at most `max_objects`, suppressed when overlapping a kept one by
    `max_overlap` or more (only when it is below 1). Classes left empty are absent."""
    threshold = np.float32(score_threshold(tag, config))
    selected: dict[str, tuple[GenEvalDetection, ...]] = {}
    for name, found in detections.items():
        found = list(found)
        if not found:
            continue
        scores = np.array([detection.score for detection in found], dtype=np.float32)
        ranked = np.argsort(-scores, kind="stable")  # ties: the order given
        order: list[int] = ranked[scores[ranked] > threshold][: config.max_objects].tolist()
        kept = []
        while order:
            best = order.pop(0)
            kept.append(found[best])
            order = [
                other
                for other in order
                # IoU is a float32 scalar compared with a Python float: numpy 1.x promotes both to float64.
                if config.max_overlap == 1 or box_iou(found[best].box, found[other].box) < config.max_overlap
            ]
        if kept:
            selected[name] = tuple(kept)
    return selected


def relative_position(
    box_a: Sequence[float], box_b: Sequence[float], position_threshold: float = 0.1
) -> tuple[str, ...]:
    """Where A is relative to B (:140-157), in `RELATIONS` order: () when both offsets, less the dead
    zone, are under 1e-3. Computed in float32, as numpy computes it on mmdet's float32 boxes."""
    boxes = np.array([list(box_a[:4]), list(box_b[:4])], dtype=np.float32).reshape(2, 2, 2)
    center_a, center_b = boxes.mean(axis=-2)
    size_a, size_b = np.abs(np.diff(boxes, axis=-2))[..., 0, :]
    offset = center_a - center_b
    dead_zone = np.float32(position_threshold) * (size_a + size_b)
    revised = np.maximum(np.abs(offset) - dead_zone, np.float32(0)) * np.sign(offset)
    if np.all(np.abs(revised) < np.float32(1e-3)):
        return ()
    dx, dy = revised / np.linalg.norm(offset)
    found = []
    if dx < -0.5:
        found.append("left of")
    if dx > 0.5:
        found.append("right of")
    if dy < -0.5:
        found.append("above")
    if dy > 0.5:
        found.append("below")
    return tuple(found)


def _clause(clause: Any, kind: str) -> tuple[str, int]:
    if not isinstance(clause, Mapping) or not isinstance(clause.get("class"), str):
        raise ValueError(f"an {kind} clause needs a class name, got {clause!r}")
    count = clause.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"the {kind} clause of {clause['class']!r} needs a count ≥ 0, got {count!r}")
    return clause["class"], count


def _colors_of(found: Sequence[GenEvalDetection], name: str) -> list[str]:
    colors = []
    for detection in found:
        if detection.color is None:
            raise ValueError(f"a colour clause on {name!r} needs the colour of each of its top detections")
        colors.append(detection.color)
    return colors


def _color_failure(clause: Mapping[str, Any], name: str, count: int, found: Sequence[GenEvalDetection]) -> str | None:
    """GenEval's colour check (:181-190) on the top detections: at least `count` of the colour."""
    colors = _colors_of(found, name)
    wanted = clause["color"]
    if colors.count(wanted) >= count:
        return None
    seen = ", ".join(f"{colors.count(c)} {c}" for c in COLORS if c in colors)
    return f"expected {wanted} {name}>={count}, found {colors.count(wanted)} {wanted}; and {seen}"


def _position_failure(
    clause: Mapping[str, Any],
    name: str,
    found: Sequence[GenEvalDetection],
    matched_groups: Sequence[tuple[GenEvalDetection, ...] | None],
    config: GenEvalConfig,
) -> str | None:
    """GenEval's position check (:191-209): every top detection against every detection of the target
    group; the first pair without the relation fails the clause."""
    relation, group = clause["position"]
    if not isinstance(group, int) or not 0 <= group < len(matched_groups):
        raise ValueError(f"the position clause of {name!r} names group {group!r}, not an earlier one")
    targets = matched_groups[group]
    if targets is None:
        return f"no target for {name} to be {relation}"
    for obj in found:
        for target in targets:
            relations = relative_position(obj.box, target.box, config.position_threshold)
            if relation not in relations:
                return f"expected {name} {relation} target, found {' and '.join(relations)} target"
    return None


def geneval_verdict(
    metadata: Mapping[str, Any],
    detections: Mapping[str, Sequence[GenEvalDetection]],
    config: GenEvalConfig = GENEVAL,
) -> GenEvalVerdict:
    """GenEval's verdict on one image (`evaluate` and the selection of `evaluate_image`).

    Args:
        metadata: one line of `evaluation_metadata.jsonl` (`tag`, `include`, optional `exclude`).
        detections: class name → every detection the detector reported for it, in any order, before
            any selection; `color` set on those a colour clause reads (the top `count` of the class).
        config: the constants (GenEval's defaults).

    Raises:
        ValueError: metadata without a tag or with a malformed clause, a position clause naming a
            later group, or a colour clause whose detections carry no colour.
    """
    tag = metadata.get("tag") if isinstance(metadata, Mapping) else None
    if not isinstance(tag, str):
        raise ValueError(f"GenEval metadata needs a tag, got {metadata!r}")
    objects = select_detections(detections, tag, config)
    correct = True
    reasons: list[str] = []
    matched_groups: list[tuple[GenEvalDetection, ...] | None] = []
    for clause in metadata.get("include", []):  # :173-213
        name, count = _clause(clause, "include")
        found = objects.get(name, ())[:count]
        failure: str | None
        if len(found) < count:
            failure = f"expected {name}>={count}, found {len(found)}"
        else:
            failure = _color_failure(clause, name, count, found) if "color" in clause else None
            if failure is None and "position" in clause:
                failure = _position_failure(clause, name, found, matched_groups, config)
        if failure is not None:
            correct = False
            reasons.append(failure)
        matched_groups.append(found if failure is None else None)
    for clause in metadata.get("exclude", []):  # :215-219
        name, count = _clause(clause, "exclude")
        if len(objects.get(name, ())) >= count:
            correct = False
            reasons.append(f"expected {name}<{count}, found {len(objects[name])}")
    return GenEvalVerdict(correct, "\n".join(reasons), objects)


def colour_requests(metadata: Mapping[str, Any], selected: Mapping[str, Sequence[GenEvalDetection]]) -> dict[str, int]:
    """Class → how many of its top selected detections a colour clause reads (what to classify)."""
    wanted: dict[str, int] = {}
    for clause in metadata.get("include", []):
        if isinstance(clause, Mapping) and "color" in clause:
            name, count = _clause(clause, "include")
            if len(selected.get(name, ())) >= count:  # fewer: the count fails first, no colour is read
                wanted[name] = max(wanted.get(name, 0), count)
    return wanted


@dataclass(frozen=True)
class GenEvalReward:
    """reward-server's reward on one image: `score`, the partial credit in (-inf, 1] (a count far
    above the asked one goes below 0, as there), `strict`, the exact-count verdict, and `reason`,
    one line per failed clause ("" when strict)."""

    score: float
    strict: bool
    reason: str = ""


def _reward_position(
    clause: Mapping[str, Any],
    name: str,
    found: Sequence[GenEvalDetection],
    matched_groups: Sequence[tuple[GenEvalDetection, ...] | None],
    config: GenEvalConfig,
) -> tuple[str | None, list[float]]:
    """The position part of `evaluate_reward` (gen_eval.py:237-258): the failure and the credits it adds.
    A failed pair adds 0.0 and the loop then adds 1.0 all the same (:254, :258): both are kept."""
    relation, group = clause["position"]
    if not isinstance(group, int) or not 0 <= group < len(matched_groups):
        raise ValueError(f"the position clause of {name!r} names group {group!r}, not an earlier one")
    if matched_groups[group] is None:
        return f"no target for {name} to be {relation}", [0.0]
    failure = _position_failure(clause, name, found, matched_groups, config)
    return failure, ([0.0, 1.0] if failure is not None else [1.0])


def geneval_reward(
    metadata: Mapping[str, Any],
    detections: Mapping[str, Sequence[GenEvalDetection]],
    config: GenEvalConfig = GENEVAL,
) -> GenEvalReward:
    """reward-server's GenEval reward on one image, from `geneval_verdict`'s inputs.

    Per include clause, on every selected detection of its class (GenEval's selection: thresholds,
    cap, no suppression by default), credits in order (gen_eval.py:215-258): the count,
    `1 - |count - found| / count`; then, when the count is wrong, 0.0 for a colour or position
    part; else the colour, `1 - |count - of the colour| / count`, and the position, 1.0 (0.0 and
    1.0 when a pair fails; 0.0 alone when the target group failed). `score` is their mean (0.0 with
    no include clause). `strict` needs every count exact and every colour and position to hold;
    exclude clauses are not read (:201-264 never does; counting prompts' exact count covers them).

    Raises:
        ValueError: as `geneval_verdict`, and an include count of 0 (reward-server divides by it).
    """
    tag = metadata.get("tag") if isinstance(metadata, Mapping) else None
    if not isinstance(tag, str):
        raise ValueError(f"GenEval metadata needs a tag, got {metadata!r}")
    objects = select_detections(detections, tag, config)
    strict = True
    reasons: list[str] = []
    credits: list[float] = []
    matched_groups: list[tuple[GenEvalDetection, ...] | None] = []
    for clause in metadata.get("include", []):
        name, count = _clause(clause, "include")
        if count == 0:
            raise ValueError(f"the include clause of {name!r} needs a count ≥ 1 for the reward")
        found = objects.get(name, ())
        credits.append(1 - abs(count - len(found)) / count)
        failure: str | None = None
        if len(found) != count:
            failure = f"expected {name}=={count}, found {len(found)}"
            credits.extend([0.0] if "color" in clause or "position" in clause else [])
        else:
            if "color" in clause:
                credits.append(1 - abs(count - _colors_of(found, name).count(clause["color"])) / count)
                failure = _color_failure(clause, name, count, found)  # of `count` found: != is <
            if "position" in clause and failure is None:
                failure, added = _reward_position(clause, name, found, matched_groups, config)
                credits.extend(added)
        if failure is not None:
            strict = False
            reasons.append(failure)
        matched_groups.append(found if failure is None else None)
    score = sum(credits) / len(credits) if credits else 0.0
    return GenEvalReward(float(score), strict, "\n".join(reasons))
