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

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from leaderboard.hub.entry_eval_results import ENTRY_PARAM, entry_eval_results, entry_page_url, no_yaml_reason
from leaderboard.hub.hub_check import HubLeaderboard, hub_cells, hub_status_markdown
from leaderboard.store.ranking import newest_entries
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.text.submitted_names import MAX_ENTRY_ID, plain_markdown
from space.error_messages import error_markdown
from space.shared_state import WorkDir

from . import detail_figures_tab
from .entry_views import NOT_REPRODUCED, entry_page, pair_images
from .leaderboard_views import (
    AWAITING_COLUMNS,
    AWAITING_WIDTHS,
    CAUSE_COLUMNS,
    COLUMNS_NOTE,
    FRESH_GAP_WIDTH,
    HEADLINE_WIDTHS,
    LEADERBOARD_HEADERS,
    OTHER_WIDTH,
    PAPER_ROWS_NOTE,
    RANKING_NOTE,
    TEXT_WIDTH,
    awaiting_frame,
    causes_frame,
    csv_frame,
    leaderboard_frame,
    model_status,
    polarity_figure,
)

log = logging.getLogger(__name__)
BOARD_REFRESH_SECONDS = 15.0  # how often the board is read again while a submission awaits verification
PRIVATE: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}


@dataclass(frozen=True, eq=False)
class LeaderboardHandlers:
    """The tab's handlers: they read the store and write the CSV into the app's folder."""

    store: LeaderboardStore
    work_dir: WorkDir
    hub: HubLeaderboard | None = None  # the Hub's leaderboard of the benchmark, cached
    hub_dataset: str | None = None  # the benchmark's dataset repo, for the .eval_results YAML
    space_url: str | None = None  # the Space's public address (None: the request's)

    def leaderboard(self, request: gr.Request | None = None):
        """The ranked board (verified and the paper's rows, and the Hub's word on each when a
        benchmark is set), its CSV, the model picker (on the `?entry=` entry's model when the address
        names one), and the submissions awaiting verification, listed apart."""
        entries = self.store.list_entries()
        frame, csv_path, models, awaiting = self._board(entries)
        wanted = _query(request).get(ENTRY_PARAM, "")
        named = next((e.model_name for e in entries if wanted and e.submission_id == wanted), None)
        chosen = named if named in models else (models[0] if models else None)
        return frame, csv_path, gr.update(choices=models, value=chosen), awaiting

    def refresh(self, current: str | None, hide: bool = False):
        """The board read again (after a submission, on the timer): the picker keeps the model it
        shows, the filter stays, and the timer runs while a submission awaits verification."""
        frame, csv_path, models, awaiting = self._board(self.store.list_entries(), hide)
        chosen = current if current in models else (models[0] if models else None)
        return frame, csv_path, gr.update(choices=models, value=chosen), awaiting, gr.Timer(active=not awaiting.empty)

    def timer_state(self):
        """The refresh timer: on while a submission awaits verification."""
        return gr.Timer(active=not awaiting_frame(self.store.list_entries()).empty)

    def filtered(self, hide: bool):
        """The board and its CSV with entries marked *images not reproduced* left out (`hide`), or all
        of them again (`leaderboard_filtered`)."""
        frame, csv_path, _, _ = self._board(self.store.list_entries(), bool(hide))
        return frame, csv_path

    def filtered_if(self, hide: bool):
        """After the board was read in full: the filter applied again when it is on."""
        return self.filtered(hide) if hide else (gr.skip(), gr.skip())

    def _board(self, entries: list, hide: bool = False):
        frame = leaderboard_frame(entries, hide_not_reproduced=hide)
        if self.hub is not None:
            frame["hub"] = hub_cells(list(frame["model"]), list(frame["status"]), entries, self.hub.snapshot)
        csv_path = self.work_dir.path / "negt2ibench_leaderboard.csv"
        csv_frame(frame).to_csv(csv_path, index=False)
        models = [e.model_name for e in newest_entries(entries)]
        return frame, str(csv_path), models, awaiting_frame(entries)

    def hub_status(self) -> str:
        """The line under the board: what the Hub's leaderboard of the benchmark holds."""
        return hub_status_markdown(self.hub.snapshot if self.hub else None, self.store.list_entries())

    @staticmethod
    def shown_if_filled(text: str | None, path: str | None):
        """The YAML box and the file box, shown only when there is a file (no empty boxes)."""
        return gr.update(visible=bool(text)), gr.update(visible=bool(path))

    def eval_results(self, model_name: str | None, request: gr.Request | None = None):
        """The model's verified entry's `.eval_results` YAML: a note, the YAML, the file (none for an
        entry that is not verified)."""
        entry = next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)
        if entry is None:
            return "", "", None
        reason = no_yaml_reason(entry)
        if reason:
            return f"No `.eval_results` file: {reason}.", "", None
        if not self.hub_dataset:
            return "No `.eval_results` file: set NEGT2I_HUB_DATASET to the benchmark's dataset repo.", "", None
        revision = self.hub.snapshot.revision if self.hub is not None else None
        if not revision:
            return f"No `.eval_results` file yet: the commit of {self.hub_dataset} was not read from the Hub.", "", None
        base = self.space_url or _base_url(request)
        page = entry_page_url(base, entry.submission_id)
        try:
            text = entry_eval_results(entry, dataset_id=self.hub_dataset, dataset_revision=revision, page_url=page)
        except ValueError as error:  # a stored row without a task's number
            return f"No `.eval_results` file: {error}.", "", None
        path = self.work_dir.path / f"eval_results_{entry.submission_id[:8]}" / "negt2ibench.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        note = (
            f"Add it to the model repo as `.eval_results/negt2ibench.yaml` (a pull request: "
            f"`negt2ibench leaderboard publish {entry.submission_id[:8]} --model-repo ORG/MODEL`); "
            f"its source is this entry's page: {page}"
        )
        return note, text, str(path)

    def model_pairs(self, model_name: str | None):
        """The regenerated pairs (submitted | regenerated) of the model's entry, those not its own first."""
        entry = next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)
        return pair_images(entry) if entry is not None else []

    def entry_from_query(self, request: gr.Request | None = None) -> str:
        """The entry the address names (`?entry=ID`), for the entry's page."""
        return _query(request).get(ENTRY_PARAM, "")[:MAX_ENTRY_ID]

    def entry_details(self, entry_id: str | None):
        """An entry's page by its id (or its first 8+ characters), any status: its status and reason,
        whether its images are the model's own with the pairs side by side, its fresh draw and seed."""
        text = (entry_id or "").strip().lower()[:MAX_ENTRY_ID]
        if not text:
            return "Open an entry's page: its id (the Submit tab lists them), or `?entry=ID` in the address.", []
        entries = self.store.list_entries()
        found = [e for e in entries if e.submission_id == text] or [
            e for e in entries if len(text) >= 8 and e.submission_id.startswith(text)
        ]
        if len(found) != 1:
            shown = plain_markdown(text)
            return error_markdown(f"no entry {shown}" if not found else f"{len(found)} entries start with {shown}"), []
        return entry_page(found[0]), pair_images(found[0])

    def model_details(self, model_name: str | None):
        entry = next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)
        if entry is None:
            message = "Pick a submitted model (paper-reported rows have no detail)."
            return message, polarity_figure(None), causes_frame(None)
        try:
            figure = polarity_figure(entry)
        except Exception:  # noqa: BLE001 - the status still belongs to this model
            log.exception("detail plot failed")
            figure = polarity_figure(None)
            failed = error_markdown("the plot could not be drawn (the error is in the server's log)")
            return f"{model_status(entry)}\n\n{failed}", figure, causes_frame(entry)
        return model_status(entry), figure, causes_frame(entry)


def _query(request: gr.Request | None) -> dict[str, str]:
    try:
        return dict(request.query_params) if request is not None else {}
    except Exception:  # noqa: BLE001 - a request without parameters (an API call) names no entry
        return {}


def _base_url(request: gr.Request | None) -> str:
    """The app's own address, from the request (when no public address is configured)."""
    url = getattr(request, "url", None) if request is not None else None
    scheme, netloc = getattr(url, "scheme", ""), getattr(url, "netloc", "")
    return f"{scheme}://{netloc}/" if scheme and netloc else "http://127.0.0.1:7860/"


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
    seconds while a submission awaits verification.

    Args:
        demo: the open Blocks the tab goes into (its page loads fill the tab).
        on: the tab's handlers.
        refresh_every: seconds between readings of the board while a submission awaits verification.

    Returns:
        The board's components, for another tab's event to read again (`BoardRefresh.after`).
    """
    with gr.Tab("Leaderboard", id="leaderboard", elem_id="leaderboard-tab"):
        gr.Markdown(RANKING_NOTE, elem_id="leaderboard-ranking")
        shown = _board_layout(on)
        detail = _detail_layout(on)
        timer = gr.Timer(refresh_every, active=False)
        refreshed = _wire_events(on, shown, detail, timer)
    _wire_page_load(demo, on, shown, detail, timer)
    return refreshed


@dataclass
class _Board:
    """The board's components: the ranked table, its filter, the Hub's line, Refresh, the CSV, the awaiting list."""

    board: gr.Dataframe
    hide: gr.Checkbox
    hub_md: gr.Markdown
    refresh: gr.Button
    csv_file: gr.File
    awaiting: gr.Dataframe

    @property
    def table_outputs(self) -> list[Any]:
        """The ranked table and its CSV (what the filter redraws)."""
        return [self.board, self.csv_file]


@dataclass
class _Detail:
    """A model's detail (status, pairs, plot, causes, `.eval_results`) and the entry page's components."""

    model_pick: gr.Dropdown
    model_status_md: gr.Markdown
    model_pairs: gr.Gallery
    plot: gr.Plot
    causes: gr.Dataframe
    eval_note: gr.Markdown
    eval_yaml: gr.Code
    eval_file: gr.File
    entry_box: gr.Textbox
    entry_md: gr.Markdown
    entry_pairs: gr.Gallery


def _board_layout(on: LeaderboardHandlers) -> _Board:
    """The ranked board (a `hub` column with a benchmark), its notes, Refresh and the CSV, the awaiting list."""
    headers = LEADERBOARD_HEADERS + (["hub"] if on.hub is not None else [])
    board = gr.Dataframe(
        headers=headers,
        interactive=False,
        show_search="filter",
        pinned_columns=2,  # rank and model stay when the other columns scroll
        column_widths=[
            HEADLINE_WIDTHS.get(key, TEXT_WIDTH if key in ("link", "hub") else OTHER_WIDTH)
            if key != "fresh_gap"
            else FRESH_GAP_WIDTH
            for key in headers
        ],
        wrap=True,
        label="Leaderboard",
        elem_id="leaderboard",
    )
    hide = gr.Checkbox(False, label=f"Hide entries marked '{NOT_REPRODUCED}'", elem_id="leaderboard-hide")
    gr.Markdown(f"{COLUMNS_NOTE} {PAPER_ROWS_NOTE}")
    hub_md = gr.Markdown()
    with gr.Row():
        refresh = gr.Button("Refresh")
        csv_file = gr.File(label="CSV")
    gr.Markdown("Submissions awaiting verification are not ranked; they are retried automatically.")
    awaiting = gr.Dataframe(
        headers=AWAITING_COLUMNS,
        interactive=False,
        wrap=True,
        column_widths=AWAITING_WIDTHS,
        label="Awaiting verification (not ranked)",
        elem_id="leaderboard-awaiting",
    )
    return _Board(board, hide, hub_md, refresh, csv_file, awaiting)


def _detail_layout(on: LeaderboardHandlers) -> _Detail:
    """A model's detail (its status, regenerated pairs, plot, causes, figures, `.eval_results`) and the entry page."""
    model_pick = gr.Dropdown([], label="Model detail")
    model_status_md = gr.Markdown()
    model_pairs = gr.Gallery(
        label="Regenerated by the verification job: submitted | regenerated (those not the model's own first)",
        columns=4,
        height="auto",
        object_fit="contain",  # each picture is a pair side by side: never cropped
        elem_id="model-pairs",
    )
    plot = gr.Plot(label="Positive vs negated statements per category", show_label=False)  # the title says it
    causes = gr.Dataframe(
        headers=CAUSE_COLUMNS, interactive=False, label="Failure causes by category (failed statements)"
    )
    detail_figures_tab.build(model_pick, detail_figures_tab.DetailFigures(on.store, on.work_dir))
    eval_note = gr.Markdown()
    eval_yaml = gr.Code(
        language="yaml", label=".eval_results YAML (verified entries)", interactive=False, visible=False
    )
    eval_file = gr.File(label=".eval_results/negt2ibench.yaml", visible=False)
    entry_box = gr.Textbox(label="Entry page: an entry's id (any status, rejected ones too)", elem_id="entry-id")
    entry_md = gr.Markdown(elem_id="entry-page")
    entry_pairs = gr.Gallery(
        label="The entry's regenerated pairs: submitted | regenerated",
        columns=4,
        height="auto",
        object_fit="contain",
        elem_id="entry-pairs",
    )
    return _Detail(
        model_pick,
        model_status_md,
        model_pairs,
        plot,
        causes,
        eval_note,
        eval_yaml,
        eval_file,
        entry_box,
        entry_md,
        entry_pairs,
    )


def _board_outputs(shown: _Board, detail: _Detail) -> list[Any]:
    """What a reading of the board fills: the table, its CSV, the model picker, the awaiting list."""
    return [shown.board, shown.csv_file, detail.model_pick, shown.awaiting]


def _wire_events(on: LeaderboardHandlers, shown: _Board, detail: _Detail, timer: gr.Timer) -> BoardRefresh:
    """The tab's events: Refresh, the filter, a model picked, an entry's id typed, the timer's ticks."""
    board_outputs = _board_outputs(shown, detail)
    shown.refresh.click(on.leaderboard, None, board_outputs, api_name="leaderboard").then(
        on.timer_state, None, timer, **PRIVATE
    ).then(on.filtered_if, shown.hide, shown.table_outputs, **PRIVATE)
    shown.hide.change(on.filtered, shown.hide, shown.table_outputs, api_name="leaderboard_filtered")
    pick = detail.model_pick
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
    """What a page load fills: the board, the entry named in the address (`?entry=`), the Hub's line."""
    board_outputs = _board_outputs(shown, detail)
    demo.load(on.leaderboard, None, board_outputs, api_name="internal", api_visibility="private").then(
        on.timer_state, None, timer, **PRIVATE
    )
    demo.load(on.entry_from_query, None, detail.entry_box, api_name="internal_entry", api_visibility="private").then(
        on.entry_details, detail.entry_box, [detail.entry_md, detail.entry_pairs], **PRIVATE
    )
    demo.load(on.hub_status, None, shown.hub_md, api_name="internal_hub", api_visibility="private")
    demo.load(None, None, None, js=OPEN_ENTRY_JS)
