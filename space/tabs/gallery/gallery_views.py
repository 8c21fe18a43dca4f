"""Pure views of the Gallery tab: its filters (category, setting, load, verdict, failure cause), the
rows that match them, a page of them and the page as a table. No gradio, no store, no network:
each is testable on plain data. A row, its caption and its drawing, which Compare shows too, are
`space.verified_images.verified_views`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from dataset_builder.records import PromptLookup
from dataset_builder.vocabulary import CATEGORIES, SETTING_NAMES, setting_label
from evaluator.results import CAUSES, VERDICTS
from leaderboard.text.submitted_names import clip
from space.verified_images.verified_views import SHOWN, GalleryRow

ANY = "any"  # the filters' "no filter" (as `space.prompt_views.ANY`)
PAGE_SIZE = 24  # thumbnails per gallery page
LOADS = ("1", "2", "3", "4")
GALLERY_COLUMNS = ["#", "prompt_id", "sample", "setting", "verdict", "causes", "image"]


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


def superseded(number: int) -> str:
    """The summary of a page that a newer page of the same visitor's tab replaced before it was fetched."""
    return f"Page {number} was not fetched: a newer page of yours came first (only the newest is fetched)."
