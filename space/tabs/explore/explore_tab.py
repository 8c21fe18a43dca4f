"""The Explore tab: filter the prompts, pick one, see its statements and its matched group.

API names (for gradio_client): ``explore`` (the filters → the count, table and picker) and
``prompt`` (a prompt id → its header, statements and group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gradio as gr

from dataset_builder.records import PromptIndex, PromptLookupError, PromptRecord
from space import prompt_views
from space.error_messages import error_reply
from space.prompt_filters import prompt_filters

from . import explore_views


@dataclass(frozen=True, eq=False)
class ExploreHandlers:
    """The tab's handlers: they read the prompts only."""

    prompts: Sequence[PromptRecord]
    index: PromptIndex

    def explore(self, category: str, setting: str, load: str, obj: str):
        matches = prompt_views.filter_prompts(self.prompts, category, setting, load, obj)
        shown = matches[: prompt_views.EXPLORE_LIMIT]
        first = matches[0].prompt_id if matches else None
        choices = [(prompt_views.prompt_label(p), p.prompt_id) for p in shown]
        return (
            explore_views.matches_note(len(matches)),
            explore_views.prompts_frame(shown),
            gr.update(choices=choices, value=first),
        )

    def show_prompt(self, prompt_id: str | None):
        if not prompt_id:
            return "Pick a prompt.", explore_views.statements_frame(None), explore_views.group_frame(None, ())
        try:
            record = self.index[prompt_id.strip()]
        except PromptLookupError as error:
            return error_reply(str(error)), explore_views.statements_frame(None), explore_views.group_frame(None, ())
        return (
            prompt_views.prompt_header(record),
            explore_views.statements_frame(record),
            explore_views.group_frame(record, self.prompts),
        )

    @staticmethod
    def pick_row(event: gr.SelectData):
        row = event.row_value or []
        return row[0] if row else None


def build(demo: gr.Blocks, on: ExploreHandlers, prompt_choices: Sequence[tuple[str, str]]) -> None:
    """The Explore tab; `prompt_choices`: (label, prompt id) of every prompt, the picker's first
    `prompt_views.EXPLORE_LIMIT` until the filters (applied on load) narrow it."""
    with gr.Tab("Explore", id="explore"):
        filters = prompt_filters()  # category, setting, load, object
        count = gr.Markdown()
        table = gr.Dataframe(
            headers=explore_views.PROMPT_COLUMNS,
            interactive=False,
            max_height=320,
            show_search="filter",
            label="Prompts (click a row)",
        )
        chosen = gr.Dropdown(
            list(prompt_choices[: prompt_views.EXPLORE_LIMIT]), label="Prompt", filterable=True, allow_custom_value=True
        )
        detail = gr.Markdown()
        statements = gr.Dataframe(headers=explore_views.STATEMENT_COLUMNS, label="Statements", interactive=False)
        group = gr.Dataframe(
            headers=explore_views.PROMPT_COLUMNS,
            label="Matched group (same content, other polarities)",
            interactive=False,
        )
        for control in filters:
            control.change(
                on.explore, filters, [count, table, chosen], api_name="internal", api_visibility="private"
            ).then(on.show_prompt, chosen, [detail, statements, group], api_name="internal", api_visibility="private")
        table.select(on.pick_row, None, chosen, api_name="internal", api_visibility="private")
        chosen.change(on.show_prompt, chosen, [detail, statements, group], api_name="prompt")
        gr.Button("Filter", visible=False).click(on.explore, filters, [count, table, chosen], api_name="explore")
    demo.load(on.explore, filters, [count, table, chosen], api_name="internal", api_visibility="private").then(
        on.show_prompt, chosen, [detail, statements, group], api_name="internal", api_visibility="private"
    )
