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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import supervision as sv


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
        rows = detections[detections["class_name"] == name]
        best = _best_row(rows.confidence)
        if best is None:
            return cls(name=name, present=False)
        return cls(
            name=name,
            present=True,
            confidence=float(rows.confidence[best]),
            box=tuple(float(v) for v in rows.xyxy[best]),
            count=int(np.count_nonzero(rows.confidence >= counting_threshold)),
        )


def best_instances(detections: sv.Detections, names: Sequence[str]) -> sv.Detections:
    """The most confident detection of each of `names` that has one, in the order of `names`:
    the instances the statements use (the first row wins a tie)."""
    rows = []
    for name in names:
        of_class = np.flatnonzero(detections["class_name"] == name)
        best = _best_row(detections.confidence[of_class])
        if best is not None:
            rows.append(int(of_class[best]))
    return detections[rows]


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
        masks = None
        if all(obj.mask is not None for obj in present):
            masks = np.stack([obj.mask.astype(bool) for obj in present])
        return sv.Detections(
            xyxy=np.array([obj.box for obj in present], dtype=np.float64),
            mask=masks,
            confidence=np.array([obj.confidence for obj in present], dtype=np.float64),
            data={"class_name": np.array([obj.name for obj in present], dtype=str)},
        )
