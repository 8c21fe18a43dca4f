"""The model detail's figures in the Leaderboard tab, laid out and wired (their handlers,
`DetailFigures`, and `build`), beside the detail's tables: accuracy by setting and failure causes by
category, and every figure's data (these two and the polarity plot's) as CSV.

API name (for gradio_client): ``model_figures`` (a model name → the setting figure, the causes
figure, the CSV files). The figures are drawn by the pure builders of `detail_figures`; an entry that is not
verified is marked "claimed, not verified", as its numbers are the submitter's: first in each
figure's title (a 100-character name wraps below it), across each figure's axes, in each CSV's
name and in its `verification` column (every line).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from leaderboard.store.ranking import newest_entries
from leaderboard.store.sqlite_store import Entry, LeaderboardStore
from space.shared_state import WorkDir

from . import detail_figures as figures
from .leaderboard_views import causes_frame, claimed, figure_title, polarity_frame, verification_column

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class DetailFigures:
    """Reads the store; writes each figure's CSV into the app's folder."""

    store: LeaderboardStore
    work_dir: WorkDir

    def _entry(self, model_name: str | None) -> Entry | None:
        return next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)

    def figures(self, model_name: str | None):
        """The model's two figures and their CSV files, each shown only with content (a paper row, or an
        entry whose figures fail to draw, shows none)."""
        hidden = (gr.update(value=None, visible=False), gr.update(value=None, visible=False), gr.update(visible=False))
        entry = self._entry(model_name)
        if entry is None:
            return hidden
        try:
            drawn, files = self._drawn(entry)
        except Exception:  # noqa: BLE001 - a figure that fails is said in the log; the tables above stay
            log.exception("detail figures failed")
            return hidden
        return (
            *(gr.update(value=figure, visible=figure is not None) for figure in drawn),
            gr.update(value=files, visible=bool(files)),
        )

    def _drawn(self, entry: Entry) -> tuple[list[Any], list[str]]:
        """The entry's accuracy and causes figures (None where it has no such numbers) and their CSV files."""
        marked = claimed(entry)
        accuracy = figures.accuracy_frame([(entry.model_name, entry.row or {})], categories=False)
        causes = figures.causes_long(causes_frame(entry))
        drawn = [
            figures.accuracy_figure(
                accuracy, figure_title(entry.model_name, "accuracy by setting", marked), marked=marked
            )
            if not accuracy.empty
            else None,
            figures.causes_figure(
                causes, figure_title(entry.model_name, "failure causes by category", marked), marked=marked
            )
            if not causes.empty
            else None,
        ]
        data = {"accuracy_by_setting": accuracy, "failure_causes": causes, "statement_accuracy": polarity_frame(entry)}
        files = []
        for name, frame in data.items():
            suffix = "_claimed_not_verified" if marked else ""  # an empty file says it too
            path = self.work_dir.path / f"{entry.model_key}_{name}{suffix}.csv"
            path.write_text(figures.figure_csv(verification_column(frame, entry)), encoding="utf-8")
            files.append(str(path))
        return drawn, files


def build(model_pick: gr.Dropdown, on: DetailFigures) -> None:
    """The two figures side by side and the CSV files, filled when a model is picked."""
    with gr.Row():
        setting_plot = gr.Plot(label="Accuracy by setting", show_label=False, visible=False)  # the title says it
        causes_plot = gr.Plot(label="Failure causes by category", show_label=False, visible=False)
    data = gr.File(label="The figures' data (CSV)", file_count="multiple", interactive=False, visible=False)
    model_pick.change(on.figures, model_pick, [setting_plot, causes_plot, data], api_name="model_figures")
