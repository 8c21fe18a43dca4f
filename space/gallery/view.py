"""Pure view builders of the Gallery and Compare tabs: result records in, rows, pages, captions,
frames and drawn images out. No gradio, no store, no network: each is testable on plain data.

A gallery row is the little of a record that the filters read (`GalleryRow`: its key, verdict
and failure causes); a page is 24 of the rows that match (`page_of`). A thumbnail is the image
drawn by `evaluator.annotate.annotate`, the drawing of the Score tab: the record's boxes (records
keep no masks) with their labels and the PASS / FAIL banner. The full view is the same drawing at
full size, beside the Score tab's verdict summary and per-statement table (`space.views`).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd
from PIL import Image, ImageDraw, ImageFont

from dataset_builder.records import PromptLookup
from dataset_builder.vocabulary import CATEGORIES, SETTING_NAMES, setting_label
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.results import CAUSES, VERDICTS, ResultRecord, record_verdict
from leaderboard.text.submitted_names import clip

ANY = "any"  # the filters' "no filter" (as `space.prompt_views.ANY`)
PAGE_SIZE = 24  # thumbnails per gallery page
THUMB_SIDE = 320  # a thumbnail's longer side, in pixels
LOADS = ("1", "2", "3", "4")
GALLERY_COLUMNS = ["#", "prompt_id", "sample", "setting", "verdict", "causes", "image"]
COMPARE_COLUMNS = ["model", "sample", "verdict", "causes", "image"]
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


@dataclass(frozen=True)
class GalleryFilter:
    """The gallery's filters; `ANY` (or "" or None) leaves one out."""

    category: str | None = ANY
    setting: str | None = ANY
    load: str | int | None = ANY
    verdict: str | None = ANY
    cause: str | None = ANY

    def problem(self) -> str:
        """Why a filter value cannot match anything ("" when every value is one the tab offers)."""
        allowed = {
            "category": CATEGORIES,
            "setting": SETTING_NAMES,
            "load": LOADS,
            "verdict": VERDICTS,
            "cause": CAUSES,
        }
        for name, values in allowed.items():
            value = getattr(self, name)
            if not _any(value) and str(value) not in values:
                return f"unknown {name} {clip(str(value), 60)!r}: one of {', '.join(values)} (or {ANY})"
        return ""


def _any(value: object) -> bool:
    return value in (ANY, "", None)


def matching_rows(rows: Iterable[GalleryRow], prompts: PromptLookup, wanted: GalleryFilter) -> list[GalleryRow]:
    """The rows (in the order given) whose prompt is known and which pass every filter that is
    not `ANY`; `cause` matches a record with at least one failed statement of that cause."""
    found = []
    for row in rows:
        if row.prompt_id not in prompts:
            continue
        prompt = prompts[row.prompt_id]
        if (
            (_any(wanted.category) or prompt.category == wanted.category)
            and (_any(wanted.setting) or prompt.setting == wanted.setting)
            and (_any(wanted.load) or str(prompt.load) == str(wanted.load))
            and (_any(wanted.verdict) or row.verdict == wanted.verdict)
            and (_any(wanted.cause) or wanted.cause in row.causes)
        ):
            found.append(row)
    return found


@dataclass(frozen=True)
class Page:
    """One page of the matching rows: `number` of `pages` (1-based), `total` rows in all."""

    number: int
    pages: int
    total: int
    rows: tuple[GalleryRow, ...]

    @property
    def first(self) -> int:
        """The 1-based position of the page's first row among all matches (0 when none)."""
        return (self.number - 1) * PAGE_SIZE + 1 if self.rows else 0


def page_of(rows: Sequence[GalleryRow], number: float | int | None, size: int = PAGE_SIZE) -> Page:
    """Page `number` of `rows`, clamped to the pages there are (a missing or bad number: page 1)."""
    pages = max(1, math.ceil(len(rows) / size))
    try:
        wanted = int(number) if number is not None and math.isfinite(float(number)) else 1
    except (TypeError, ValueError):
        wanted = 1
    wanted = min(max(wanted, 1), pages)
    start = (wanted - 1) * size
    return Page(wanted, pages, len(rows), tuple(rows[start : start + size]))


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


def page_frame(page: Page, reasons: Sequence[str], prompts: PromptLookup) -> pd.DataFrame:
    """The page as a table (one row per thumbnail, in order): what each image is and shows."""
    rows = [
        {
            "#": page.first + offset,
            "prompt_id": row.prompt_id,
            "sample": row.sample_index,
            "setting": setting_label(prompts[row.prompt_id].num_pos, prompts[row.prompt_id].num_neg),
            "verdict": row.verdict,
            "causes": ", ".join(row.causes),
            "image": reason or SHOWN,
        }
        for offset, (row, reason) in enumerate(zip(page.rows, reasons, strict=True))
    ]
    return pd.DataFrame(rows, columns=GALLERY_COLUMNS)


def compare_frame(shown: Sequence[tuple[str, GalleryRow | None, str]]) -> pd.DataFrame:
    """(model, row or None when the model has no image of the prompt, reason) → one row each."""
    rows = [
        {
            "model": model,
            "sample": row.sample_index if row else "",
            "verdict": row.verdict if row else "",
            "causes": ", ".join(row.causes) if row else "",
            "image": reason or SHOWN,
        }
        for model, row, reason in shown
    ]
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


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
