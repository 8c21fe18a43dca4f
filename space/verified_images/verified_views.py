"""Pure views of a verified entry's images that the Gallery and Compare tabs both show: result records
in, rows, captions and drawn images out. No gradio, no store, no network: each is testable on
plain data.

A gallery row is the little of a record that the filters read (`GalleryRow`: its key, verdict
and failure causes; the Gallery's filters and pages are `space.tabs.gallery.gallery_views`, Compare's
table `space.tabs.compare.compare_views`). A thumbnail is the image
drawn by `evaluator.annotate.annotate`, the drawing of the Score tab: the record's boxes (records
keep no masks) with their labels and the PASS / FAIL banner. The full view is the same drawing at
full size, beside the Score tab's verdict summary and per-statement table (`space.verdict_views`).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import NamedTuple

from PIL import Image, ImageDraw, ImageFont

from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.results import CAUSES, ResultRecord, record_verdict
from leaderboard.text.submitted_names import clip

THUMB_SIDE = 320  # a thumbnail's longer side, in pixels
SHOWN = "shown"  # the `image` cell of an image that could be fetched
LABEL_CHARS = 40  # an object's name drawn on an image, at most (it comes from a submitted file)

Key = tuple[str, int]  # (prompt_id, sample_index)


class GalleryRow(NamedTuple):
    """What the gallery's filters read of one record."""

    prompt_id: str
    sample_index: int
    verdict: str  # pass | fail | error: `evaluator.results.record_verdict`
    causes: tuple[str, ...]  # the causes of its failed statements, in `CAUSES` order, once each

    @property
    def key(self) -> Key:
        return (self.prompt_id, self.sample_index)


def causes_of(record: ResultRecord) -> tuple[str, ...]:
    """The causes of the record's failed statements, in `CAUSES` order, each once."""
    found = {s.cause for s in record.statements if not s.satisfied and s.cause}
    return tuple(cause for cause in CAUSES if cause in found)


def gallery_row(record: ResultRecord) -> GalleryRow:
    return GalleryRow(record.prompt_id, record.sample_index, record_verdict(record), causes_of(record))


def caption(row: GalleryRow, reason: str = "", model: str = "") -> str:
    """A thumbnail's caption, what matters first (a narrow thumbnail shows only its start): the
    verdict and causes, then the model and sample (Compare) or the prompt id and sample (Gallery),
    and why the image is missing when it is."""
    verdict = row.verdict.upper() + (f": {', '.join(row.causes)}" if row.causes else "")
    parts = (
        [verdict, clip(model, 60), f"#{row.sample_index}"]
        if model
        else [verdict, f"{row.prompt_id} #{row.sample_index}"]
    )
    if reason:
        parts.append(f"image unavailable: {clip(reason, 160)}")
    return " · ".join(parts)


# -- drawing -------------------------------------------------------------------------------------------


def _clamped_box(box: Sequence[float] | None, scale: float, width: int, height: int):
    """The record's box scaled to the drawn image and kept inside it; None for a box that is
    missing or not four finite numbers (a submitted file may hold anything)."""
    if box is None or len(box) != 4 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in box):
        return None
    x0, y0, x1, y1 = (float(v) * scale for v in box)
    x0, x1 = sorted((min(max(x0, 0.0), width - 1.0), min(max(x1, 0.0), width - 1.0)))
    y0, y1 = sorted((min(max(y0, 0.0), height - 1.0), min(max(y1, 0.0), height - 1.0)))
    return (x0, y0, x1, y1)


def record_observation(record: ResultRecord, width: int, height: int, scale: float = 1.0) -> ImageObservation:
    """What the record says was seen, as an observation to draw: each object with its box
    (scaled by `scale`, kept inside the image) and confidence. Records keep no masks."""
    observation = ImageObservation(width=width, height=height)
    for obj in record.objects:
        name = clip(obj.name, LABEL_CHARS)
        box = _clamped_box(obj.box, scale, width, height)
        confidence = obj.confidence if math.isfinite(obj.confidence) else 0.0
        observation.objects[name] = ObjectObservation(
            name=name, present=obj.present and box is not None, confidence=confidence, box=box
        )
    return observation


def shrunk(image: Image.Image, max_side: int) -> Image.Image:
    """IMAGE shrunk to MAX_SIDE on its long side (LANCZOS), or IMAGE itself when it is not larger."""
    if max(image.size) <= max_side:
        return image
    scale = max_side / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.convert("RGB").resize(size, Image.Resampling.LANCZOS)


def drawn(image: Image.Image, record: ResultRecord, max_side: int | None = None, *, scale: float = 1.0) -> Image.Image:
    """The image with the record's boxes, labels and verdict banner drawn as the Score tab draws
    them (`evaluator.annotate.annotate`); first shrunk to `max_side` when larger (a thumbnail).
    SCALE: IMAGE's width over the width the record's boxes are in (< 1 for an image shrunk before)."""
    from evaluator.annotate import annotate

    if max_side is not None and max(image.size) > max_side:
        smaller = shrunk(image, max_side)
        scale *= smaller.width / image.width
        image = smaller
    return annotate(image, record_observation(record, image.width, image.height, scale), record)


def placeholder(reason: str, side: int = THUMB_SIDE) -> Image.Image:
    """A grey square that says the image is unavailable, and why."""
    image = Image.new("RGB", (side, side), (229, 231, 235))
    draw = ImageDraw.Draw(image)
    body_size = max(10, side // 22)
    title, body = ImageFont.load_default(size=max(12, side // 14)), ImageFont.load_default(size=body_size)
    draw.text((side // 12, side // 10), "image unavailable", fill=(55, 65, 81), font=title)
    per_line = max(12, int(side * 0.8 / (0.6 * body_size)))  # a character is at most ~0.6 of the font size wide
    lines = textwrap.wrap(clip(reason, 400), width=per_line, break_long_words=True)[:10]
    draw.multiline_text((side // 12, side // 4), "\n".join(lines), fill=(75, 85, 99), font=body, spacing=4)
    return image
