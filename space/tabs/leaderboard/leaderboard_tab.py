"""The Leaderboard tab: the ranked board (rank, model, overall and its interval, gap, status, then
categories and settings) and its CSV, the submissions awaiting verification, listed apart, and a
model's detail (statements by polarity and failure causes per category).

API names (for gradio_client): ``leaderboard`` (→ the board, the CSV, the model picker, the
awaiting list) and ``model_detail`` (a model name → its status, plot and causes). The frames and
the figure come from `leaderboard_views`. The board and the awaiting list are read again
after a submission (`BoardRefresh.after`) and on a timer while something awaits verification, so a
stored submission shows without a reload.

The Hub (`leaderboard.hub.hub_check`, `leaderboard.hub.entry_eval_results`; docs/hub.md): with a benchmark
dataset set, the board gains a `hub` column and ``hub_status`` (→ the line under it) says what the Hub's own
leaderboard holds; ``eval_results`` (a model name → a note, the `.eval_results` YAML of its verified
entry, the file) issues the YAML. `?entry=<submission id>` in the address opens that entry's detail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from leaderboard.hub.entry_eval_results import ENTRY_PARAM
from space.filled import MOUNTED_HIDDEN

from . import detail_figures_tab
from .entry_views import NOT_REPRODUCED
from .leaderboard_handlers import ENTRY_HELP, LeaderboardHandlers
from .leaderboard_views import (
    AWAITING_COLUMNS,
    AWAITING_WIDTHS,
    CAUSE_COLUMNS,
    COLUMNS_NOTE,
    LEADERBOARD_HEADERS,
    PAPER_ROWS_NOTE,
    RANKING_NOTE,
    column_width,
)

BOARD_REFRESH_SECONDS = 15.0  # how often the board is read again while a submission awaits verification
NONE_RANKED = "No verified submission yet: submit results on the Submit tab; the paper's rows are shown meanwhile."
PRIVATE: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}


# An entry's page (`?entry=ID`, the source of its .eval_results) opens this tab.
OPEN_ENTRY_JS = f"""() => {{
  if (new URLSearchParams(window.location.search).get("{ENTRY_PARAM}")) {{
    document.getElementById("leaderboard-tab-button")?.click();
  }}
}}"""


@dataclass(frozen=True, eq=False)
class BoardRefresh:
    """The board's components, read again by `after(event)` once another tab's event has run (a
    submission) and by the timer."""

    on: LeaderboardHandlers
    model_pick: gr.Dropdown
    hide: gr.Checkbox
    outputs: list[Any]  # the board, its CSV, the picker, the awaiting list, the timer

    def after(self, event: Any) -> None:
        event.then(self.on.refresh, [self.model_pick, self.hide], self.outputs, **PRIVATE)


def build(demo: gr.Blocks, on: LeaderboardHandlers, refresh_every: float = BOARD_REFRESH_SECONDS) -> BoardRefresh:
    """The Leaderboard tab, filled on load and on Refresh, and read again every `refresh_every`
    seconds while a submission awaits verification: the ranking first (table, legend, plot), then
    what waits, then a model's detail once one is chosen, then an entry's page on demand.

    Args:
        demo: the open Blocks the tab goes into (its page loads fill the tab).
        on: the tab's handlers.
        refresh_every: seconds between readings of the board while a submission awaits verification.

    Returns:
        The board's components, for another tab's event to read again (`BoardRefresh.after`).
    """
    with gr.Tab("Leaderboard", id="leaderboard", elem_id="leaderboard-tab"):
        shown = _board_layout(on)
        detail = _detail_layout(on)
        timer = gr.Timer(refresh_every, active=False)
        refreshed = _wire_events(on, shown, detail, timer)
    _wire_page_load(demo, on, shown, detail, timer)
    return refreshed


@dataclass
class _Board:
    """The board's components: the ranked table, its filter, Refresh, the CSV, the plot, the Hub's line, what waits."""

    board: gr.Dataframe
    hide: gr.Checkbox
    refresh: gr.Button
    csv_file: gr.DownloadButton
    ranking: list[Any]  # the plot of the ranking, and the line saying how to fill it while none is ranked
    hub_md: gr.Markdown
    awaiting: gr.Dataframe

    @property
    def table_outputs(self) -> list[Any]:
        """The ranked table and its CSV (what the filter redraws)."""
        return [self.board, self.csv_file]


@dataclass
class _Detail:
    """A model's detail (status, pairs, plot, causes, `.eval_results`) and the entry page's components."""

    model_pick: gr.Dropdown
    shown: gr.Column
    model_status_md: gr.Markdown
    model_pairs: gr.Gallery
    plot: gr.Plot
    causes: gr.Dataframe
    eval_note: gr.Markdown
    eval_yaml: gr.Code
    eval_file: gr.File
    entry_page: gr.Accordion
    entry_box: gr.Textbox
    entry_md: gr.Markdown
    entry_pairs: gr.Gallery


def _board_layout(on: LeaderboardHandlers) -> _Board:
    """The legend, the ranked board (a `hub` column with a benchmark), its filter, Refresh and CSV, the
    plot of the ranking, what the columns mean, the Hub's line and the submissions awaiting verification."""
    gr.Markdown(RANKING_NOTE, elem_id="leaderboard-ranking")
    headers = LEADERBOARD_HEADERS + (["hub"] if on.hub is not None else [])
    board = gr.Dataframe(
        headers=headers,
        interactive=False,
        show_search="filter",
        pinned_columns=2,  # rank and model stay when the other columns scroll
        column_widths=[column_width(key) for key in headers],
        wrap=True,
        label="Leaderboard",
        elem_id="leaderboard",
    )
    with gr.Row(equal_height=True):
        hide = gr.Checkbox(False, label=f"Hide entries marked '{NOT_REPRODUCED}'", elem_id="leaderboard-hide")
        refresh = gr.Button("Refresh", size="sm")
        csv_file = gr.DownloadButton("Download the board (CSV)", size="sm", elem_id="leaderboard-csv")
    # filled and shown by the page load: mounted from the start (`MOUNTED_HIDDEN`)
    none_ranked = gr.Markdown(NONE_RANKED, visible=MOUNTED_HIDDEN, elem_id="leaderboard-none")
    ranking = gr.Plot(label="The ranking", show_label=False, visible=MOUNTED_HIDDEN, elem_id="leaderboard-plot")
    with gr.Accordion("What the columns mean", open=False):
        gr.Markdown(f"{COLUMNS_NOTE} {PAPER_ROWS_NOTE}")
    hub_md = gr.Markdown()
    awaiting = gr.Dataframe(
        headers=AWAITING_COLUMNS,
        interactive=False,
        wrap=True,
        column_widths=AWAITING_WIDTHS,
        label="Awaiting verification (not ranked; retried automatically)",
        elem_id="leaderboard-awaiting",
        visible=False,
    )
    return _Board(board, hide, refresh, csv_file, [ranking, none_ranked], hub_md, awaiting)


def _detail_layout(on: LeaderboardHandlers) -> _Detail:
    """A model's detail, shown once one is chosen (its status, regenerated pairs, plot, causes, figures,
    `.eval_results`: each only with content), and an entry's page by its id, folded until asked for."""
    model_pick = gr.Dropdown(
        [], value=None, label="A model's detail: choose a model", elem_id="model-pick", visible=False
    )
    with gr.Column(visible=False) as shown:
        model_status_md = gr.Markdown()
        model_pairs = _pairs_gallery(
            "Regenerated by the verification job: submitted | regenerated (those not the model's own first)",
            "model-pairs",
        )
        plot = gr.Plot(label="Positive vs negated statements per category", show_label=False, visible=False)
        causes = gr.Dataframe(
            headers=CAUSE_COLUMNS,
            interactive=False,
            label="Failure causes by category (failed statements)",
            visible=False,
        )
        detail_figures_tab.build(model_pick, detail_figures_tab.DetailFigures(on.store, on.work_dir))
        eval_note = gr.Markdown()
        eval_yaml = gr.Code(
            language="yaml", label=".eval_results YAML (verified entries)", interactive=False, visible=False
        )
        eval_file = gr.File(label=".eval_results/negt2ibench.yaml", visible=False)
    with gr.Accordion("An entry's page, by its id (any status, rejected ones too)", open=False) as entry_page:
        entry_box = gr.Textbox(label="Entry id", elem_id="entry-id", info=ENTRY_HELP)
        entry_md = gr.Markdown(elem_id="entry-page")
        entry_pairs = _pairs_gallery("The entry's regenerated pairs: submitted | regenerated", "entry-pairs")
    return _Detail(
        model_pick,
        shown,
        model_status_md,
        model_pairs,
        plot,
        causes,
        eval_note,
        eval_yaml,
        eval_file,
        entry_page,
        entry_box,
        entry_md,
        entry_pairs,
    )


def _pairs_gallery(label: str, elem_id: str) -> gr.Gallery:
    """A gallery of regenerated pairs, hidden until there are some."""
    return gr.Gallery(
        label=label,
        columns=4,
        height="auto",
        object_fit="contain",  # each picture is a pair side by side: never cropped
        elem_id=elem_id,
        visible=False,
    )


def _board_outputs(shown: _Board, detail: _Detail) -> list[Any]:
    """What a reading of the board fills: the table, its CSV, the model picker, the awaiting list."""
    return [shown.board, shown.csv_file, detail.model_pick, shown.awaiting]


def _wire_events(on: LeaderboardHandlers, shown: _Board, detail: _Detail, timer: gr.Timer) -> BoardRefresh:
    """The tab's events: Refresh, the filter, a model picked, an entry's id typed, the timer's ticks."""
    board_outputs = _board_outputs(shown, detail)
    shown.refresh.click(on.leaderboard, None, board_outputs, api_name="leaderboard").then(
        on.timer_state, None, timer, **PRIVATE
    ).then(on.filtered_if, shown.hide, shown.table_outputs, **PRIVATE).then(
        on.ranking, shown.hide, shown.ranking, **PRIVATE
    )
    shown.hide.change(on.filtered, shown.hide, shown.table_outputs, api_name="leaderboard_filtered").then(
        on.ranking, shown.hide, shown.ranking, **PRIVATE
    )
    pick = detail.model_pick
    pick.change(on.detail_shown, pick, detail.shown, **PRIVATE)
    pick.change(on.model_details, pick, [detail.model_status_md, detail.plot, detail.causes], api_name="model_detail")
    pick.change(on.model_pairs, pick, detail.model_pairs, api_name="model_pairs")
    detail.entry_box.submit(
        on.entry_details, detail.entry_box, [detail.entry_md, detail.entry_pairs], api_name="entry_page"
    )
    eval_outputs = [detail.eval_yaml, detail.eval_file]
    pick.change(on.eval_results, pick, [detail.eval_note, *eval_outputs], api_name="eval_results").then(
        on.shown_if_filled, eval_outputs, eval_outputs, **PRIVATE
    )
    shown.refresh.click(on.hub_status, None, shown.hub_md, api_name="hub_status")
    refreshed = BoardRefresh(on, pick, shown.hide, [*board_outputs, timer])
    timer.tick(on.refresh, [pick, shown.hide], refreshed.outputs, **PRIVATE)
    return refreshed


def _wire_page_load(demo: gr.Blocks, on: LeaderboardHandlers, shown: _Board, detail: _Detail, timer: gr.Timer) -> None:
    """What a page load fills: the board and its plot, the entry named in the address (`?entry=`), the Hub's line."""
    board_outputs = _board_outputs(shown, detail)
    demo.load(on.leaderboard, None, board_outputs, api_name="internal", api_visibility="private").then(
        on.timer_state, None, timer, **PRIVATE
    ).then(on.ranking, None, shown.ranking, **PRIVATE)
    demo.load(
        on.entry_opened,
        None,
        [detail.entry_box, detail.entry_page],
        api_name="internal_entry",
        api_visibility="private",
    ).then(on.entry_details, detail.entry_box, [detail.entry_md, detail.entry_pairs], **PRIVATE)
    demo.load(on.hub_status, None, shown.hub_md, api_name="internal_hub", api_visibility="private")
    demo.load(None, None, None, js=OPEN_ENTRY_JS)
