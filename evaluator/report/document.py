"""The report as files: `report.md` assembled from the tables, one CSV per table, `report.json`
and the PNG plots. The thin shell of the report: every number comes from the tables built once
by `report_tables`; this module only lays them out and writes them."""

from __future__ import annotations

import json
from pathlib import Path

from .aggregate import Report
from .keys import ALL
from .table import Table, to_csv, to_markdown
from .tables import report_tables, table3_table

# The tables written as CSV files, in the order they are written (provenance is in report.json).
CSV_TABLES: tuple[str, ...] = (
    "table3",
    "statement_accuracy",
    "failure_causes_by_setting",
    "failure_causes_by_category",
    "forbidden_share",
    "dead_zone",
    "matched_deltas",
)
FAILURE_CAUSES_TITLE = "Failure causes (Figure 3)"
FAILURE_CAUSES_CAPTION = "Each failed statement counted once under its cause; satisfied statements are not counted."


def table3_markdown(report: Report) -> str:
    """Table 3 in the paper's layout (what `negt2ibench report` prints): models as rows, one
    decimal, incomplete models marked †."""
    return to_markdown(table3_table(report.table3, report.provenance))


def _section(table: Table, level: int = 2) -> list[str]:
    return [f"{'#' * level} {table.title}", "", to_markdown(table), ""]


def report_markdown(report: Report, tables: dict[str, Table] | None = None) -> str:
    """The whole report as Markdown, from `tables` (built from `report` when not given)."""
    tables = tables or report_tables(report)
    parts = ["# NegT2IBench report", ""]
    parts += _section(tables["table3"])
    parts += _section(
        tables["statement_accuracy"].pivot(
            index="model", columns="category", values={"positive": "pos", "negated": "neg"}
        )
    )
    parts += [f"## {FAILURE_CAUSES_TITLE}", "", FAILURE_CAUSES_CAPTION, ""]
    for name in ("failure_causes_by_setting", "failure_causes_by_category", "forbidden_share"):
        parts += _section(tables[name], level=3)
    parts += _section(tables["dead_zone"])
    parts += _section(tables["matched_deltas"].where(pair=ALL))  # the pooled pair; the CSV has each pair
    parts += _section(tables["provenance"])
    return "\n".join(parts)


def write_report(report: Report, out_dir: str | Path, tables: dict[str, Table] | None = None) -> list[Path]:
    """Write `report.md`, one CSV per table, `report.json` and the PNG plots into `out_dir`
    (created if needed). Returns the paths written."""
    from . import plots  # matplotlib only when files are written

    tables = tables or report_tables(report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    markdown = out / "report.md"
    markdown.write_text(report_markdown(report, tables) + "\n", encoding="utf-8")
    written.append(markdown)

    for name in CSV_TABLES:
        path = out / f"{name}.csv"
        path.write_text(to_csv(tables[name]), encoding="utf-8", newline="")
        written.append(path)

    data = out / "report.json"
    data.write_text(json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    written.append(data)

    written.append(plots.plot_accuracy_by_setting(tables["table3"], out / "accuracy_by_setting.png"))
    written.append(plots.plot_statement_accuracy(tables["statement_accuracy"], out / "statement_accuracy.png"))
    written.append(
        plots.plot_failure_causes(
            tables["failure_causes_by_setting"], tables["failure_causes_by_category"], out / "failure_causes.png"
        )
    )
    return written
