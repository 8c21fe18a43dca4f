"""The order-to-space diagnostic as a PNG: Hom, Ali, Rev and Δ per model with their 95% intervals
(matplotlib, Agg canvas; it takes the `ots` table only, as `plots` takes tables only)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from negt2ibench.core.table import Table

MEASURES = (("hom", "Hom ↓"), ("ali", "Ali ↑"), ("rev", "Rev ↑"), ("delta", "Δ = Ali − Rev ↓"))


def _error(value: float, bounds) -> tuple[float, float]:
    low, high = bounds if bounds is not None else (math.nan, math.nan)
    if any(b is None or math.isnan(b) for b in (value, low, high)):
        return (0.0, 0.0)
    return (max(value - low, 0.0), max(high - value, 0.0))


def plot_ots(table: Table, path: str | Path, title: str = "Order-to-space bias (OTS-Bench)") -> Path:
    """Grouped bars: one group per measure, one bar per model (NaN: no bar), 95% intervals as error bars.

    Args:
        table: the `ots` table.
        path: the PNG to write.
        title: the plot's title.

    Returns:
        PATH, written.
    """
    figure = Figure(figsize=(9, 4.5), layout="constrained")
    axes = figure.add_subplot()
    models = [row["model"] for row in table.rows]
    x = np.arange(len(MEASURES))
    width = 0.8 / max(len(models), 1)
    for position, row in enumerate(table.rows):
        values = [row[key] if not math.isnan(row[key]) else 0.0 for key, _ in MEASURES]
        errors = np.array([_error(row[key], row[f"{key}_ci"]) for key, _ in MEASURES]).T
        offset = (position - (len(models) - 1) / 2) * width
        axes.bar(x + offset, values, width, yerr=errors, capsize=3, label=row["model"])
    axes.axhline(0, color="0.3", linewidth=0.8)
    axes.set_xticks(x, [label for _, label in MEASURES])
    axes.set_ylabel("percent / points")
    axes.set_title(title)
    if models:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    FigureCanvasAgg(figure)
    figure.savefig(Path(path), dpi=120, bbox_inches="tight")
    return Path(path)
