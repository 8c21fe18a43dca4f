"""What the Gallery and Compare tabs both read: the verified entries (ranked as the leaderboard
ranks them), their records (`verified_source.EntryRecords`) and images (`verified_source.GalleryImages`),
and one image's full view (the drawn image, its verdict, its per-statement table) with its layout
(`full_view_layout`, as the Score tab lays out its answer). Each tab has its own handlers over one
`VerifiedImages` (`space.tabs.gallery.gallery_tab.GalleryHandlers`,
`space.tabs.compare.compare_tab.CompareHandlers`), so the two share the records and images kept in
memory and on disk, and neither tab serves the other's events.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd
from PIL import Image

from dataset_builder.records import PromptIndex
from leaderboard.store.image_sources import ImageSourceFactory
from leaderboard.store.ranking import ranked_entries
from leaderboard.store.sqlite_store import Entry, LeaderboardStore, images_pin
from leaderboard.text.submitted_names import plain_markdown

from .. import verdict_views
from ..error_messages import error_reply
from ..shared_state import WorkDir
from . import verified_views
from .verified_source import EntryRecords, GalleryImages

log = logging.getLogger(__name__)
FULL_SIDE = 1024  # the full view's placeholder side
LOGGED = "(the error is in the server's log)"  # where a failure's details go: never on the page
NO_ENTRY = "No verified entry yet: the gallery shows the images of verified submissions."

FullViewReply = tuple[Image.Image | None, str, pd.DataFrame]  # the image, the verdict's Markdown, its table


@dataclass(frozen=True, eq=False)
class VerifiedImages:
    """The verified entries from the store, their records and images (see the module's docstring)."""

    store: LeaderboardStore
    prompts: PromptIndex
    records: EntryRecords
    images: GalleryImages

    def verified(self) -> list[Entry]:
        """The verified entries, as the leaderboard ranks them.

        Returns:
            The entries `ranked_entries` shows, best overall first (ties by model name).
        """
        entries = ranked_entries(self.store.list_entries())
        return sorted(entries, key=lambda e: (-((e.row.get("overall") if e.row else None) or 0.0), e.model_name))

    def entry_named(self, model: str | None) -> Entry | None:
        """The verified entry of a model.

        Args:
            model: the model's name as the picker shows it (None: no pick).

        Returns:
            The verified entry of that name, or None when there is none.
        """
        return next((e for e in self.verified() if e.model_name == model), None)

    def item(self, model: str | None, prompt_id: str | None, sample_index: Any) -> FullViewReply:
        """The full view of one image of the model: drawn with its boxes, its verdict and table.

        Args:
            model: the verified model's name.
            prompt_id: the prompt's id (surrounding spaces ignored).
            sample_index: the sample's index, anything `int` reads as a whole number.

        Returns:
            The drawn image (None when there is no such entry or image), the verdict's Markdown or
            the error's, and the per-statement table (empty on an error).
        """
        entry = self.entry_named(model)
        if entry is None:
            return None, error_reply(f"no verified entry named {model!r}" if model else NO_ENTRY), no_table()
        try:
            key = (str(prompt_id or "").strip(), int(sample_index))
        except (TypeError, ValueError):
            return None, error_reply(f"sample index must be a whole number, got {sample_index!r}"), no_table()
        return self.full_view(entry, key)

    def full_view(self, entry: Entry, key: verified_views.Key) -> FullViewReply:
        """The full view of one image of an entry.

        Args:
            entry: a verified entry.
            key: the image's (prompt id, sample index).

        Returns:
            The drawn image (a placeholder saying why when it cannot be had; None when the entry
            has no such record or its records cannot be read), the verdict's Markdown (with where
            the image comes from) or the error's, and the per-statement table.
        """
        try:
            indexed = self.records.of(entry)
        except Exception:  # noqa: BLE001 - said in our words; the error goes to the log
            log.exception("reading the records of %s failed", entry.submission_id)
            return None, error_reply(f"the records could not be read here {LOGGED}"), no_table()
        if key not in indexed.lines or key[0] not in self.prompts:
            return None, error_reply(f"{entry.model_name} has no image {key[0]} #{key[1]}"), no_table()
        record, prompt = indexed.record(key), self.prompts[key[0]]
        shown = self.images.full(entry, indexed.split, record)  # drawn with the record's boxes
        summary = f"{verdict_views.verdict_summary(prompt, record)}\n\n{source_line(entry, indexed.split)}"
        picture = shown.image
        if picture is None:
            summary += f"\n\n**Image unavailable:** {plain_markdown(shown.reason)}"
            picture = verified_views.placeholder(shown.reason, FULL_SIDE // 2)
        return picture, summary, verdict_views.verdict_frame(prompt, record)


def source_line(entry: Entry, split: str) -> str:
    """Where an entry's images and verdicts come from, every stranger's text as plain text.

    Args:
        entry: a verified entry.
        split: the split of its images repo its images are read from.

    Returns:
        One Markdown sentence: the images' repo at its pinned revision, the split, the results file.
    """
    text = plain_markdown
    return (
        f"Images: {text(images_pin(entry))}, "
        f"split {text(split)}, fetched when first shown. Verdicts, causes and boxes: the submitted results file."
    )


def no_table() -> pd.DataFrame:
    """The full view's table when there is no image to show.

    Returns:
        The per-statement table with its columns and no row.
    """
    return verdict_views.verdict_frame(None, None)


def full_view_layout(prefix: str) -> tuple[gr.Image, gr.Markdown, gr.Dataframe]:
    """The full view of one image, as the Score tab lays out its answer; the image and its table shown
    once an image is picked (`space.filled.shown_if_filled` after the pick)."""
    with gr.Row():
        with gr.Column(scale=3):
            image = gr.Image(
                label="Image with the record's boxes",
                type="pil",
                format="png",
                interactive=False,
                elem_id=f"{prefix}-image",
                visible=False,
            )
        with gr.Column(scale=2):
            verdict = gr.Markdown("Click an image for its full view.", elem_id=f"{prefix}-verdict")
    table = gr.Dataframe(
        headers=verdict_views.VERDICT_COLUMNS,
        label="Objects and statements",
        interactive=False,
        wrap=True,
        visible=False,
    )
    return image, verdict, table


def verified_images(
    *, store: LeaderboardStore, prompts: PromptIndex, open_images: ImageSourceFactory, work_dir: WorkDir
) -> VerifiedImages:
    """What the Gallery and Compare tabs read, over the app's store and images.

    Args:
        store: the leaderboard's store (entries and their results).
        prompts: the benchmark's prompts, by id.
        open_images: opens an entry's images repo (the app's; `hub_images` on a Space).
        work_dir: the app's temporary folder, where the drawn images are kept (under its cache bound).

    Returns:
        The verified entries' records and images, shared by both tabs.
    """
    images = GalleryImages(open_images, lambda: work_dir.path)  # the folder is made (again) on first use
    return VerifiedImages(store, prompts, EntryRecords(store, prompts.ids()), images)
