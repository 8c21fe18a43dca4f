"""PNG plots of the report's tables (matplotlib, Agg canvas; no pyplot global state).

Each plot takes only `Table`s built by `evaluator.report.tables`, never the records or the `Report`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evaluator.results import CAUSES
from negt2ibench.core import palette
from negt2ibench.core.table import Table

from .keys import ALL, CATEGORY_TITLES, POOLED, SETTING_LABELS, TABLE3_CATEGORIES

# The five causes in the colour-blind-safe palette (the Space's model detail draws them too).
CAUSE_COLORS = {
    "subject_missing": palette.SKY_BLUE,
    "target_missing": palette.BLUE,
    "forbidden_rendered": palette.VERMILLION,
    "wrong_value": palette.ORANGE,
    "dead_zone": palette.GREY,
}


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    return path


def _models(table: Table) -> list[str]:
    return list(dict.fromkeys(row["model"] for row in table.rows))


def plot_accuracy_by_setting(table3: Table, path: str | Path) -> Path:
    """Image accuracy per setting (1:0 … 2:2), one line per model of Table 3; load boundaries shaded.

    Args:
        table3: the Table 3 table.
        path: the PNG to write.

    Returns:
        PATH, written.
    """
    figure = Figure(figsize=(9, 4.5), layout="constrained")
    axes = figure.add_subplot()
    x = np.arange(len(SETTING_LABELS))
    for start, stop in ((-0.5, 1.5), (4.5, 6.5)):  # loads 1 and 3, alternating bands
        axes.axvspan(start, stop, color="0.93", zorder=0)
    for number, row in enumerate(table3.rows):
        model = row["model"]
        label = model if row["complete"] else f"{model} (coverage {row['coverage']:.1f}%)"
        values = [row[s] for s in SETTING_LABELS]
        axes.plot(x, values, marker="o", label=label, color=palette.series_color(number))
    axes.set_xticks(x, SETTING_LABELS)
    axes.set_xlabel("setting P:N (loads 1 | 2 | 3 | 4)")
    axes.set_ylabel("image accuracy (%)")
    axes.set_ylim(0, 100)
    axes.set_title("Accuracy by polarity setting")
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(figure, Path(path))


def plot_statement_accuracy(statement_accuracy: Table, path: str | Path) -> Path:
    """Positive vs negated statement accuracy per category, one panel per model.

    Args:
        statement_accuracy: the statement accuracy table.
        path: the PNG to write.

    Returns:
        PATH, written.
    """
    models = _models(statement_accuracy)
    count = len(models)
    columns = min(3, count)
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(5 * columns, 3.8 * rows), layout="constrained")
    categories = TABLE3_CATEGORIES + (ALL,)
    x = np.arange(len(categories))
    width = 0.38
    for position, model in enumerate(models, start=1):
        axes = figure.add_subplot(rows, columns, position)
        table = {row["category"]: row for row in statement_accuracy.rows if row["model"] == model}
        axes.bar(
            x - width / 2, [table[c]["positive"] for c in categories], width, label="positive", color=palette.POSITIVE
        )
        axes.bar(
            x + width / 2, [table[c]["negated"] for c in categories], width, label="negated", color=palette.NEGATED
        )
        axes.set_xticks(x, [CATEGORY_TITLES.get(c, "All") for c in categories], rotation=30, fontsize="small")
        axes.set_ylim(0, 100)
        axes.set_ylabel("statements satisfied (%)")
        axes.set_title(model)
    figure.axes[0].legend(fontsize="small")
    figure.suptitle("Statement accuracy: positive vs negated")
    return _save(figure, Path(path))


def plot_failure_causes(by_setting: Table, by_category: Table, path: str | Path) -> Path:
    """Figure 3: stacked shares of the five causes among failed statements, per setting and per category.

    Pooled over all models when the tables hold several; the failed-statement count above each bar.

    Args:
        by_setting: the failure causes by setting table.
        by_category: the failure causes by category table.
        path: the PNG to write.

    Returns:
        PATH, written.
    """
    models = _models(by_setting)
    scope = POOLED if POOLED in models else models[0]
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    panels = (
        (by_setting, "setting", SETTING_LABELS, "(a) by setting"),
        (by_category, "category", TABLE3_CATEGORIES, "(b) by category"),
    )
    for position, (table, axis, buckets, title) in enumerate(panels, start=1):
        source = {row[axis]: row for row in table.rows if row["model"] == scope}
        axes = figure.add_subplot(1, 2, position)
        x = np.arange(len(buckets))
        bottom = np.zeros(len(buckets))
        failed = np.array([source[b]["failed"] for b in buckets], dtype=float)
        for cause in CAUSES:
            counts = np.array([source[b][cause] for b in buckets], dtype=float)
            shares = np.divide(100 * counts, failed, out=np.zeros_like(counts), where=failed > 0)
            axes.bar(x, shares, bottom=bottom, label=cause.replace("_", " "), color=CAUSE_COLORS[cause])
            bottom += shares
        for xi, total in zip(x, failed, strict=False):
            axes.text(float(xi), 101, f"{int(total):,}", ha="center", va="bottom", fontsize="x-small")
        labels = buckets if axis == "setting" else [CATEGORY_TITLES[b] for b in buckets]
        axes.set_xticks(x, labels, rotation=0 if axis == "setting" else 30)
        axes.set_ylim(0, 110)
        axes.set_ylabel("share of failed statements (%)")
        axes.set_title(title)
    figure.axes[-1].legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5))
    figure.suptitle(f"Failure causes of failed statements ({'all models' if scope == POOLED else scope})")
    return _save(figure, Path(path))
