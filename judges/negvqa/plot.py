"""NegVQA accuracy by domain as a PNG: one group of bars per domain (overall first), one bar per judge
with its 95% interval, the originals' accuracy as a tick above each bar when they were asked, chance
(50%) as a dashed line (matplotlib, Agg canvas; it takes `summary.summarize_judge`'s dicts only)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _error(value: float, bounds: Sequence[float] | None) -> tuple[float, float]:
    if bounds is None or any(b is None or math.isnan(b) for b in (value, *bounds)):
        return (0.0, 0.0)
    return (max(value - bounds[0], 0.0), max(bounds[1] - value, 0.0))


def plot_domains(summaries: Sequence[Mapping[str, Any]], path: str | Path, title: str = "NegVQA by domain") -> Path:
    """Grouped bars of accuracy (%) by domain, one bar per judge (a domain a judge lacks: no bar)."""
    groups = ["Overall", *dict.fromkeys(d for s in summaries for d in s["by_domain"])]
    figure = Figure(figsize=(max(6.0, 1.4 * len(groups) + 2), 4.2), layout="constrained")
    axes = figure.add_subplot()
    x = np.arange(len(groups))
    width = 0.8 / max(len(summaries), 1)
    for position, summary in enumerate(summaries):
        blocks = [summary, *(summary["by_domain"].get(d, {}) for d in groups[1:])]
        values = [100 * b["accuracy"] if b else math.nan for b in blocks]
        errors = np.array(
            [_error(v, [100 * c for c in b["accuracy_ci"]] if b else None) for v, b in zip(values, blocks, strict=True)]
        ).T
        offset = (position - (len(summaries) - 1) / 2) * width
        label = f"{summary['judge']} ({summary['params']})"
        bars = axes.bar(x + offset, np.nan_to_num(values), width, yerr=errors, capsize=3, label=label)
        original = summary.get("original") or {}
        if original.get("pairs"):
            ticks = [original] + [original.get("by_domain", {}).get(d, {}) for d in groups[1:]]
            heights = [100 * t["accuracy_original"] if t else math.nan for t in ticks]
            colour = bars.patches[0].get_facecolor() if bars.patches else None
            axes.scatter(x + offset, heights, marker="_", s=300, color=colour, linewidths=2)
    axes.axhline(50, color="0.4", linestyle="--", linewidth=0.8, label="chance (50%)")
    axes.set_xticks(x, groups)
    axes.set_ylim(0, 100)
    axes.set_ylabel("accuracy on negated questions (%)")
    axes.set_title(title + (" (ticks: the original questions)" if any(s.get("original") for s in summaries) else ""))
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    FigureCanvasAgg(figure)
    figure.savefig(Path(path), dpi=120, bbox_inches="tight")
    return Path(path)
