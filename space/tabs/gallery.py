"""The Gallery tab: a verified entry's images, filtered by category, setting, load, verdict and
failure cause, 24 thumbnails a page, each with the record's boxes and its PASS / FAIL banner drawn;
a click shows the full view, the Score tab's: the drawn image, the verdict and the per-statement table.

API names (for gradio_client): ``gallery`` (model, category, setting, load, verdict, cause, page →
the summary, the thumbnails, the page as a table, the page number) and ``gallery_item`` (model,
prompt id, sample index → the drawn image, the verdict, the table). The records and images come
from `space.gallery.source`, the thumbnails and captions from `space.gallery.view`. The tab is
filled when it is opened, so a visit that never opens it fetches nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from dataset_builder.records import PromptIndex
from dataset_builder.vocabulary import CATEGORIES
from evaluator.results import CAUSES
from leaderboard.images import ImageSourceFactory
from leaderboard.names import plain_markdown
from leaderboard.ranking import ranked_entries, verification_label
from leaderboard.store import Entry, LeaderboardStore, images_pin

from .. import views
from ..gallery import view
from ..gallery.source import EntryRecords, GalleryImages, IndexedRecords
from ..handlers import WorkDir, error_reply
from ..resources import GALLERY_CONCURRENCY

log = logging.getLogger(__name__)
FULL_SIDE = 1024  # the full view's placeholder side
LOGGED = "(the error is in the server's log)"  # where a failure's details go: never on the page
NO_ENTRY = "No verified entry yet: the gallery shows the images of verified submissions."


@dataclass(frozen=True, eq=False)
class GalleryHandlers:
    """The Gallery's handlers (the Compare tab's too): verified entries from the store, their
    records (`EntryRecords`) and images (`GalleryImages`)."""

    store: LeaderboardStore
    prompts: PromptIndex
    records: EntryRecords
    images: GalleryImages

    def verified(self) -> list[Entry]:
        """The verified entries, as the leaderboard ranks them (`ranked_entries`), best overall first."""
        entries = ranked_entries(self.store.list_entries())
        return sorted(entries, key=lambda e: (-float((e.row or {}).get("overall") or 0.0), e.model_name))

    def entry_named(self, model: str | None) -> Entry | None:
        return next((e for e in self.verified() if e.model_name == model), None)

    def models(self, current: str | None):
        """The model picker: every verified entry, the current pick kept when it still is one."""
        names = [e.model_name for e in self.verified()]
        return gr.update(choices=names, value=current if current in names else (names[0] if names else None))

    # -- a page
    def first_page(self, model, category, setting, load, verdict, cause):
        return self.gallery(model, category, setting, load, verdict, cause, 1)

    def previous_page(self, model, category, setting, load, verdict, cause, page):
        return self.gallery(model, category, setting, load, verdict, cause, (page or 1) - 1)

    def next_page(self, model, category, setting, load, verdict, cause, page):
        return self.gallery(model, category, setting, load, verdict, cause, (page or 1) + 1)

    def gallery(self, model, category, setting, load, verdict, cause, page):
        """One page of the model's images that match the filters."""
        wanted = view.GalleryFilter(category, setting, load, verdict, cause)
        problem = wanted.problem()
        entry = self.entry_named(model)
        if problem or entry is None:
            message = problem or (f"no verified entry named {model!r}" if model else NO_ENTRY)
            reply = error_reply(message) if model or problem else message
            return reply, [], view.page_frame(view.page_of([], 1), [], self.prompts), 1, []
        try:
            indexed = self.records.of(entry)
        except Exception:  # noqa: BLE001 - the store failed for this entry: said, not raised
            log.exception("reading the records of %s failed", entry.submission_id)
            reply = error_reply(f"the records of {entry.model_name} could not be read here {LOGGED}")
            return reply, [], view.page_frame(view.page_of([], 1), [], self.prompts), 1, []
        shown_page = view.page_of(view.matching_rows(indexed.rows, self.prompts, wanted), page)
        shown = self.images.thumbnails(entry, indexed.split, [indexed.record(r.key) for r in shown_page.rows])
        thumbnails = [(s.path, view.caption(r, s.reason)) for r, s in zip(shown_page.rows, shown, strict=True)]
        reasons = [s.reason for s in shown]
        summary = self._summary(entry, indexed, shown_page, sum(bool(r) for r in reasons))
        keys = [list(r.key) for r in shown_page.rows]
        return summary, thumbnails, view.page_frame(shown_page, reasons, self.prompts), shown_page.number, keys

    def _summary(self, entry: Entry, indexed: IndexedRecords, page: view.Page, unavailable: int) -> str:
        text = plain_markdown
        lines = [
            f"**{text(entry.model_name)}** ({text(verification_label(entry))}): {page.total:,} of "
            f"{len(indexed.rows):,} images match; page {page.number} of {page.pages}"
            + (f", images {page.first:,}–{page.first + len(page.rows) - 1:,}" if page.rows else ""),
            source_line(entry, indexed.split),
        ]
        if unavailable:
            lines.append(f"{unavailable} of these images could not be fetched: their captions say why.")
        return "\n\n".join(lines)

    # -- the full view
    def item(self, model: str | None, prompt_id: str | None, sample_index: Any):
        """The full view of one image of the model: drawn with its boxes, its verdict and table."""
        entry = self.entry_named(model)
        if entry is None:
            return None, error_reply(f"no verified entry named {model!r}" if model else NO_ENTRY), _no_table()
        try:
            key = (str(prompt_id or "").strip(), int(sample_index))
        except (TypeError, ValueError):
            return None, error_reply(f"sample index must be a whole number, got {sample_index!r}"), _no_table()
        return self.full_view(entry, key)

    def pick(self, model: str | None, keys: Sequence[Sequence[Any]] | None, event: gr.SelectData):
        """A click on a thumbnail of the page: its full view."""
        index = event.index if isinstance(event.index, int) else -1
        if not keys or not 0 <= index < len(keys):
            return None, "Pick an image.", _no_table()
        prompt_id, sample_index = keys[index]
        return self.item(model, prompt_id, sample_index)

    def full_view(self, entry: Entry, key: view.Key):
        try:
            indexed = self.records.of(entry)
        except Exception:  # noqa: BLE001 - said in our words; the error goes to the log
            log.exception("reading the records of %s failed", entry.submission_id)
            return None, error_reply(f"the records could not be read here {LOGGED}"), _no_table()
        if key not in indexed.lines or key[0] not in self.prompts:
            return None, error_reply(f"{entry.model_name} has no image {key[0]} #{key[1]}"), _no_table()
        record, prompt = indexed.record(key), self.prompts[key[0]]
        picture, reason = self.images.full(entry, indexed.split, record)  # drawn with the record's boxes
        summary = f"{views.verdict_summary(prompt, record)}\n\n{source_line(entry, indexed.split)}"
        if picture is None:
            summary += f"\n\n**Image unavailable:** {plain_markdown(reason)}"
            picture = view.placeholder(reason, FULL_SIDE // 2)
        return picture, summary, views.verdict_frame(prompt, record)


def source_line(entry: Entry, split: str) -> str:
    """Where an entry's images and verdicts come from, every stranger's text as plain text."""
    text = plain_markdown
    return (
        f"Images: {text(images_pin(entry))}, "
        f"split {text(split)}, fetched when first shown. Verdicts, causes and boxes: the submitted results file."
    )


def _no_table() -> pd.DataFrame:
    return views.verdict_frame(None, None)


def gallery_handlers(
    *, store: LeaderboardStore, prompts: PromptIndex, open_images: ImageSourceFactory, work_dir: WorkDir
) -> GalleryHandlers:
    """The handlers of the Gallery and Compare tabs: images through `open_images` (the app's,
    `hub_images` on a Space), kept in the app's temporary folder (under its cache bound)."""
    images = GalleryImages(open_images, lambda: work_dir.path)  # the folder is made (again) on first use
    return GalleryHandlers(store, prompts, EntryRecords(store, prompts.ids()), images)


def full_view_layout(prefix: str) -> tuple[gr.Image, gr.Markdown, gr.Dataframe]:
    """The full view of one image, as the Score tab lays out its answer."""
    with gr.Row():
        with gr.Column(scale=3):
            image = gr.Image(
                label="Image with the record's boxes",
                type="pil",
                format="png",
                interactive=False,
                elem_id=f"{prefix}-image",
            )
        with gr.Column(scale=2):
            verdict = gr.Markdown("Click an image for its full view.", elem_id=f"{prefix}-verdict")
    table = gr.Dataframe(headers=views.VERDICT_COLUMNS, label="Objects and statements", interactive=False, wrap=True)
    return image, verdict, table


def build(on: GalleryHandlers) -> None:
    """The Gallery tab, filled when it is opened and on every change of the picker or a filter."""
    with gr.Tab("Gallery", id="gallery") as tab:
        gr.Markdown(
            "A verified model's images, 24 a page: the record's boxes and its verdict drawn on each. "
            "Filter, then click an image for its full view."
        )
        with gr.Row():
            model = gr.Dropdown([], label="Verified model", scale=2, allow_custom_value=True)
            category = gr.Dropdown([view.ANY, *CATEGORIES], value=view.ANY, label="Category")
            setting = gr.Dropdown([(view.ANY, view.ANY), *views.SETTING_CHOICES], value=view.ANY, label="Setting (P:N)")
            load = gr.Dropdown([view.ANY, *view.LOADS], value=view.ANY, label="Load")
            verdict = gr.Dropdown([view.ANY, *view.VERDICTS], value=view.ANY, label="Verdict")
            cause = gr.Dropdown([view.ANY, *CAUSES], value=view.ANY, label="Failure cause")
        with gr.Row():
            previous = gr.Button("← Previous page", min_width=120)
            page = gr.Number(1, label="Page", precision=0, min_width=100)
            following = gr.Button("Next page →", min_width=120)
            show = gr.Button("Show", variant="primary", min_width=100)
        summary = gr.Markdown(elem_id="gallery-summary")
        thumbnails = gr.Gallery(
            label="Images (click one)",
            columns=6,
            height="auto",
            object_fit="contain",
            allow_preview=False,
            format="png",
            elem_id="gallery-thumbnails",
        )
        with gr.Accordion("This page as a table", open=False):
            table = gr.Dataframe(headers=view.GALLERY_COLUMNS, interactive=False, wrap=True)
        full = full_view_layout("gallery")
        item_prompt = gr.Textbox(visible=False, label="prompt id")
        item_sample = gr.Number(0, visible=False, precision=0, label="sample index")
        keys = gr.State([])
        filters = [model, category, setting, load, verdict, cause]
        outputs = [summary, thumbnails, table, page, keys]
        private: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}
        busy: dict[str, Any] = {"concurrency_limit": GALLERY_CONCURRENCY}  # a slow repo's page never queues others
        show.click(on.gallery, [*filters, page], outputs, api_name="gallery", **busy)
        for control in filters:
            control.change(on.first_page, filters, outputs, **private, **busy)
        previous.click(on.previous_page, [*filters, page], outputs, **private, **busy)
        following.click(on.next_page, [*filters, page], outputs, **private, **busy)
        page.submit(on.gallery, [*filters, page], outputs, **private, **busy)
        thumbnails.select(on.pick, [model, keys], list(full), **private, **busy)
        gr.Button("item", visible=False).click(
            on.item, [model, item_prompt, item_sample], list(full), api_name="gallery_item", **busy
        )
        # Opening the tab fills the picker (a change of its value then shows the first page).
        tab.select(on.models, model, model, **private)
