"""NegVQA accuracy by domain as a PNG: one group of bars per domain (overall first), one bar per judge
with its 95% interval, the originals' accuracy as a black tick across each bar when they were asked
(drawn over the bars, so one at or below the bar's top stays visible), chance (50%) as a dashed line
(matplotlib, Agg canvas; it takes `summary.summarize_judge`'s `JudgeSummary`s only)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .figures import DomainAccuracy, DropFigures, JudgeSummary, OriginalDrop


def _error(value: float, bounds: Sequence[float] | None) -> tuple[float, float]:
    if bounds is None or any(b is None or math.isnan(b) for b in (value, *bounds)):
        return (0.0, 0.0)
    return (max(value - bounds[0], 0.0), max(bounds[1] - value, 0.0))


ORIGINAL_TICK = "black"  # not a bar's colour: a tick inside its own bar would vanish


def domains_figure(summaries: Sequence[JudgeSummary], title: str = "NegVQA by domain") -> Figure:
    """Grouped bars of accuracy (%) by domain, one bar per judge (a domain a judge lacks: no bar).

    Args:
        summaries: each judge's summary (`summarize_judge`).
        title: the figure's title (a note on the ticks is added when they are drawn).

    Returns:
        The figure (no canvas attached).
    """
    groups = ["Overall", *dict.fromkeys(d for s in summaries for d in s["by_domain"])]
    figure = Figure(figsize=(max(6.0, 1.4 * len(groups) + 2), 4.2), layout="constrained")
    axes = figure.add_subplot()
    x = np.arange(len(groups))
    width = 0.8 / max(len(summaries), 1)
    ticked = False
    for position, summary in enumerate(summaries):
        domains = (summary["by_domain"].get(d) for d in groups[1:])
        blocks: list[JudgeSummary | DomainAccuracy | None] = [summary, *domains]
        values = [100 * b["accuracy"] if b else math.nan for b in blocks]
        errors = np.array(
            [_error(v, [100 * c for c in b["accuracy_ci"]] if b else None) for v, b in zip(values, blocks, strict=True)]
        ).T
        offset = (position - (len(summaries) - 1) / 2) * width
        label = f"{summary['judge']} ({summary['params']})"
        axes.bar(x + offset, np.nan_to_num(values), width, yerr=errors, capsize=3, label=label)
        original = summary["original"]
        if original and original["pairs"]:
            drops = (original["by_domain"].get(d) for d in groups[1:])
            ticks: list[OriginalDrop | DropFigures | None] = [original, *drops]
            heights = [100 * t["accuracy_original"] if t else math.nan for t in ticks]
            axes.scatter(
                x + offset,
                heights,
                marker="_",
                s=300,
                color=ORIGINAL_TICK,
                linewidths=2.5,
                zorder=3,  # over the bars and their error bars
                clip_on=False,  # a tick at 100% is drawn whole on the frame
                label=None if ticked else "original questions (tick)",
            )
            ticked = True
    axes.axhline(50, color="0.4", linestyle="--", linewidth=0.8, label="chance (50%)")
    axes.set_xticks(x, groups)
    axes.set_ylim(0, 100)
    axes.set_ylabel("accuracy on negated questions (%)")
    axes.set_title(title + (" (black ticks: the original questions)" if ticked else ""))
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def plot_domains(summaries: Sequence[JudgeSummary], path: str | Path, title: str = "NegVQA by domain") -> Path:
    """`domains_figure` as a PNG at PATH.

    Args:
        summaries: each judge's summary.
        path: the PNG to write.
        title: the figure's title.

    Returns:
        PATH, written.
    """
    figure = domains_figure(summaries, title)
    FigureCanvasAgg(figure)
    figure.savefig(Path(path), dpi=120, bbox_inches="tight")
    return Path(path)
