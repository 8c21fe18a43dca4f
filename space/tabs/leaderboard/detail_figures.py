"""Pure figure builders beside the model detail's tables, and the paper's Table 3 rows as a plot:
accuracy by setting (a leaderboard row's eight settings, and its six categories), failure causes
by category (the causes table as stacked bars), in the colour-blind-safe palette
(`negt2ibench.core.palette`; the causes as `evaluator.report.plots` draws them). Each figure is
drawn from one long-form frame, which is also its CSV (`figure_csv`), so what is plotted is what
can be downloaded. Matplotlib's Agg canvas, no pyplot state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dataset_builder.vocabulary import LOADS, SETTINGS, setting_label
from evaluator.report.keys import CATEGORY_TITLES, TABLE3_CATEGORIES
from evaluator.report.plots import CAUSE_COLORS
from evaluator.results import CAUSES
from leaderboard.store.ranking import UNVERIFIED
from negt2ibench.core import palette

from .leaderboard_views import csv_frame, watermark

ACCURACY_COLUMNS = ["model", "axis", "key", "load", "accuracy"]  # axis: setting | category
SETTING_KEYS: tuple[str, ...] = tuple(setting_label(p, n) for p, n in SETTINGS)


def accuracy_frame(rows: Sequence[tuple[str, Mapping[str, Any]]], categories: bool = True) -> pd.DataFrame:
    """(label, leaderboard row) pairs → image accuracy (%) per setting (with its load) and, when
    `categories`, per category, one line each; a value a row does not have is left out."""
    lines = []
    for label, row in rows:
        for (p, n), key in zip(SETTINGS, SETTING_KEYS, strict=True):
            if row.get(key) is not None:
                lines.append({"model": label, "axis": "setting", "key": key, "load": p + n, "accuracy": row[key]})
        for category in TABLE3_CATEGORIES if categories else ():
            if row.get(category) is not None:
                lines.append(
                    {"model": label, "axis": "category", "key": category, "load": None, "accuracy": row[category]}
                )
    return pd.DataFrame(lines, columns=ACCURACY_COLUMNS)


def _empty(figure: Figure, message: str, marked: bool = False) -> Figure:
    axis = figure.add_subplot()
    axis.text(0.5, 0.5, message, ha="center", va="center")
    axis.set_axis_off()
    if marked:
        watermark(axis)
    return figure


def _grouped_bars(axis: Any, frame: pd.DataFrame, keys: Sequence[str], labels: Sequence[str]) -> None:
    models = list(dict.fromkeys(frame["model"]))
    width = 0.8 / max(len(models), 1)
    x = np.arange(len(keys))
    for number, model in enumerate(models):
        mine = dict(zip(frame[frame["model"] == model]["key"], frame[frame["model"] == model]["accuracy"], strict=True))
        values = [float(mine.get(k, np.nan)) for k in keys]
        offset = (number - (len(models) - 1) / 2) * width
        bars = axis.bar(x + offset, values, width, label=model, color=palette.series_color(number))
        axis.bar_label(bars, fmt="%.1f", fontsize="x-small", padding=1)
    axis.set_xticks(x, labels)
    axis.set_ylim(0, 100)
    axis.set_ylabel("images passing every statement (%)")


def accuracy_figure(frame: pd.DataFrame, title: str, *, marked: bool = False) -> Figure:
    """Grouped bars of `accuracy_frame`: by setting (loads 1–4 shaded in turn) and, when the frame
    has them, by category; one colour per model. `marked`: "claimed, not verified" across each axis."""
    axes_wanted = [axis for axis in ("setting", "category") if (frame["axis"] == axis).any()]
    figure = Figure(figsize=(7.5 if len(axes_wanted) < 2 else 12, 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    figure.suptitle(title, parse_math=False)  # a model's name is text, never mathtext
    if not axes_wanted:
        return _empty(figure, "no accuracy by setting for this model", marked)
    grid = figure.subplots(1, len(axes_wanted), squeeze=False, width_ratios=[8, 6][: len(axes_wanted)])
    for axis, which in zip(grid[0], axes_wanted, strict=True):
        part = frame[frame["axis"] == which]
        if which == "setting":
            start = 0
            for load in LOADS:
                count = sum(1 for p, n in SETTINGS if p + n == load)
                if load % 2:
                    axis.axvspan(start - 0.5, start + count - 0.5, color="0.93", zorder=0)
                start += count
            _grouped_bars(axis, part, SETTING_KEYS, SETTING_KEYS)
            axis.set_xlabel("setting P:N (loads 1 | 2 | 3 | 4)")
        else:
            _grouped_bars(axis, part, TABLE3_CATEGORIES, [CATEGORY_TITLES[c] for c in TABLE3_CATEGORIES])
            axis.tick_params(axis="x", labelrotation=20)
            axis.set_xlabel("category (averaged over its 8 settings)")
    if frame["model"].nunique() > 1:
        grid[0][-1].legend(fontsize="small", loc="upper right")
    for axis in grid[0] if marked else ():
        watermark(axis)
    return figure


def causes_long(causes: pd.DataFrame) -> pd.DataFrame:
    """The causes table (`leaderboard_views.causes_frame`) as the causes figure's data: category,
    cause, count, and its share of the category's failed statements."""
    lines = []
    for record in causes.to_dict("records"):
        failed = int(record.get("failed") or 0)
        category = str(record["category"]).removesuffix(f" ({UNVERIFIED})")  # the figure's title says it
        for cause in CAUSES:
            count = int(record.get(cause) or 0)
            lines.append(
                {
                    "category": category,
                    "cause": cause,
                    "count": count,
                    "share": count / failed if failed else 0.0,
                }
            )
    return pd.DataFrame(lines, columns=["category", "cause", "count", "share"])


def causes_figure(long: pd.DataFrame, title: str, *, marked: bool = False) -> Figure:
    """Stacked shares of the five causes among each category's failed statements (`marked`:
    "claimed, not verified" across the axis)."""
    figure = Figure(figsize=(7.5, 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    figure.suptitle(title, parse_math=False)
    if long.empty:
        return _empty(figure, "no failure causes for this model", marked)
    categories = list(dict.fromkeys(long["category"]))
    axis = figure.add_subplot()
    x = np.arange(len(categories))
    bottom = np.zeros(len(categories))
    for cause in CAUSES:
        mine = long[long["cause"] == cause].set_index("category")["share"].reindex(categories).fillna(0.0)
        shares = 100 * mine.to_numpy(dtype=float)
        axis.bar(x, shares, bottom=bottom, label=cause.replace("_", " "), color=CAUSE_COLORS[cause])
        bottom += shares
    axis.set_xticks(x, [CATEGORY_TITLES.get(c, c) for c in categories], rotation=20)
    axis.set_ylim(0, 100)
    axis.set_ylabel("share of failed statements (%)")
    axis.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.0, 0.5))
    if marked:
        watermark(axis)
    return figure


def figure_csv(frame: pd.DataFrame) -> str:
    """A figure's data as CSV text, with text cells a spreadsheet would run as a formula neutralised."""
    return csv_frame(frame).to_csv(index=False)


INTERVAL = re.compile(r"^\[(-?[0-9.]+), (-?[0-9.]+)\]$")  # the board's `overall_ci` cell


def ranking_figure(board: pd.DataFrame, *, reported: str, synthetic: str) -> Figure | None:
    """The board's `overall` as horizontal bars, in the board's order (ranked rows, then the paper's,
    then a demo's), with each ranked row's 95% interval; the paper's rows grey, a demo's hatched.

    Args:
        board: the leaderboard as shown (`leaderboard_frame`).
        reported: the Status of the paper's rows.
        synthetic: the Status of a demo's synthetic rows.

    Returns:
        The figure, or None when no row has an overall accuracy (nothing to plot).
    """
    rows = board[board["overall"].notna()]
    if rows.empty:
        return None
    figure = Figure(figsize=(8, 0.5 + 0.32 * len(rows)), layout="constrained")
    FigureCanvasAgg(figure)
    axis = figure.add_subplot()
    places = np.arange(len(rows))[::-1]  # the first row on top
    for place, (_, row) in zip(places, rows.iterrows(), strict=True):
        status = str(row["status"])
        colour = palette.GREY if status == reported else palette.SKY_BLUE if status == synthetic else palette.BLUE
        found = INTERVAL.match(str(row.get("overall_ci", "")))
        error, end = None, row["overall"]
        if found:
            low, high = float(found[1]), float(found[2])
            error, end = [[max(row["overall"] - low, 0.0)], [max(high - row["overall"], 0.0)]], max(end, high)
        axis.barh(place, row["overall"], color=colour, hatch="//" if status == synthetic else None, xerr=error)
        label = f"{row['overall']:.1f}" + (
            " (paper)" if status == reported else " (demo)" if status == synthetic else ""
        )
        axis.text(end + 1.0, place, label, va="center", fontsize="small")  # past the interval's end
    names = [_short(str(name)) for name in rows["model"]]
    axis.set_yticks(places, names, fontsize="small")
    axis.set_xlim(0, 100)
    axis.set_xlabel("overall: images passing every statement (%), with its 95% interval")
    return figure


def _short(name: str, most: int = 40) -> str:
    """A model's name on the plot's axis: at most MOST characters (the table shows it whole)."""
    return name if len(name) <= most else name[: most - 1] + "…"
