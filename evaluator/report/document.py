"""The report as files: `report.md` assembled from the tables, one CSV per table, `report.json`
and the PNG plots. The thin shell of the report: every number comes from the tables built once
by `report_tables`; this module only lays them out and writes them."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future
from pathlib import Path
from typing import Any

from negt2ibench.core.table import Table, to_csv, to_markdown

from .aggregate import Report
from .keys import ALL
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
    "ots",
)
FAILURE_CAUSES_TITLE = "Failure causes (Figure 3)"
FAILURE_CAUSES_CAPTION = "Each failed statement counted once under its cause; satisfied statements are not counted."


def table3_markdown(report: Report) -> str:
    """Table 3 in the paper's layout (what `negt2ibench report` prints).

    Args:
        report: a built report.

    Returns:
        The Markdown table: models as rows, one decimal, incomplete models marked †.
    """
    return to_markdown(table3_table(report.table3, report.provenance))


def _section(table: Table, level: int = 2) -> list[str]:
    return [to_markdown(table, heading=level), ""]


def report_markdown(report: Report, tables: dict[str, Table] | None = None) -> str:
    """The whole report as Markdown.

    Args:
        report: a built report.
        tables: its tables (`report_tables(report)`), built from `report` when not given.

    Returns:
        `report.md`'s text: every section, its title and its table.
    """
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
    parts += _section(tables["ots"])
    parts += _section(tables["provenance"])
    if "inputs" in tables:
        parts += _section(tables["inputs"])
    return "\n".join(parts)


PLOT_FILES: tuple[str, ...] = ("accuracy_by_setting.png", "statement_accuracy.png", "failure_causes.png", "ots.png")
# Every file `write_report` writes; anything else in the folder is the user's and is kept.
REPORT_FILES: tuple[str, ...] = ("report.md", *(f"{name}.csv" for name in CSV_TABLES), "report.json", *PLOT_FILES)


def plot_worker() -> Executor:
    """A process of its own that draws the statement plot while `write_report` draws the others.

    Passed as `write_report(..., plotter=)`; close it with `with` or `shutdown`. Spawned, so it
    shares no state with the caller, and told at once to import matplotlib, which it does while the
    caller is still reading result files. For reports of many models: one panel per model makes the
    statement plot most of the plotting time (11 models: 1.5 s of 2.1).

    Returns:
        A one-process executor, already importing matplotlib.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    worker = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    worker.submit(_import_plots)
    return worker


def _import_plots() -> None:
    from . import plots  # noqa: F401


def _submit(plotter: Executor, draw: Callable[..., Path], *args: Any) -> Future[Path] | None:
    try:
        return plotter.submit(draw, *args)
    except BrokenExecutor:  # the worker died before (killed, out of memory, failed to start): drawn here
        return None


def write_report(
    report: Report, out_dir: str | Path, tables: dict[str, Table] | None = None, plotter: Executor | None = None
) -> list[Path]:
    """Write `report.md`, one CSV per table, `report.json` and the PNG plots into `out_dir`, as a whole.

    They are written to a staging folder that then replaces `out_dir`
    (`negt2ibench.core.atomic.atomic_folder`, created if needed), so a killed report leaves the
    previous report whole, never new tables beside old plots or a truncated PNG. Files of `out_dir`
    that a report does not write are kept.

    Args:
        report: a built report.
        out_dir: the report's folder.
        tables: its tables, built from `report` when not given.
        plotter: a `plot_worker` to draw the statement plot in, beside the rest (the files are the
            same; a worker that died is replaced by drawing here).

    Returns:
        The paths written, in `REPORT_FILES`' order.

    Raises:
        OSError: the folder cannot be written (the previous report is left whole); a plotting error
            goes through too.
    """
    from negt2ibench.core.atomic import atomic_folder, recover_folder

    from . import plots  # matplotlib only when files are written
    from .ots_plot import plot_ots

    tables = tables or report_tables(report)
    out = Path(out_dir)
    recover_folder(out)
    others = sorted(entry.name for entry in out.iterdir() if entry.name not in REPORT_FILES) if out.is_dir() else []
    with atomic_folder(out, keep=others) as staging:
        statement_plot = (tables["statement_accuracy"], staging / PLOT_FILES[1])
        drawing = _submit(plotter, plots.plot_statement_accuracy, *statement_plot) if plotter else None
        (staging / "report.md").write_text(report_markdown(report, tables) + "\n", encoding="utf-8")
        for name in CSV_TABLES:
            (staging / f"{name}.csv").write_text(to_csv(tables[name]), encoding="utf-8", newline="")
        text = json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"
        (staging / "report.json").write_text(text, encoding="utf-8")
        plots.plot_accuracy_by_setting(tables["table3"], staging / PLOT_FILES[0])
        plots.plot_failure_causes(
            tables["failure_causes_by_setting"], tables["failure_causes_by_category"], staging / PLOT_FILES[2]
        )
        plot_ots(tables["ots"], staging / PLOT_FILES[3])
        if drawing is not None:
            try:
                drawing.result()  # a plotting error is raised here, as if it were drawn here
            except BrokenExecutor:  # the worker died (killed, out of memory): drawn here after all
                drawing = None
        if drawing is None:
            plots.plot_statement_accuracy(*statement_plot)
    return [out / name for name in REPORT_FILES]
