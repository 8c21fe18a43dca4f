"""What perception saw in one image: the input of the verdict, produced by models or by tests.

Perception fills these; the rules and the verdict only read them. Masks are 2-D boolean numpy
arrays at the image's full resolution; boxes are ``(x0, y0, x1, y1)`` in pixels.

Detections travel as one type, `supervision.Detections` with the benchmark's class names in
``data["class_name"]``: the detector builds one per image, each prompt object is read from its
class's rows (`ObjectObservation.from_detections`, `best_instances`), and the instance each
present object uses, with its final mask, stays in `ImageObservation.detections` for drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import supervision as sv


def detection_rows(detections: sv.Detections, rows: list[int] | np.ndarray) -> sv.Detections:
    """`detections[rows]`: those rows, as `Detections` (supervision declares one return type for
    its `__getitem__`, whether given rows or a data key)."""
    return cast("sv.Detections", detections[rows])


def class_names(detections: sv.Detections) -> np.ndarray:
    """The rows' benchmark class names, ``data["class_name"]``."""
    return np.asarray(detections.data["class_name"])


def confidences(detections: sv.Detections) -> np.ndarray:
    """The rows' scores (every detector here gives them)."""
    if detections.confidence is None:
        raise ValueError("these detections carry no confidence scores")
    return detections.confidence


def instance_masks(detections: sv.Detections) -> np.ndarray:
    """The rows' masks (bool, rows × H × W), which perception sets on the instances it uses."""
    if detections.mask is None:
        raise ValueError("these detections carry no masks")
    return np.asarray(detections.mask)


@dataclass
class ObjectObservation:
    """One prompt object: whether it was found, and its most confident instance."""

    name: str
    present: bool
    confidence: float = 0.0  # best detection score of the class (0 when none)
    box: tuple[float, float, float, float] | None = None
    mask: np.ndarray | None = None  # bool H×W of the most confident instance
    value_scores: dict[str, float] | None = None  # attribute value → 100 × cosine
    count: int = 0  # detections at or above the counting threshold (informational)

    @classmethod
    def from_detections(cls, name: str, detections: sv.Detections, *, counting_threshold: float) -> ObjectObservation:
        """Object `name` as the rows of its class show it: present when one was kept, confidence
        and box of the most confident, count of those at or above `counting_threshold`.
        The mask and the value scores are perception's later steps."""
        rows = detection_rows(detections, class_names(detections) == name)
        scores = confidences(rows)
        best = _best_row(scores)
        if best is None:
            return cls(name=name, present=False)
        x0, y0, x1, y1 = (float(v) for v in rows.xyxy[best])
        return cls(
            name=name,
            present=True,
            confidence=float(scores[best]),
            box=(x0, y0, x1, y1),
            count=int(np.count_nonzero(scores >= counting_threshold)),
        )


def best_instances(detections: sv.Detections, names: Sequence[str]) -> sv.Detections:
    """The most confident detection of each of `names` that has one, in the order of `names`:
    the instances the statements use (the first row wins a tie)."""
    rows = []
    for name in names:
        of_class = np.flatnonzero(class_names(detections) == name)
        best = _best_row(confidences(detections)[of_class])
        if best is not None:
            rows.append(int(of_class[best]))
    return detection_rows(detections, rows)


def _best_row(confidence: np.ndarray) -> int | None:
    return int(np.argmax(confidence)) if len(confidence) else None


@dataclass
class ImageObservation:
    """Everything measured in one image for one prompt."""

    width: int
    height: int
    objects: dict[str, ObjectObservation] = field(default_factory=dict)
    disparity: np.ndarray | None = None  # float H×W, larger = nearer; only for depth prompts
    # The instance each present object uses, one row per object in prompt order, with its final
    # mask and data["class_name"]; set by perception, None in observations built by hand.
    detections: sv.Detections | None = None

    def get(self, name: str) -> ObjectObservation:
        """The observation of a prompt object; an absent one if perception did not report it."""
        return self.objects.get(name) or ObjectObservation(name=name, present=False)

    def as_detections(self) -> sv.Detections:
        """`detections`, or for an observation built by hand (tests, replays) the same rows made
        from `objects`: one per present object with a box, masks when every such object has one."""
        if self.detections is not None:
            return self.detections
        import supervision as sv

        present = [obj for obj in self.objects.values() if obj.present and obj.box is not None]
        if not present:
            return sv.Detections.empty()
        given = [obj.mask for obj in present if obj.mask is not None]
        masks = np.stack([mask.astype(bool) for mask in given]) if len(given) == len(present) else None
        return sv.Detections(
            xyxy=np.array([obj.box for obj in present], dtype=np.float64),
            mask=masks,
            confidence=np.array([obj.confidence for obj in present], dtype=np.float64),
            data={"class_name": np.array([obj.name for obj in present], dtype=str)},
        )
