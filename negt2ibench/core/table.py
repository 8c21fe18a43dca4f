"""The one table type and its renderers: a table is built once, then drawn as Markdown, CSV, JSON or
a pandas frame (the Space), and plotted, without going back to the numbers it came from. The
report's tables (`evaluator.report.tables`), the agreement study's (`validation.report`), the
ablation, the negation probe and `judge --list` are all `Table`s.

A `Table` has a name (its file stem), a title, typed `Column`s, rows (one dict per row, keyed by
the column keys), a caption (the sentence above it) and notes (below it). Cells hold raw values:
floats keep their full precision in CSV and JSON, NaN stays NaN; only the text renderers format.

Text cells: a float is written with its column's `fmt` (one decimal by default) and NaN as `–`;
any other value with `str()`; a callable `fmt` gets the value as it is. A column with an
`interval` shows the (low, high) pair held in that other cell after a float value
("81.2 [77.0, 85.1]"); the pair's own column (`pair=True`) is written to CSV as two columns,
``{key}_low`` and ``{key}_high``.

The paper's layout, in Markdown only (CSV stays one header line of keys; JSON says how to lay it out):
`header_rows` span groups of columns above their labels ("Load 1" over 1:0 and 0:1); `group` names
a column whose value heads each run of rows ("U-Net diffusion", then its models); `bold_best`
bolds the best value of every column that has a direction (`higher_is_better`), among the rows
that are not `references` (the annotators' own agreement is shown, never ranked), within each
group when `best_by_group`. A cell is best when its text equals the best one's (ties are all
bold); a column whose ranked cells all read alike, or hold fewer than two numbers, bolds nothing.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

MISSING_TEXT = "–"


@dataclass(frozen=True)
class Column:
    """One column: `key` names it in rows, CSV headers, JSON and frames; `label` heads it in Markdown.

    `fmt` is a format string for float cells (``"{:.1f}"``) or a callable for any cell (a text
    column: ``str``). `higher_is_better` says which way is better (None: neither, e.g. a count).
    `in_markdown=False` keeps a column to the files (CSV, JSON); `in_files=False` to the screen.
    `interval` names the cell of the row that holds this column's (low, high) interval; `pair=True`
    marks such a cell's column (two CSV columns, ``{key}_low`` and ``{key}_high``)."""

    key: str
    label: str
    fmt: str | Callable[[Any], str] = "{:.1f}"
    higher_is_better: bool | None = None
    in_markdown: bool = True
    in_files: bool = True
    interval: str | None = None
    pair: bool = False

    @property
    def numeric(self) -> bool:
        """Whether the column holds numbers (a format string rather than a text callable)."""
        return isinstance(self.fmt, str)

    def text(self, value: Any, interval: tuple[Any, Any] | None = None) -> str:
        """The cell as Markdown shows it; a finite float with a whole INTERVAL gets it in brackets."""
        if callable(self.fmt):
            shown = self.fmt(value)
        elif isinstance(value, float):
            shown = MISSING_TEXT if math.isnan(value) else self.fmt.format(value)
        else:
            shown = str(value)
        if interval is None or not isinstance(value, float) or math.isnan(value):
            return shown
        if any(bound is None or math.isnan(bound) for bound in interval):
            return shown
        low, high = (self.text(float(bound)) for bound in interval)
        return f"{shown} [{low}, {high}]"

    def cell(self, row: Mapping[str, Any], *, bold: bool = False) -> str:
        """This column's cell of ROW as Markdown shows it (with its interval, when it has one);
        `bold` puts the value (not its interval) in bold."""
        text = self.text(row[self.key], row[self.interval] if self.interval else None)
        if not bold:
            return text
        value = self.text(row[self.key])
        return f"**{value}**{text[len(value) :]}"


HeaderRow = tuple[tuple[str, int], ...]  # (label, number of Markdown columns it spans), left to right


def _rankable(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


@dataclass(frozen=True)
class Table:
    """A table of the report: built once from aggregated numbers, drawn by the renderers below.

    `marks` (one per row, or none) are appended to a row's first cell on screen (e.g. `†` for a
    model with missing images, explained in `notes`). `header_rows`, `group`, `bold_best`,
    `best_by_group` and `references` (one flag per row, or none) lay it out as the paper prints
    it (see the module's docstring)."""

    # Given as any sequences (lists, generators' tuples); __post_init__ stores each as a tuple.
    name: str
    title: str
    columns: Sequence[Column]
    rows: Sequence[dict[str, Any]]
    notes: Sequence[str] = ()
    caption: str = ""
    marks: Sequence[str] = field(default=())
    header_rows: Sequence[HeaderRow] = ()
    group: str | None = None
    bold_best: bool = False
    best_by_group: bool = False
    references: Sequence[bool] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(self.rows))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "marks", tuple(self.marks))
        object.__setattr__(self, "references", tuple(self.references))
        object.__setattr__(self, "header_rows", tuple(tuple(tuple(span) for span in row) for row in self.header_rows))
        keys = [column.key for column in self.columns]
        if len(set(keys)) != len(keys):
            raise ValueError(f"table {self.name!r}: column keys must be unique, got {keys}")
        for number, row in enumerate(self.rows):
            if set(row) != set(keys):
                raise ValueError(
                    f"table {self.name!r}: row {number} has keys {sorted(row)}, but the columns are {sorted(keys)}"
                )
        if self.marks and len(self.marks) != len(self.rows):
            raise ValueError(f"table {self.name!r}: {len(self.marks)} marks for {len(self.rows)} rows")
        if self.references and len(self.references) != len(self.rows):
            raise ValueError(f"table {self.name!r}: {len(self.references)} reference flags for {len(self.rows)} rows")
        if self.group is not None and self.group not in keys:
            raise ValueError(f"table {self.name!r}: group column {self.group!r} is not a column")
        shown = sum(1 for column in self.columns if column.in_markdown)
        for number, header in enumerate(self.header_rows):
            spans = [span for _, span in header]
            if any(span < 1 for span in spans) or sum(spans) != shown:
                raise ValueError(
                    f"table {self.name!r}: header row {number} spans {spans} (sum {sum(spans)}), "
                    f"but {shown} columns are shown"
                )

    def column(self, key: str) -> Column:
        for column in self.columns:
            if column.key == key:
                return column
        raise KeyError(f"table {self.name!r} has no column {key!r}; columns: {', '.join(c.key for c in self.columns)}")

    def where(self, **equal: Any) -> Table:
        """The rows whose cells equal the given values (e.g. ``where(pair="all")``), marks kept."""
        for key in equal:
            self.column(key)
        chosen = [i for i, row in enumerate(self.rows) if all(row[k] == v for k, v in equal.items())]
        return replace(
            self,
            rows=tuple(self.rows[i] for i in chosen),
            marks=tuple(self.marks[i] for i in chosen) if self.marks else (),
            references=tuple(self.references[i] for i in chosen) if self.references else (),
        )

    def pivot(self, *, index: str, columns: str, values: Mapping[str, str]) -> Table:
        """Wide form: one row per `index` value (in first-seen order) and one column per value of
        `columns` × key of `values`, labelled "<columns cell> <values label>" (e.g. "Color pos").
        A combination with no row is NaN."""
        spread = self.column(columns)
        buckets = list(dict.fromkeys(row[columns] for row in self.rows))
        wide_columns = [self.column(index)] + [
            replace(self.column(key), key=f"{bucket}_{key}", label=f"{spread.text(bucket)} {label}")
            for bucket in buckets
            for key, label in values.items()
        ]
        wide: dict[Any, dict[str, Any]] = {}
        for row in self.rows:
            target = wide.setdefault(row[index], {index: row[index]})
            target.update({f"{row[columns]}_{key}": row[key] for key in values})
        filled = [{column.key: row.get(column.key, math.nan) for column in wide_columns} for row in wide.values()]
        return replace(
            self, columns=tuple(wide_columns), rows=tuple(filled), marks=(), header_rows=(), group=None, references=()
        )

    def best_cells(self) -> set[tuple[int, str]]:
        """(row number, column key) of every cell `bold_best` bolds (empty when it is off)."""
        if not self.bold_best:
            return set()
        groups: dict[Any, list[int]] = {}
        for number, row in enumerate(self.rows):
            if not (self.references and self.references[number]):
                key = row[self.group] if self.best_by_group and self.group else None
                groups.setdefault(key, []).append(number)
        best: set[tuple[int, str]] = set()
        for column in self.columns:
            if column.higher_is_better is None or not column.in_markdown:
                continue
            for members in groups.values():
                ranked = [n for n in members if _rankable(self.rows[n][column.key])]
                texts = {n: column.text(self.rows[n][column.key]) for n in ranked}
                if len(ranked) < 2 or len(set(texts.values())) < 2:
                    continue
                pick = max if column.higher_is_better else min
                winner = texts[pick(ranked, key=lambda n: self.rows[n][column.key])]
                best |= {(n, column.key) for n in ranked if texts[n] == winner}
        return best


# -- renderers ---------------------------------------------------------------------------------------


def markdown_grid(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A Markdown table of texts: the first column left-aligned, the others right-aligned."""
    headers = list(headers)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _spread(header: HeaderRow) -> list[str]:
    """A header row as one text per column: the label in the first column of its span."""
    return [text for label, span in header for text in [label] + [""] * (span - 1)]


def _strong(texts: Iterable[str]) -> list[str]:
    return [f"**{text}**" if text else "" for text in texts]


def to_markdown(table: Table, *, caption: bool = True, notes: bool = True, heading: int = 0) -> str:
    """The title as a heading of level HEADING (none for 0), the caption, the grid of the
    `in_markdown` columns, then the notes, one paragraph each.

    With `header_rows`, the first of them is the grid's header and the others, then the column
    labels, are its first rows, in bold (a Markdown table has one header line). With `group`, a
    row in italics heads each run of rows that share a non-empty group value."""
    shown = [column for column in table.columns if column.in_markdown]
    best = table.best_cells()
    texts = []
    previous: Any = object()
    for number, row in enumerate(table.rows):
        if table.group is not None and row[table.group] != previous:
            previous = row[table.group]
            label = table.column(table.group).text(previous)
            if label:
                texts.append([f"*{label}*"] + [""] * (len(shown) - 1))
        cells = [column.cell(row, bold=(number, column.key) in best) for column in shown]
        mark = table.marks[number] if table.marks else ""
        if mark and cells:
            cells[0] = f"{cells[0]} {mark}"
        texts.append(cells)
    labels = [column.label for column in shown]
    if table.header_rows:
        headers = _spread(table.header_rows[0])
        texts = [_strong(_spread(row)) for row in table.header_rows[1:]] + [_strong(labels)] + texts
    else:
        headers = labels
    blocks = [f"{'#' * heading} {table.title}"] if heading else []
    blocks += [table.caption] if caption and table.caption else []
    blocks.append(markdown_grid(headers, texts))
    blocks += list(table.notes) if notes else []
    return "\n\n".join(blocks)


def _file_value(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _file_names(column: Column) -> list[str]:
    return [f"{column.key}_low", f"{column.key}_high"] if column.pair else [column.key]


def _file_cells(column: Column, value: Any) -> list[Any]:
    """A cell as the files hold it: NaN as None; a pair as its two bounds (None, None when absent)."""
    if not column.pair:
        return [_file_value(value)]
    low, high = value if value is not None else (None, None)
    return [_file_value(low), _file_value(high)]


def to_csv(table: Table) -> str:
    """CSV of the `in_files` columns, headed by their keys; full precision, NaN as an empty cell.
    Lines end with CRLF (the csv module's default); write it with ``newline=""``."""
    shown = [column for column in table.columns if column.in_files]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([name for column in shown for name in _file_names(column)])
    for row in table.rows:
        cells = [value for column in shown for value in _file_cells(column, row[column.key])]
        writer.writerow(["" if value is None else value for value in cells])
    return buffer.getvalue()


def _file_row(shown: Iterable[Column], row: Mapping[str, Any]) -> dict[str, Any]:
    cells: dict[str, Any] = {}
    for column in shown:
        cells.update(zip(_file_names(column), _file_cells(column, row[column.key]), strict=True))
    return cells


def to_json(table: Table) -> dict[str, Any]:
    """JSON-ready data: name, title, columns (key, label, higher_is_better), rows of the `in_files`
    columns (NaN → None, a pair as ``{key}_low`` and ``{key}_high``), caption, notes, and the
    layout (header rows of Markdown-column spans, the group column, the reference rows' numbers
    and the [row, column key] of each bold cell)."""
    shown = [column for column in table.columns if column.in_files]
    return {
        "name": table.name,
        "title": table.title,
        "caption": table.caption,
        "columns": [{"key": c.key, "label": c.label, "higher_is_better": c.higher_is_better} for c in shown],
        "rows": [_file_row(shown, row) for row in table.rows],
        "notes": list(table.notes),
        "layout": {
            "header_rows": [[{"label": label, "span": span} for label, span in row] for row in table.header_rows],
            "group": table.group,
            "references": [number for number, flag in enumerate(table.references) if flag],
            "bold": sorted([number, key] for number, key in table.best_cells()),
        },
    }


def to_frame(table: Table, *, digits: int | None = None):
    """A pandas DataFrame of every column, headed by keys; numeric columns as numbers (a missing
    value is NaN), rounded to `digits` when given."""
    import pandas as pd

    keys = [column.key for column in table.columns]
    frame = pd.DataFrame([[row[key] for key in keys] for row in table.rows], columns=keys)
    for column in table.columns:
        if column.numeric:
            frame[column.key] = pd.to_numeric(frame[column.key], errors="coerce")
            if digits is not None:
                frame[column.key] = frame[column.key].round(digits)
    return frame
