"""How the agreement tables write their cells, and what they share: the paper's percentages, the
annotators' row, the order of judges."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import SupportsFloat

from negt2ibench.core.table import Column

from .evaluators import EvaluatorGroup

HUMAN = "H. inter-annotator"
NAN = math.nan


def percent(value: object) -> str:
    """A fraction as the paper's percentage, one decimal; counts, texts and missing values as they are."""
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"{100 * number(value):.1f}"


def number(value: object) -> float:
    """A statistic as a float (a Python or numpy number); anything else is a TypeError."""
    if isinstance(value, SupportsFloat):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def figure(value: object) -> float:
    """A statistic of the report as a cell: a float, NaN where it is missing (None)."""
    return NAN if value is None else number(value)


def share(key: str, label: str, better: bool | None = True, **extra) -> Column:
    """A column of fractions shown as the paper's percentages."""
    return Column(key, label, percent, higher_is_better=better, **extra)


def with_interval(key: str, label: str, better: bool | None = True) -> tuple[Column, Column]:
    """A percentage column shown with its bootstrap interval, and the interval's own (files only)."""
    return (
        share(key, label, better, interval=f"{key}_ci"),
        Column(f"{key}_ci", f"{label} interval", percent, in_markdown=False, pair=True),
    )


def text(key: str, label: str, *, shown: bool = True) -> Column:
    return Column(key, label, str, in_markdown=shown)


def best_value(group: EvaluatorGroup, evaluators: Mapping[str, Mapping], metric: str) -> float:
    """The best (highest) `metric` over a group's runs; NaN when none has it."""
    values = [evaluators[name].get(metric) for name in group.runs.values()]
    finite = [float(v) for v in values if v is not None and not math.isnan(v)]
    return max(finite) if finite else NAN


def order_by_best(
    groups: Sequence[EvaluatorGroup], evaluators: Mapping[str, Mapping], metric: str
) -> list[EvaluatorGroup]:
    """Groups by their best `metric`, highest first (the paper orders judges by their best ρ);
    groups without it last, in their given order."""

    def rank(item: tuple[int, EvaluatorGroup]) -> tuple[int, float, int]:
        number, group = item
        value = best_value(group, evaluators, metric)
        return (1, 0.0, number) if math.isnan(value) else (0, -value, number)

    return [group for _, group in sorted(enumerate(groups), key=rank)]


def median_width(intervals: Sequence[object]) -> float:
    """The median width of the given (low, high) intervals, NaN-free; NaN when there is none."""
    widths = sorted(
        high - low
        for interval in intervals
        if isinstance(interval, (list, tuple)) and len(interval) == 2
        for low, high in [interval]
        if low is not None and high is not None and not (math.isnan(low) or math.isnan(high))
    )
    if not widths:
        return NAN
    middle = len(widths) // 2
    return widths[middle] if len(widths) % 2 else (widths[middle - 1] + widths[middle]) / 2
