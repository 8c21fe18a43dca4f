"""Pure view builders of the Space's Leaderboard tab: stored entries in, tables, frames and figures out.

The leaderboard is a `Table` (negt2ibench.core.table) that leads with the ranking: `rank`, the
model, `overall` with its 95% interval (`overall_ci`, the bootstrap over prompts computed when the
entry was validated: `leaderboard.checks.compared_fields`), `polarity_gap`, then `status` (the verification and
its marks, e.g. † for an entry that covers part of the corpus), then the six categories and the
eight settings (Table 3's columns, `evaluator.report.TABLE3_COLUMNS`: the same keys and directions
as the report), coverage, images and `link`. Only verified entries are ranked (`RANKING_NOTE` says
how, in one line); the paper's reported rows (`PAPER_ROWS`) follow them unranked, carry the
paper's citation in `link` and are explained by `PAPER_ROWS_NOTE` (measured on the paper's corpus
draw, not this one). The model detail of an entry that is not verified is its file's claim: its
plot and its table say so in themselves (`UNVERIFIED`). Every number comes from the fields the spot
check compares (`leaderboard.checks.compared_fields`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from dataset_builder.corpus import CORPUS_VERSION
from dataset_builder.vocabulary import CATEGORIES
from evaluator.report import SETTING_LABELS, TABLE3_CATEGORIES, TABLE3_COLUMNS
from evaluator.results import CAUSES
from leaderboard.intake.identity import shown_identity
from leaderboard.store.entries import ModelDetail
from leaderboard.store.ranking import (
    PAPER_CITATION,
    PAPER_ROWS,
    REPORTED,
    UNVERIFIED,
    ranked_entries,
    verification_label,
)
from leaderboard.store.sqlite_store import Entry, images_pin
from leaderboard.text.submitted_names import csv_cell, plain_markdown
from negt2ibench.core import palette
from negt2ibench.core.table import MISSING_TEXT, Column, Table, to_frame

from .entry_views import FLAG, NOT_REPRODUCED, fresh_cells, fresh_lines, reproduction_mark, why_not_reproduced

# Shown above the leaderboard: what the reported rows are, and why they are not quite comparable.
PAPER_ROWS_NOTE = (
    f"Rows marked *{REPORTED}* are copied from Table 3 of the paper ({PAPER_CITATION}) and were not scored "
    f"here. They were measured on the paper's own draw of the corpus, not on this corpus (version "
    f"{CORPUS_VERSION}, whose prompts name other objects), so compare them with the other rows with care."
)
RANK = Column("rank", "Rank", fmt="{:.0f}")
OVERALL_CI = Column("overall_ci", "95% CI", fmt=str)
STATUS = Column("status", "Status", fmt=str)
FRESH = Column("fresh", "Fresh draw", fmt="{:.1f}", higher_is_better=True)
FRESH_GAP = Column("fresh_gap", "Fresh − overall", fmt=str)
LINK = Column("link", "Link", fmt=str)
_TABLE3 = {column.key: column for column in TABLE3_COLUMNS}
LEADERBOARD_TABLE_COLUMNS: tuple[Column, ...] = (
    RANK,
    _TABLE3["model"],
    _TABLE3["overall"],
    OVERALL_CI,
    _TABLE3["polarity_gap"],
    STATUS,
    FRESH,
    FRESH_GAP,
    *(_TABLE3[category] for category in TABLE3_CATEGORIES),
    *(_TABLE3[setting] for setting in SETTING_LABELS),
    _TABLE3["coverage"],
    _TABLE3["images"],
    LINK,
)
LEADERBOARD_HEADERS: list[str] = [column.key for column in LEADERBOARD_TABLE_COLUMNS]
# The widths of the columns whose cells are text; a number column is as wide as its header, which never
# wraps (`column_width`), so no header breaks inside a word at any width.
TEXT_WIDTHS: dict[str, int] = {
    "model": 230,
    "overall_ci": 118,
    "status": 250,
    "fresh_gap": 170,
    "link": 220,
    "hub": 220,
}
HEADER_CHAR_PX, CELL_PADDING_PX = 10, 28  # a header character of the table's bold monospace font, and a cell's padding
SORT_KEY = "overall"
SYNTHETIC_MARK = "synthetic demo · not ranked"  # the Status of a demo's entry (`Entry.synthetic`)
RANKING_NOTE = (
    f"Ranked by `{SORT_KEY}` (% of images passing every statement); only verified submissions are ranked, "
    f"the paper's rows (*{REPORTED}*) follow them unranked. What each column means: below the plot."
)
COLUMNS_NOTE = (
    "`overall_ci`: its 95% bootstrap interval, prompts resampled with their images; `polarity_gap` = 0:1 − 1:0 "
    "(points); then the six categories and the eight P:N settings (accuracy, %). † in `status`: the entry "
    "scored only part of the corpus (its coverage), so its accuracies are over those images only. "
    f"*{NOT_REPRODUCED}* in `status`: the verification job could not regenerate a sample of the entry's images from "
    "the model and seeds they record (a closed or private model, or no check ran), so nothing shows they are the "
    "model's own. `fresh`: the accuracy on prompts drawn from a secret seed by the job (same design, none "
    f"published); `fresh_gap`: fresh − overall, points, with its 95% interval, {FLAG} when the interval excludes 0. "
    "A click on a column's header sorts by it."
)
CAUSE_COLUMNS = ["category", *CAUSES, "failed"]
POLARITY_COLUMNS = ["category", "polarity", "accuracy"]

AWAITING_COLUMNS = ["model", "status", "reason", "attempts", "submitted (UTC)", "id"]
AWAITING_WIDTHS: list[str | int] = [
    "220px",
    "90px",
    "510px",
    "96px",
    "150px",
    "90px",
]  # the reason wraps, the rest fit 1280 px


def awaiting_frame(entries: Sequence[Entry]) -> pd.DataFrame:
    """Submissions not verified yet and not rejected (received, validated, pending, held), newest
    first: listed apart from the ranking, with the reason they wait."""
    import time

    rows = [
        {
            "model": e.model_name,
            "status": e.status,
            "reason": e.reason,
            "attempts": e.attempts,
            "submitted (UTC)": time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.created_at)),
            "id": e.submission_id[:8],
        }
        for e in sorted(entries, key=lambda e: e.created_at, reverse=True)
        if e.status in ("received", "validated", "pending", "held")
    ]
    return pd.DataFrame(rows, columns=AWAITING_COLUMNS)


def _interval_text(detail: ModelDetail | None) -> str:
    """The overall accuracy's interval as shown ("[13.9, 15.1]"), or `–` when the entry has none
    (stored before intervals were computed, or the paper's rows)."""
    bounds = detail.get("overall_interval") if detail else None
    if not bounds or len(bounds) != 2 or not all(isinstance(b, (int, float)) and math.isfinite(b) for b in bounds):
        return MISSING_TEXT
    return f"[{bounds[0]:.1f}, {bounds[1]:.1f}]"


def status_cell(entry: Entry) -> str:
    """The Status cell: the verification label, then its marks (†: part of the corpus scored; `images
    not reproduced`: `space.tabs.leaderboard.entry_views.reproduction_mark`)."""
    label = verification_label(entry)
    mark = reproduction_mark(entry)
    if mark:
        label += f" · {mark}"
    coverage = entry.row.get("coverage") if entry.row else None
    if isinstance(coverage, (int, float)) and math.isfinite(coverage) and coverage < 100:
        images = entry.row.get("images") if entry.row else None
        scored = f"{images:,} images, " if isinstance(images, int) else ""
        label += f" · † {scored}{coverage:.1f}% of the corpus"
    return label


def leaderboard_table(entries: Sequence[Entry], include_paper: bool = True, hide_not_reproduced: bool = False) -> Table:
    """One row per model with a verified entry (its newest), then the paper's reported rows,
    marked; a value a row does not have is None. Pending submissions are not ranked
    (`awaiting_frame` lists them); `leaderboard_frame` ranks and orders the rows. With
    `hide_not_reproduced`, entries marked *images not reproduced* are left out."""
    rows = []
    for entry in ranked_entries(entries):
        if hide_not_reproduced and reproduction_mark(entry):
            continue
        row = dict(entry.row or {})
        fresh, gap = fresh_cells(entry)
        row.update(
            {
                "model": entry.model_name,
                "status": SYNTHETIC_MARK if entry.synthetic else status_cell(entry),
                "overall_ci": _interval_text(entry.detail),
                "fresh": fresh,
                "fresh_gap": gap,
                "link": entry.link,
            }
        )
        rows.append(row)
    if include_paper:
        for paper in PAPER_ROWS:
            rows.append(
                {
                    **paper,
                    "status": REPORTED,
                    "overall_ci": MISSING_TEXT,
                    "fresh_gap": MISSING_TEXT,
                    "polarity_gap": round(paper["0:1"] - paper["1:0"], 1),
                    "link": PAPER_CITATION,
                }
            )
    cells = [{key: row.get(key) for key in LEADERBOARD_HEADERS} for row in rows]
    return Table("leaderboard", "Leaderboard", LEADERBOARD_TABLE_COLUMNS, cells)


def leaderboard_frame(
    entries: Sequence[Entry], include_paper: bool = True, hide_not_reproduced: bool = False
) -> pd.DataFrame:
    """The leaderboard as shown: numbers to one decimal; the verified rows by `overall`, best first,
    ranked 1, 2, ... (equal shown values share the better rank; a row without `overall` comes last,
    unranked); then the paper's rows, by `overall`, unranked; then a demo's synthetic entries, unranked.
    `hide_not_reproduced`: the filter that leaves out entries marked *images not reproduced* (the others
    keep their ranks among themselves)."""
    frame = to_frame(leaderboard_table(entries, include_paper, hide_not_reproduced), digits=1)
    # ranked rows first, then the paper's, then a demo's synthetic ones: never above the paper's rows
    frame["group"] = (frame["status"] == REPORTED).astype(int) + 2 * (frame["status"] == SYNTHETIC_MARK)
    frame = frame.sort_values(["group", SORT_KEY], ascending=[True, False], na_position="last")
    ranked = (frame["group"] == 0) & frame[SORT_KEY].notna()
    frame = frame.drop(columns="group").reset_index(drop=True)
    frame["rank"] = frame[SORT_KEY].where(ranked.to_numpy()).rank(method="min", ascending=False).astype("Int64")
    return frame


def column_width(key: str) -> str:
    """A column's width: a text column's own (`TEXT_WIDTHS`), else its header's on one line."""
    return f"{TEXT_WIDTHS.get(key, len(key) * HEADER_CHAR_PX + CELL_PADDING_PX)}px"


def shown_board(frame: pd.DataFrame) -> Any:
    """The board as the table shows it: each number column in one format (accuracies and gaps to one
    decimal, the rank and image count whole), a missing value as `–`; the data stay numbers (sorting)."""
    formats = {
        key: ("{:.0f}" if key == "rank" else "{:,.0f}" if key == "images" else "{:.1f}")
        for key in frame.columns
        if pd.api.types.is_numeric_dtype(frame[key])
    }
    return frame.style.format(formats, na_rep=MISSING_TEXT).hide(axis="index")


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as written to CSV: text cells that a spreadsheet would run as a formula neutralised."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(csv_cell)
    return safe


def model_status(entry: Entry) -> str:
    """The model detail's status line, every stranger's text in it as plain text."""
    text = plain_markdown
    status = (
        f"**{text(entry.model_name)}**: {text(verification_label(entry))} ({text(entry.reason)}); "
        f"submitted by {text(shown_identity(entry.submitter))}"
    )
    if entry.images_repo:
        status += f"; images {text(images_pin(entry))}"
    if entry.link:
        status += f"; link: {text(entry.link)}"
    why = why_not_reproduced(entry)
    if why:
        status += f"\n\n**{NOT_REPRODUCED}**: {text(why.removeprefix(NOT_REPRODUCED + ': '))}"
    if entry.fresh_draw is not None:
        status += "\n\n" + " ".join(fresh_lines(entry.fresh_draw))
    return status


def polarity_frame(entry: Entry | None) -> pd.DataFrame:
    """Statement accuracy per category and polarity (long form, for the plot)."""
    accuracy = entry.detail.get("statement_accuracy", {}) if entry and entry.detail else {}
    rows = [
        {"category": c, "polarity": p, "accuracy": accuracy[c][p]}
        for c in CATEGORIES
        if c in accuracy
        for p in ("positive", "negated")
    ]
    return pd.DataFrame(rows, columns=POLARITY_COLUMNS)


def claimed(entry: Entry | None) -> bool:
    """Whether the entry's numbers are only its file's claim: not verified (by a sample or in full)."""
    return entry is not None and entry.status != "verified"


TITLE_CHARS = 64  # a figure title's line, at most (a 100-character name wraps; the mark never falls off)


def figure_title(name: str, what: str, marked: bool) -> str:
    """A figure's title: `UNVERIFIED` first when `marked` (a long name cannot push it off the
    figure), then the name and WHAT, wrapped to lines of TITLE_CHARS."""
    import textwrap

    lines = textwrap.wrap(f"{name}: {what}", TITLE_CHARS, break_long_words=True) if name else [what]
    return "\n".join(([UNVERIFIED] if marked else []) + lines[:3])


def watermark(axis) -> None:
    """`UNVERIFIED` across the axes, faint and tilted: a figure cut from its title still says it."""
    axis.text(
        0.5,
        0.5,
        UNVERIFIED,
        transform=axis.transAxes,
        ha="center",
        va="center",
        fontsize=28,
        color="#b91c1c",
        alpha=0.35,
        rotation=20,
        parse_math=False,
    )


def verification_column(frame: pd.DataFrame, entry: Entry) -> pd.DataFrame:
    """FRAME (a figure's data) with a first column `verification`: the entry's label, so a CSV of an
    entry that is not verified says "claimed, not verified (pending)" on every line."""
    label = f"{UNVERIFIED} ({entry.status})" if claimed(entry) else verification_label(entry)
    marked = frame.copy()
    marked.insert(0, "verification", label)
    return marked


def polarity_figure(entry: Entry | None):
    """Positive vs negated statement accuracy per category of one model (a matplotlib figure); an
    entry that is not verified gets `UNVERIFIED` in its title and across the bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 3.4), layout="constrained")  # not pyplot's: no figure outlives its answer
    FigureCanvasAgg(figure)
    axis = figure.add_subplot()
    frame = polarity_frame(entry)
    if entry is None or frame.empty:
        axis.text(0.5, 0.5, "no statement-level results for this model", ha="center", va="center")
        axis.set_axis_off()
        return figure
    wide = frame.pivot(index="category", columns="polarity", values="accuracy").reindex(
        [c for c in CATEGORIES if c in set(frame["category"])]
    )
    wide[["positive", "negated"]].plot.bar(
        ax=axis, color={"positive": palette.POSITIVE, "negated": palette.NEGATED}, rot=0
    )
    axis.set_ylabel("statements satisfied (%)")
    axis.set_ylim(0, 100)
    axis.set_xlabel("")
    # A name is text, not mathtext: "$\frac{$" is drawn as typed, and cannot break the figure.
    if claimed(entry):
        watermark(axis)
    axis.set_title(figure_title(entry.model_name, "positive vs negated statements", claimed(entry)), parse_math=False)
    return figure


def causes_frame(entry: Entry | None) -> pd.DataFrame:
    """Failed statements per category and cause of one model; the category cells of an entry that
    is not verified say `UNVERIFIED`."""
    causes = entry.detail.get("failure_causes", {}) if entry and entry.detail else {}
    mark = f" ({UNVERIFIED})" if claimed(entry) else ""
    rows = [
        {
            "category": c + mark,
            **{k: int(causes[c].get(k, 0)) for k in CAUSES},
            "failed": int(causes[c].get("failed", 0)),
        }
        for c in CATEGORIES
        if c in causes
    ]
    return pd.DataFrame(rows, columns=CAUSE_COLUMNS)
