"""The paper's Figures 5 and 6 for a corpus, as PNGs and CSVs (`negt2ibench validate DIR --out FIGDIR`).

Figure 5: each category's object uses, sorted from most to least used, with the most even
allocation of their total as a dashed line; per draw (top row) and per prompt (bottom row), see
`dataset_builder.balance`. Figure 6: each value's or predicate's statements within its category,
positive and negated stacked, the even count dashed. The numbers are `Table`s (written as CSV by
the one renderer); the plots are drawn from them (matplotlib, Agg canvas, no pyplot state).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from negt2ibench.core.atomic import write_atomic
from negt2ibench.core.table import Column, Table, to_csv

from .balance import COUNTINGS, Allocation, allocations, element_counts, value_counts
from .records import PromptRecord
from .vocabulary import CATEGORIES

POSITIVE, NEGATED = "#4c72b0", "#dd6e9a"  # the paper's blue (positive) and pink (negated)
FILES = (
    "figure5.png",
    "figure5.csv",
    "figure5_summary.csv",
    "figure6.png",
    "figure6.csv",
    "elements.csv",
)


def _text(key: str, label: str) -> Column:
    return Column(key, label, str)


def _count(key: str, label: str) -> Column:
    return Column(key, label, "{:.0f}")


def figure5_table(found: Sequence[Allocation]) -> Table:
    """One row per (category, counting, rank): the object, its uses, the most even allocation's."""
    columns: tuple[Column, ...] = (_text("category", "Category"), _text("counting", "Counting"), _count("rank", "Rank"))
    columns += (_text("object", "Object"), _count("count", "Uses"), _count("even", "Most even"))
    rows = [
        {"category": a.category, "counting": a.counting, "rank": rank, "object": name, "count": count, "even": even}
        for a in found
        for rank, (name, count, even) in enumerate(zip(a.objects, a.counts, a.even, strict=True), start=1)
    ]
    return Table("figure5", "Figure 5: object uses per category", columns, rows)


def figure5_summary(found: Sequence[Allocation]) -> Table:
    """Per category and counting: the total, the classes used, the range of uses and the most even
    allocation's, and whether it holds."""
    columns: tuple[Column, ...] = (
        _text("category", "Category"),
        _text("counting", "Counting"),
        _count("total", "Uses"),
    )
    columns += (_count("classes", "Classes used"), _count("min", "Least"), _count("max", "Most"))
    columns += (_count("even_min", "Most even: least"), _count("even_max", "most"), _text("holds", "Most even"))
    rows = [
        {
            "category": a.category,
            "counting": a.counting,
            "total": a.total,
            "classes": a.used,
            "min": min(a.counts),
            "max": max(a.counts),
            "even_min": min(a.even),
            "even_max": max(a.even),
            "holds": "yes" if a.holds else "no",
        }
        for a in found
    ]
    return Table("figure5_summary", "Figure 5: is the most even allocation reached?", columns, rows)


def figure6_table(records: Sequence[PromptRecord]) -> Table:
    """One row per (category, value): positive, negated and all statements, the value's share of
    its category's statements and the even share (1 / number of values)."""
    columns: tuple[Column, ...] = (
        _text("category", "Category"),
        _text("value", "Value or predicate"),
        _count("positive", "Positive"),
    )
    columns += (_count("negated", "Negated"), _count("statements", "Statements"))
    columns += (Column("share", "Share", "{:.4f}"), Column("even_share", "Even share", "{:.4f}"))
    rows = []
    present = {record.category for record in records}
    for category in (c for c in CATEGORIES if c in present):
        counts = value_counts(records, category)
        total = sum(c["positive"] + c["negated"] for c in counts.values())
        for value, c in counts.items():
            statements = c["positive"] + c["negated"]
            rows.append(
                {"category": category, "value": value, **c, "statements": statements}
                | {"share": statements / total if total else float("nan"), "even_share": 1 / len(counts)}
            )
    return Table("figure6", "Figure 6: value and predicate balance", columns, rows)


def elements_table(records: Sequence[PromptRecord]) -> Table:
    """Objects, statements and elements per prompt, per kind and setting (docs/corpus.md)."""
    columns: tuple[Column, ...] = (_text("kind", "Kind"), _text("setting", "Setting"), _count("prompts", "Prompts"))
    columns += (Column("objects", "Objects", "{:.2f}"), Column("statements", "Statements", "{:.2f}"))
    columns += (Column("elements", "Elements", "{:.2f}"),)
    return Table("elements", "Elements per prompt", columns, element_counts(records))


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def plot_figure5(found: Sequence[Allocation]) -> bytes:
    """Sorted object uses per category (columns), per draw (top) and per prompt (bottom)."""
    categories = list(dict.fromkeys(a.category for a in found))
    figure = Figure(figsize=(3.2 * len(categories), 6.4), layout="constrained")
    grid = figure.subplots(len(COUNTINGS), len(categories), squeeze=False)
    for a in found:
        axes = grid[COUNTINGS.index(a.counting)][categories.index(a.category)]
        x = range(len(a.counts))
        axes.bar(x, a.counts, width=1.0, color=POSITIVE, edgecolor="white", linewidth=0.3)
        axes.step(x, a.even, where="mid", color="black", linestyle="--", linewidth=1.2)
        verdict = "most even" if a.holds else f"most even: {min(a.even)}–{max(a.even)}"
        axes.set_title(f"{a.category}: {min(a.counts)}–{max(a.counts)} ({verdict})", fontsize=9)
        axes.set_xticks([])
        axes.set_xlim(-0.5, len(a.counts) - 0.5)
        if categories.index(a.category) == 0:
            axes.set_ylabel(f"uses per {a.counting}")
    for axes in grid[-1]:
        axes.set_xlabel(f"{len(found[0].counts)} objects, most to least used")
    figure.suptitle("Object distribution per category (dashed: the most even allocation of the same total)")
    return _png(figure)


def plot_figure6(table: Table) -> bytes:
    """Statements per value or predicate within each category, positive and negated stacked."""
    categories = list(dict.fromkeys(row["category"] for row in table.rows))
    columns = 3
    rows = -(-len(categories) // columns)
    figure = Figure(figsize=(12, 3.4 * rows), layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False)
    for number, category in enumerate(categories):
        axes = grid[number // columns][number % columns]
        mine = [row for row in table.rows if row["category"] == category]
        x = range(len(mine))
        positive = [row["positive"] for row in mine]
        axes.bar(x, positive, color=POSITIVE, label="positive")
        axes.bar(x, [row["negated"] for row in mine], bottom=positive, color=NEGATED, label="negated")
        even = sum(row["statements"] for row in mine) / len(mine)
        axes.axhline(even, color="black", linestyle="--", linewidth=1.2, label="even")
        axes.set_xticks(list(x), [row["value"] for row in mine], rotation=45, ha="right", fontsize=8)
        axes.set_title(category, fontsize=10)
        axes.set_ylabel("statements")
    for number in range(len(categories), rows * columns):
        grid[number // columns][number % columns].set_visible(False)
    handles, labels = grid[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=3, fontsize="small")
    figure.suptitle("Predicate and attribute-value balance within each category")
    return _png(figure)


def write_figures(records: Sequence[PromptRecord], out_dir: str | Path) -> tuple[list[Path], list[Allocation]]:
    """Write Figures 5 and 6 (PNG), their numbers and the elements per prompt (CSV) into OUT_DIR,
    each file atomically. Returns the paths and the allocations (for the verdicts)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    found = allocations(records)
    values = figure6_table(records)
    contents: dict[str, str | bytes] = {
        "figure5.png": plot_figure5(found),
        "figure5.csv": to_csv(figure5_table(found)),
        "figure5_summary.csv": to_csv(figure5_summary(found)),
        "figure6.png": plot_figure6(values),
        "figure6.csv": to_csv(values),
        "elements.csv": to_csv(elements_table(records)),
    }
    return [write_atomic(out / name, contents[name]) for name in FILES], found
