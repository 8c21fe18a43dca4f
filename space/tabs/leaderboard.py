"""The Leaderboard tab: the ranked board and its CSV, a model's detail (statements by polarity
and failure causes per category), and the submissions awaiting verification, listed apart.

API names (for gradio_client): ``leaderboard`` (→ the board, the CSV, the model picker, the
awaiting list) and ``model_detail`` (a model name → its status, plot and causes). The frames and
the figure come from `space.leaderboard_view`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from ..handlers import WorkDir
from ..leaderboard_view import (
    AWAITING_COLUMNS,
    CAUSE_COLUMNS,
    LEADERBOARD_HEADERS,
    PAPER_ROWS_NOTE,
    awaiting_frame,
    causes_frame,
    csv_frame,
    leaderboard_frame,
    model_status,
    newest_entries,
    polarity_figure,
)
from ..store import LeaderboardStore
from ..views import error_markdown
from . import leaderboard_figures

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class LeaderboardHandlers:
    """The tab's handlers: they read the store and write the CSV into the app's folder."""

    store: LeaderboardStore
    work_dir: WorkDir

    def leaderboard(self):
        """The ranked board (verified and the paper's rows), its CSV, the model picker, and the
        submissions awaiting verification, listed apart."""
        entries = self.store.list_entries()
        frame = leaderboard_frame(entries)
        csv_path = self.work_dir.path / "negt2ibench_leaderboard.csv"
        csv_frame(frame).to_csv(csv_path, index=False)
        models = [e.model_name for e in newest_entries(entries)]
        picker = gr.update(choices=models, value=models[0] if models else None)
        return frame, str(csv_path), picker, awaiting_frame(entries)

    def model_details(self, model_name: str | None):
        entry = next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)
        if entry is None:
            message = "Pick a submitted model (paper-reported rows have no detail)."
            return message, polarity_figure(None), causes_frame(None)
        try:
            figure = polarity_figure(entry)
        except Exception as error:  # noqa: BLE001 - the status still belongs to this model
            log.exception("detail plot failed")
            figure = polarity_figure(None)
            failed = error_markdown(f"the plot failed: {error}")
            return f"{model_status(entry)}\n\n{failed}", figure, causes_frame(entry)
        return model_status(entry), figure, causes_frame(entry)


def build(demo: gr.Blocks, on: LeaderboardHandlers) -> None:
    """The Leaderboard tab, filled on load and on Refresh."""
    with gr.Tab("Leaderboard", id="leaderboard"):
        gr.Markdown(f"Accuracy (%) of images passing every statement. {PAPER_ROWS_NOTE} `polarity_gap` = 0:1 − 1:0.")
        board = gr.Dataframe(
            headers=LEADERBOARD_HEADERS,
            interactive=False,
            show_search="filter",
            pinned_columns=1,
            label="Leaderboard",
            elem_id="leaderboard",
        )
        with gr.Row():
            refresh = gr.Button("Refresh")
            csv_file = gr.File(label="CSV")
        model_pick = gr.Dropdown([], label="Model detail")
        model_status_md = gr.Markdown()
        plot = gr.Plot(label="Positive vs negated statements per category")
        causes = gr.Dataframe(
            headers=CAUSE_COLUMNS, interactive=False, label="Failure causes by category (failed statements)"
        )
        leaderboard_figures.build(model_pick, leaderboard_figures.DetailFigures(on.store, on.work_dir))
        gr.Markdown("Submissions awaiting verification are not ranked; they are retried automatically.")
        awaiting = gr.Dataframe(
            headers=AWAITING_COLUMNS, interactive=False, wrap=True, label="Awaiting verification (not ranked)"
        )
        board_outputs = [board, csv_file, model_pick, awaiting]
        refresh.click(on.leaderboard, None, board_outputs, api_name="leaderboard")
        model_pick.change(on.model_details, model_pick, [model_status_md, plot, causes], api_name="model_detail")
    demo.load(on.leaderboard, None, board_outputs, api_name="internal", api_visibility="private")
