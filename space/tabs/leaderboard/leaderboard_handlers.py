"""The Leaderboard tab's handlers: they read the store, and write the board's CSV and an entry's
`.eval_results` YAML into the app's folder (the layout and wiring: `leaderboard_tab`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from leaderboard.hub.entry_eval_results import ENTRY_PARAM, entry_eval_results, entry_page_url, no_yaml_reason
from leaderboard.hub.hub_check import HubLeaderboard, hub_cells, hub_status_markdown
from leaderboard.store.ranking import REPORTED, newest_entries, ranked_entries
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.text.submitted_names import MAX_ENTRY_ID, plain_markdown
from space.error_messages import error_markdown
from space.filled import shown_or_hidden
from space.shared_state import WorkDir

from .detail_figures import ranking_figure
from .entry_views import entry_page, pair_images
from .leaderboard_views import (
    SYNTHETIC_MARK,
    awaiting_frame,
    causes_frame,
    csv_frame,
    leaderboard_frame,
    model_status,
    polarity_figure,
    polarity_frame,
    shown_board,
)

log = logging.getLogger(__name__)
ENTRY_HELP = "Its id (the Submit tab lists them), or `?entry=ID` in the address; then Enter."


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
        benchmark is set), its CSV, the model picker (no model chosen, or the `?entry=` entry's model
        when the address names one), and the submissions awaiting verification (shown only when some do)."""
        entries = self.store.list_entries()
        board, csv_path, models, awaiting = self._board(entries)
        wanted = _query(request).get(ENTRY_PARAM, "")
        named = next((e.model_name for e in entries if wanted and e.submission_id == wanted), None)
        picker = gr.update(choices=models, value=named if named in models else None, visible=bool(models))
        return board, csv_path, picker, awaiting

    def refresh(self, current: str | None, hide: bool = False):
        """The board read again (after a submission, on the timer): the picker keeps the model it
        shows, the filter stays, and the timer runs while a submission awaits verification."""
        entries = self.store.list_entries()
        board, csv_path, models, awaiting = self._board(entries, hide)
        chosen = current if current in models else None
        waiting = not awaiting_frame(entries).empty
        picker = gr.update(choices=models, value=chosen, visible=bool(models))
        return board, csv_path, picker, awaiting, gr.Timer(active=waiting)

    def timer_state(self):
        """The refresh timer: on while a submission awaits verification."""
        return gr.Timer(active=not awaiting_frame(self.store.list_entries()).empty)

    def filtered(self, hide: bool):
        """The board and its CSV with entries marked *images not reproduced* left out (`hide`), or all
        of them again (`leaderboard_filtered`)."""
        board, csv_path, _, _ = self._board(self.store.list_entries(), bool(hide))
        return board, csv_path

    def filtered_if(self, hide: bool):
        """After the board was read in full: the filter applied again when it is on."""
        return self.filtered(hide) if hide else (gr.skip(), gr.skip())

    def ranking(self, hide: bool = False):
        """The plot of the ranking (the board's `overall` with its intervals), hidden when no row has one;
        and the line under the board saying how to fill it while no submission is ranked. Hidden is
        `MOUNTED_HIDDEN`, never False (`space.filled`): both are filled on a page load."""
        entries = self.store.list_entries()
        frame = self._frame(entries, bool(hide))
        figure = ranking_figure(frame, reported=REPORTED, synthetic=SYNTHETIC_MARK)
        ranked = any(not e.synthetic for e in ranked_entries(entries))
        return gr.update(value=figure, visible=shown_or_hidden(figure is not None)), gr.update(
            visible=shown_or_hidden(not ranked)
        )

    def _frame(self, entries: list, hide: bool = False):
        frame = leaderboard_frame(entries, hide_not_reproduced=hide)
        if self.hub is not None:
            frame["hub"] = hub_cells(list(frame["model"]), list(frame["status"]), entries, self.hub.snapshot)
        return frame

    def _board(self, entries: list, hide: bool = False):
        frame = self._frame(entries, hide)
        csv_path = self.work_dir.path / "negt2ibench_leaderboard.csv"
        csv_frame(frame).to_csv(csv_path, index=False)
        models = [e.model_name for e in newest_entries(entries)]
        awaiting = awaiting_frame(entries)
        return shown_board(frame), str(csv_path), models, gr.update(value=awaiting, visible=not awaiting.empty)

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
        """The regenerated pairs (submitted | regenerated) of the model's entry, those not its own first;
        the gallery shown only when there are some."""
        entry = next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)
        pairs = pair_images(entry) if entry is not None else []
        return gr.update(value=pairs, visible=bool(pairs))

    @staticmethod
    def detail_shown(model_name: str | None):
        """The model's detail, shown once a model is chosen."""
        return gr.update(visible=bool(model_name))

    def entry_from_query(self, request: gr.Request | None = None) -> str:
        """The entry the address names (`?entry=ID`), for the entry's page."""
        return _query(request).get(ENTRY_PARAM, "")[:MAX_ENTRY_ID]

    def entry_details(self, entry_id: str | None):
        """An entry's page by its id (or its first 8+ characters), any status: its status and reason,
        whether its images are the model's own with the pairs side by side, its fresh draw and seed."""
        text = (entry_id or "").strip().lower()[:MAX_ENTRY_ID]
        hidden = gr.update(value=[], visible=False)
        if not text:
            return ENTRY_HELP, hidden
        entries = self.store.list_entries()
        found = [e for e in entries if e.submission_id == text] or [
            e for e in entries if len(text) >= 8 and e.submission_id.startswith(text)
        ]
        if len(found) != 1:
            shown = plain_markdown(text)
            message = f"no entry {shown}" if not found else f"{len(found)} entries start with {shown}"
            return error_markdown(message), hidden
        pairs = pair_images(found[0])
        return entry_page(found[0]), gr.update(value=pairs, visible=bool(pairs))

    def entry_opened(self, request: gr.Request | None = None):
        """The entry the address names (`?entry=ID`), for its page, and the page's accordion open when it does."""
        wanted = self.entry_from_query(request)
        return wanted, gr.update(open=bool(wanted))

    def model_details(self, model_name: str | None):
        """A model's status line, its statements plot and its failure causes; each shown only when it has content."""
        entry = next((e for e in newest_entries(self.store.list_entries()) if e.model_name == model_name), None)
        if entry is None:
            message = "Choose a submitted model (the paper's rows have no detail)." if model_name else ""
            return message, gr.update(value=None, visible=False), gr.update(value=causes_frame(None), visible=False)
        causes = causes_frame(entry)
        status = model_status(entry)
        try:
            figure = polarity_figure(entry) if not polarity_frame(entry).empty else None
        except Exception:  # noqa: BLE001 - the status still belongs to this model
            log.exception("detail plot failed")
            figure = None
            status += "\n\n" + error_markdown("the plot could not be drawn (the error is in the server's log)")
        shown_causes = gr.update(value=causes, visible=not causes.empty)
        return status, gr.update(value=figure, visible=figure is not None), shown_causes


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
