"""The Compare tab: one prompt, picked as in Explore, and every verified model's images of it side
by side (one row per model, best overall first), each with its verdict and failure causes; the
prompt's matched group (the same content in its other polarities) is one click away, so "is the
negated prompt what breaks it?" is answered by looking. A click on an image gives its full view.

API names (for gradio_client): ``compare`` (a prompt id → the prompt, the group picker, the
summary, the images, the table). The entries, records and images are those the Gallery reads too
(`space.verified_images.verified_entries.VerifiedImages`); the handlers are this tab's own
(`CompareHandlers`), its table and rows' summary in `compare_views`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from dataset_builder.records import PromptLookupError, PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT, setting_label
from space import prompt_views
from space.error_messages import error_reply
from space.filled import filled, shown_if_filled
from space.prompt_filters import prompt_filters
from space.resources import GALLERY_CONCURRENCY
from space.verified_images import verified_views
from space.verified_images.verified_entries import LOGGED, FullViewReply, VerifiedImages, full_view_layout, no_table

from . import compare_views

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class CompareHandlers:
    """The Compare tab's handlers: one prompt's images of every verified model, over the entries,
    records and images it shares with the Gallery (`VerifiedImages`); `prompts`: every prompt, in the
    pickers' order."""

    looking: VerifiedImages
    prompts: Sequence[PromptRecord]

    def narrow(self, category: str, setting: str, load: str, obj: str, current: str | None):
        """The prompt picker after the Explore filters (the current pick kept when it still matches)."""
        matches = prompt_views.filter_prompts(self.prompts, category, setting, load, obj)[: prompt_views.EXPLORE_LIMIT]
        choices = [(prompt_views.prompt_label(p), p.prompt_id) for p in matches]
        ids = {p.prompt_id for p in matches}
        value = current if current in ids else (matches[0].prompt_id if matches else None)
        return gr.update(choices=choices, value=value)

    def opened(self, current: str | None):
        """Opening the tab: the first prompt when none is picked yet (its change shows it)."""
        return gr.update(value=current or (self.prompts[0].prompt_id if self.prompts else None))

    def compare(self, prompt_id: str | None):
        """Every verified model's images of the prompt, with the prompt and its matched group."""
        empty = compare_views.compare_frame([])
        if not prompt_id:
            return "Pick a prompt.", gr.update(choices=[], value=None), "", [], empty, []
        try:
            record = self.looking.prompts[str(prompt_id).split(":", 1)[0].strip()]
        except PromptLookupError as error:
            return error_reply(str(error)), gr.update(choices=[], value=None), "", [], empty, []
        group = [p for p in self.prompts if p.group_id == record.group_id]
        choices = [(f"{setting_label(p.num_pos, p.num_neg)} {p.prompt_id}", p.prompt_id) for p in group]
        entries = self.looking.verified()
        thumbnails: list[tuple[str, str]] = []
        shown: list[tuple[str, verified_views.GalleryRow | None, str]] = []
        keys: list[list[Any] | None] = []
        for entry in entries:
            try:
                indexed = self.looking.records.of(entry)
                rows = indexed.by_prompt.get(record.prompt_id, [])
                reason = "" if rows else "no image of this prompt in its results file"
            except Exception:  # noqa: BLE001 - one entry's store failure is its row's reason
                log.exception("reading the records of %s failed", entry.submission_id)
                rows, reason = [], f"its records could not be read here {LOGGED}"
            if reason:
                slot = (self.looking.images.placeholder(reason), f"{reason} · {entry.model_name}")
                thumbnails += [slot] * SAMPLES_PER_PROMPT
                shown.append((entry.model_name, None, reason))
                keys += [None] * SAMPLES_PER_PROMPT
                continue
            drawn = self.looking.images.thumbnails(entry, indexed.split, [indexed.record(r.key) for r in rows])
            for row, image in zip(rows, drawn, strict=True):
                thumbnails.append((image.path, verified_views.caption(row, image.reason, entry.model_name)))
                shown.append((entry.model_name, row, image.reason))
                keys.append([entry.model_name, *row.key])
            present = {row.sample_index for row in rows}
            for sample in (s for s in range(SAMPLES_PER_PROMPT) if s not in present):  # rows stay aligned
                missing = f"no sample {sample} in its results file"
                thumbnails.append((self.looking.images.placeholder(missing), f"{missing} · {entry.model_name}"))
                keys.append(None)
        summary = compare_views.rows_summary(entries)
        group_picker = gr.update(choices=choices, value=record.prompt_id)
        return (
            prompt_views.prompt_header(record),
            group_picker,
            summary,
            thumbnails,
            compare_views.compare_frame(shown),
            keys,
        )

    def pick(self, keys: Sequence[Sequence[Any] | None] | None, event: gr.SelectData) -> FullViewReply:
        """A click on an image: its full view (a model without an image of the prompt has none)."""
        index = event.index if isinstance(event.index, int) else -1
        chosen = keys[index] if keys and 0 <= index < len(keys) else None
        if not chosen:
            return None, "Pick an image.", no_table()
        model, prompt_id, sample_index = chosen
        return self.looking.item(model, prompt_id, sample_index)


def build(on: CompareHandlers, prompt_choices: Sequence[tuple[str, str]]) -> None:
    """The Compare tab; `prompt_choices`: (label, prompt id) of every prompt, the picker's first
    `prompt_views.EXPLORE_LIMIT` until the filters narrow it. Filled when it is opened."""
    with gr.Tab("Compare", id="compare") as tab:
        gr.Markdown("One prompt, every verified model's images of it side by side. Click an image for its full view.")
        filters = prompt_filters()  # category, setting, load, object
        chosen = gr.Dropdown(
            list(prompt_choices[: prompt_views.EXPLORE_LIMIT]),
            value=None,
            label="Prompt (type an id or words to search)",
            filterable=True,
            allow_custom_value=True,
        )
        header = gr.Markdown(elem_id="compare-prompt")
        group = gr.Radio([], label="Matched group: the same content in its other polarities (one click)", visible=False)
        summary = gr.Markdown(elem_id="compare-summary")
        thumbnails = gr.Gallery(
            label="Images (one row per model)",
            show_label=False,  # a label would sit on the first image; the summary above says whose they are
            visible=False,
            columns=SAMPLES_PER_PROMPT,  # one row per model
            height="auto",
            object_fit="contain",
            allow_preview=False,
            format="png",
            elem_id="compare-thumbnails",
        )
        with gr.Accordion("These images as a table", open=False):
            table = gr.Dataframe(headers=compare_views.COMPARE_COLUMNS, interactive=False, wrap=True, visible=False)
        full = full_view_layout("compare")
        keys = gr.State([])
        private: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}
        outputs = [header, group, summary, thumbnails, table, keys]
        for control in filters:
            control.change(on.narrow, [*filters, chosen], chosen, **private)
        shown = [group, thumbnails, table]  # each shown only with something in it
        chosen.change(on.compare, chosen, outputs, api_name="compare", concurrency_limit=GALLERY_CONCURRENCY).then(
            _shown_compare, shown, shown, **private
        )
        group.input(lambda picked: picked, group, chosen, **private)
        full_shown = [full[0], full[2]]
        thumbnails.select(on.pick, keys, list(full), **private, concurrency_limit=GALLERY_CONCURRENCY).then(
            shown_if_filled, full_shown, full_shown, **private
        )
        tab.select(on.opened, chosen, chosen, **private)


def _shown_compare(group: Any, thumbnails: Any, table: Any) -> tuple[Any, Any, Any]:
    """The matched group's choices shown once a prompt is chosen (a Radio's value is its choice, so it is
    shown with the images), the images and their table once there are some."""
    return (
        gr.update(visible=filled(thumbnails)),
        gr.update(visible=filled(thumbnails)),
        gr.update(visible=filled(table)),
    )
