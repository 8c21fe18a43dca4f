"""What perception saw in one image: the input of the verdict, produced by models or by tests.

Perception fills these; the rules and the verdict only read them. Masks are 2-D boolean numpy
arrays at the image's full resolution; boxes are ``(x0, y0, x1, y1)`` in pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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


@dataclass
class ImageObservation:
    """Everything measured in one image for one prompt."""

    width: int
    height: int
    objects: dict[str, ObjectObservation] = field(default_factory=dict)
    disparity: np.ndarray | None = None  # float H×W, larger = nearer; only for depth prompts

    def get(self, name: str) -> ObjectObservation:
        """The observation of a prompt object; an absent one if perception did not report it."""
        return self.objects.get(name) or ObjectObservation(name=name, present=False)
