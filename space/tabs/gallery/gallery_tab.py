"""The Gallery tab: a verified entry's images, filtered by category, setting, load, verdict and
failure cause, 24 thumbnails a page, each with the record's boxes and its PASS / FAIL banner drawn;
a click shows the full view, the Score tab's: the drawn image, the verdict and the per-statement table.

API names (for gradio_client): ``gallery`` (model, category, setting, load, verdict, cause, page →
the summary, the thumbnails, the page as a table, the page number) and ``gallery_item`` (model,
prompt id, sample index → the drawn image, the verdict, the table). The entries, records and images
come from `space.verified_images.verified_entries.VerifiedImages` (shared with Compare), the
thumbnails and captions from `space.verified_images.verified_views`, the filters and pages from
`gallery_views`. The tab is filled when it is opened, so a visit that never opens it fetches nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from dataset_builder.vocabulary import CATEGORIES
from evaluator.results import CAUSES, VERDICTS
from leaderboard.store.ranking import verification_label
from leaderboard.store.sqlite_store import Entry
from leaderboard.text.submitted_names import plain_markdown
from space import prompt_views
from space.error_messages import error_reply
from space.filled import shown_if_filled
from space.resources import GALLERY_CONCURRENCY
from space.verified_images import verified_views
from space.verified_images.verified_entries import (
    LOGGED,
    NO_ENTRY,
    FullViewReply,
    VerifiedImages,
    full_view_layout,
    no_table,
    source_line,
)
from space.verified_images.verified_source import SUPERSEDED, IndexedRecords

from . import gallery_views

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class GalleryHandlers:
    """The Gallery tab's handlers: pages of one verified entry's images, over the entries, records
    and images it shares with Compare (`VerifiedImages`)."""

    looking: VerifiedImages

    def models(self, current: str | None):
        """The model picker: every verified entry, the current pick kept when it still is one."""
        names = [e.model_name for e in self.looking.verified()]
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
        looking = self.looking
        wanted = gallery_views.GalleryFilter(category, setting, load, verdict, cause)
        problem = wanted.problem()
        entry = looking.entry_named(model)
        if problem or entry is None:
            message = problem or (f"no verified entry named {model!r}" if model else NO_ENTRY)
            reply = error_reply(message) if model or problem else message
            return reply, [], gallery_views.page_frame(gallery_views.page_of([], 1), [], looking.prompts), 1, []
        try:
            indexed = looking.records.of(entry)
        except Exception:  # noqa: BLE001 - the store failed for this entry: said, not raised
            log.exception("reading the records of %s failed", entry.submission_id)
            reply = error_reply(f"the records of {entry.model_name} could not be read here {LOGGED}")
            return reply, [], gallery_views.page_frame(gallery_views.page_of([], 1), [], looking.prompts), 1, []
        shown_page = gallery_views.page_of(gallery_views.matching_rows(indexed.rows, looking.prompts, wanted), page)
        shown = looking.images.thumbnails(entry, indexed.split, [indexed.record(r.key) for r in shown_page.rows])
        if any(s.reason == SUPERSEDED for s in shown):
            # the visitor's newer page is on its way: this one changes nothing on the page (no 24
            # placeholders for gradio to check and copy, which cost the event loop for everyone)
            return gallery_views.superseded(shown_page.number), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        thumbnails = [
            (s.path, verified_views.caption(r, s.reason)) for r, s in zip(shown_page.rows, shown, strict=True)
        ]
        reasons = [s.reason for s in shown]
        summary = self._summary(entry, indexed, shown_page, sum(bool(r) for r in reasons))
        keys = [list(r.key) for r in shown_page.rows]
        return (
            summary,
            thumbnails,
            gallery_views.page_frame(shown_page, reasons, looking.prompts),
            shown_page.number,
            keys,
        )

    def _summary(self, entry: Entry, indexed: IndexedRecords, page: gallery_views.Page, unavailable: int) -> str:
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
    def item(self, model: str | None, prompt_id: str | None, sample_index: Any) -> FullViewReply:
        """The full view of one image of the model (`VerifiedImages.item`)."""
        return self.looking.item(model, prompt_id, sample_index)

    def pick(self, model: str | None, keys: Sequence[Sequence[Any]] | None, event: gr.SelectData) -> FullViewReply:
        """A click on a thumbnail of the page: its full view."""
        index = event.index if isinstance(event.index, int) else -1
        if not keys or not 0 <= index < len(keys):
            return None, "Pick an image.", no_table()
        prompt_id, sample_index = keys[index]
        return self.looking.item(model, prompt_id, sample_index)


def _filter_row() -> list[gr.Dropdown]:
    """The picker and the filters, in one row: model, category, setting, load, verdict, cause."""
    with gr.Row():
        return [
            gr.Dropdown([], label="Verified model", scale=2, allow_custom_value=True),
            gr.Dropdown([gallery_views.ANY, *CATEGORIES], value=gallery_views.ANY, label="Category"),
            gr.Dropdown(
                [(gallery_views.ANY, gallery_views.ANY), *prompt_views.SETTING_CHOICES],
                value=gallery_views.ANY,
                label="Setting (P:N)",
            ),
            gr.Dropdown([gallery_views.ANY, *gallery_views.LOADS], value=gallery_views.ANY, label="Load"),
            gr.Dropdown([gallery_views.ANY, *VERDICTS], value=gallery_views.ANY, label="Verdict"),
            gr.Dropdown([gallery_views.ANY, *CAUSES], value=gallery_views.ANY, label="Failure cause"),
        ]


def build(on: GalleryHandlers) -> None:
    """The Gallery tab, filled when it is opened and on every change of the picker or a filter."""
    with gr.Tab("Gallery", id="gallery") as tab:
        gr.Markdown(
            "A verified model's images, 24 a page: the record's boxes and its verdict drawn on each. "
            "Filter, then click an image for its full view."
        )
        filters = _filter_row()
        model = filters[0]
        with gr.Row():
            previous = gr.Button("← Previous page", min_width=120)
            page = gr.Number(1, label="Page", precision=0, min_width=100)
            following = gr.Button("Next page →", min_width=120)
            show = gr.Button("Show", variant="primary", min_width=100)
        summary = gr.Markdown(elem_id="gallery-summary")
        thumbnails = gr.Gallery(
            label="Images (click one)",
            show_label=False,  # a label would sit on the first thumbnail; the summary above says what they are
            columns=6,
            height="auto",
            object_fit="contain",
            allow_preview=False,
            format="png",
            elem_id="gallery-thumbnails",
        )
        with gr.Accordion("This page as a table", open=False):
            table = gr.Dataframe(headers=gallery_views.GALLERY_COLUMNS, interactive=False, wrap=True)
        full = full_view_layout("gallery")
        item_prompt = gr.Textbox(visible=False, label="prompt id")
        item_sample = gr.Number(0, visible=False, precision=0, label="sample index")
        keys = gr.State([])
        outputs = [summary, thumbnails, table, page, keys]
        private: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}
        busy: dict[str, Any] = {"concurrency_limit": GALLERY_CONCURRENCY}  # a slow repo's page never queues others
        page_shown = [thumbnails, table]  # each shown only with something in it
        full_shown = [full[0], full[2]]
        show.click(on.gallery, [*filters, page], outputs, api_name="gallery", **busy).then(
            shown_if_filled, page_shown, page_shown, **private
        )
        for control in filters:
            control.change(on.first_page, filters, outputs, **private, **busy).then(
                shown_if_filled, page_shown, page_shown, **private
            )
        previous.click(on.previous_page, [*filters, page], outputs, **private, **busy).then(
            shown_if_filled, page_shown, page_shown, **private
        )
        following.click(on.next_page, [*filters, page], outputs, **private, **busy).then(
            shown_if_filled, page_shown, page_shown, **private
        )
        page.submit(on.gallery, [*filters, page], outputs, **private, **busy).then(
            shown_if_filled, page_shown, page_shown, **private
        )
        thumbnails.select(on.pick, [model, keys], list(full), **private, **busy).then(
            shown_if_filled, full_shown, full_shown, **private
        )
        gr.Button("item", visible=False).click(
            on.item, [model, item_prompt, item_sample], list(full), api_name="gallery_item", **busy
        ).then(shown_if_filled, full_shown, full_shown, **private)
        # Opening the tab fills the picker (a change of its value then shows the first page).
        tab.select(on.models, model, model, **private)
