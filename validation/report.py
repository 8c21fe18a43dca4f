"""The agreement report as files: ``agreement.json`` (fractions), ``agreement.md`` (the paper's
percentages, one decimal), CSV tables (fractions; an interval as ``*_ci_low`` / ``*_ci_high``) and
the paper's tables, one Markdown, CSV and JSON file each (``table2.md`` … ``table13.json``).

Every table is a `negt2ibench.core.table.Table` built once and drawn by the one set of
renderers, so the printed table, the Markdown and the CSV cannot drift apart: `study_table`
builds the long tables of every figure (the labelled columns in Markdown as percentages, with
their intervals; every scalar of a row in the CSV), `validation.paper_tables` and
`validation.paper_breakdowns` the paper's (`PAPER_TABLES`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dataset_builder.vocabulary import CATEGORIES
from negt2ibench.core.atomic import write_atomic
from negt2ibench.core.strict_json import dumps
from negt2ibench.core.table import Column, Table, to_csv, to_json, to_markdown

from . import paper_breakdowns, paper_tables
from .agreement import BLOCKS, IMAGE_METRICS, RANK_METRICS, SETTING_LABELS
from .cells import HUMAN, percent
from .costs import Cost
from .probes import probe_markdown

__all__ = ["HUMAN", "PAPER_TABLES", "percent", "study_table", "write_report"]

LABELS = {
    "n": "n",
    "accuracy": "Acc.",
    "kappa": "κ",
    "precision": "Prec.",
    "recall": "Rec.",
    "called_correct": "Called correct",
    "kendall_tau": "τ",
    "spearman_rho": "ρ",
    "pair_accuracy": "Pair acc.",
    "satisfied": "Satisfied",
    "unsatisfied": "Unsatisfied",
    "balanced": "Balanced",
}
# The paper's validation tables by number, in its order; Table 2 also takes the cost records.
PAPER_TABLES: dict[int, Callable[..., Table]] = {
    2: paper_tables.table2,
    5: paper_tables.table5,
    6: paper_tables.table6,
    7: paper_tables.table7,
    9: paper_tables.table9,
    10: paper_tables.table10,
    11: paper_breakdowns.table11,
    12: paper_breakdowns.table12,
    13: paper_breakdowns.table13,
}


def paper_tables_of(report: dict, costs: Mapping[str, Cost] | None = None) -> dict[int, Table]:
    """Every paper table of REPORT, by number (Table 2 with COSTS' columns)."""
    return {number: build(report, costs) if number == 2 else build(report) for number, build in PAPER_TABLES.items()}


def study_table(
    name: str, title: str, labels: Mapping[str, str], rows: Sequence[Mapping[str, Any]], caption: str = ""
) -> Table:
    """A `Table` of fraction rows: the LABELS columns (key → header) in Markdown as percentages, each
    with its interval when a row has ``key_ci`` (low, high); every other scalar of the rows in the
    files only (an interval as ``key_ci_low`` and ``key_ci_high``). A cell a row lacks is None."""
    seen = list(dict.fromkeys(key for row in rows for key, value in row.items() if not isinstance(value, dict)))
    columns: list[Column] = []
    for key, label in labels.items():
        interval = f"{key}_ci" if f"{key}_ci" in seen else None
        columns.append(Column(key, label, percent, interval=interval))
        if interval:
            columns.append(Column(interval, interval, percent, in_markdown=False, pair=True))
    taken = {column.key for column in columns}
    columns += [
        Column(key, key, percent, in_markdown=False, pair=key.endswith("_ci")) for key in seen if key not in taken
    ]
    cells = [{column.key: row.get(column.key) for column in columns} for row in rows]
    return Table(name, title, tuple(columns), tuple(cells), caption=caption)


def section_markdown(table: Table) -> str:
    """A table as a section of ``agreement.md``: its title as a heading, the caption, the grid."""
    return to_markdown(table, heading=2) + "\n"


# ------------------------------------------------------------------------------------------ tables


def main_table(report: dict) -> Table:
    human = report["human"]
    columns = {"evaluator": "Evaluator", "n": "n"} | {m: LABELS[m] for m in IMAGE_METRICS + RANK_METRICS}
    columns |= {"tp": "TP", "tn": "TN", "fp": "FP", "fn": "FN"}
    rows = [{"evaluator": name} | block for name, block in report["evaluators"].items()]
    rows.append(
        {
            "evaluator": HUMAN,
            "n": human["n"],
            "kappa": human["loo_kappa"],
            "called_correct": human["majority_pass"],
            "kendall_tau": human["loo_tau"],
        }
    )
    notes = (
        "Against the majority label of three annotators (positive = accepted). τ, ρ and pair accuracy: against "
        f"the continuous human score. {HUMAN}: each annotator against the mean answer of the others (leave-one-out "
        "κ), the share the majority "
        "passes (Called correct), and each annotator's τ against the mean of the others."
    )
    return study_table("agreement", "Image-level agreement (paper Tables 2, 7, 9, 17)", columns, rows, notes)


def _by_table(report: dict, field_name: str, metric: str, order: Sequence[str], title: str) -> Table:
    present = [g for g in order if any(g in b[field_name] for b in report["evaluators"].values())]
    present += sorted({g for b in report["evaluators"].values() for g in b[field_name]} - set(present))
    columns = {"evaluator": "Evaluator"} | {g: g.capitalize() if g[0].isalpha() else g for g in present}
    columns["all"] = "All"
    rows = []
    for name, block in report["evaluators"].items():
        row: dict = {"evaluator": name, "all": block[metric]}
        for group, cell in block[field_name].items():
            row[group] = cell[metric]
            if f"{metric}_ci" in cell:
                row[f"{group}_ci"] = cell[f"{metric}_ci"]
        rows.append(row)
    human_metric = {"kendall_tau": "loo_tau", "kappa": "loo_kappa"}.get(metric)
    if human_metric:
        human = report["human"]
        rows.append(
            {"evaluator": HUMAN, "all": human[human_metric]}
            | {g: c[human_metric] for g, c in human[field_name].items()}
        )
    return study_table(f"{field_name}_{metric}", title, columns, rows)


def coverage_table(report: dict) -> Table:
    columns = {"evaluator": "Evaluator", "source": "File", "records": "Records", "used": "Used"}
    columns |= {"error_rows": "Error rows", "not_annotated": "Not annotated", "under_annotated": "< 3 annotators"}
    columns["labelled_not_scored"] = "Labelled, not scored"
    rows = [{"evaluator": name, "source": b["source"]} | b["coverage"] for name, b in report["evaluators"].items()]
    notes = (
        "Only images with three annotators and a verdict are compared; everything else is counted here. Annotations: "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report["human"]["coverage"].items())
        + "."
    )
    return study_table("coverage", "Coverage", columns, rows, notes)


def _long(report: dict, field_name: str, group_name: str) -> Table:
    rows = [
        {"evaluator": name, group_name: group} | cell
        for name, block in report["evaluators"].items()
        for group, cell in block[field_name].items()
    ]
    return study_table(field_name, field_name, {}, rows)


def _elements_long(report: dict) -> Table:
    rows = [
        {"evaluator": name, "block": b} | cell
        for name, block in report["evaluators"].items()
        for b, cell in block["elements"].items()
    ]
    return study_table("elements", "elements", {}, rows)


def _human_long(report: dict) -> Table:
    human = report["human"]
    scalar = {k: v for k, v in human.items() if not isinstance(v, dict)}
    rows = [{"scope": "images"} | scalar]
    rows += [{"scope": f"elements:{b}"} | human["elements"][b] for b in BLOCKS]
    rows += [{"scope": f"setting:{g}"} | c for g, c in human["by_setting"].items()]
    rows += [{"scope": f"category:{g}"} | c for g, c in human["by_category"].items()]
    return study_table("human", "human", {}, rows)


def markdown_report(report: dict, paper: Mapping[int, Table] | None = None) -> str:
    """``agreement.md``: every metric of every evaluator (the main table), the paper's tables in its
    order, then what the paper does not print (κ by setting and category, coverage, probes)."""
    paper = paper if paper is not None else paper_tables_of(report)
    options = report["options"]
    intervals = (
        f"Intervals: {100 * options['confidence']:.0f}% percentile bootstrap over images "
        f"({options['resamples']:,} resamples, seed {options['seed']})."
        if options["resamples"]
        else "No intervals (--bootstrap 0)."
    )
    parts = [
        "# Agreement with human annotations\n",
        f"{report['n_images']} images with three annotators. Figures in %. {intervals} The paper's tables are "
        "also files of their own: table2.md, .csv, .json … table13.*.\n",
        section_markdown(main_table(report)),
        *(section_markdown(table) for table in paper.values()),
        section_markdown(_by_table(report, "by_setting", "kappa", SETTING_LABELS, "Cohen's κ by setting")),
        section_markdown(_by_table(report, "by_category", "kappa", CATEGORIES, "Cohen's κ by category")),
        section_markdown(coverage_table(report)),
    ]
    for name, result in report.get("probes", {}).items():
        section = probe_markdown(name, result)
        if section:
            parts.append(section.rstrip() + "\n")
    return "\n".join(parts)


CSV_TABLES: dict[str, Callable[[dict], Table]] = {
    "agreement.csv": main_table,
    "by_setting.csv": lambda r: _long(r, "by_setting", "setting"),
    "by_category.csv": lambda r: _long(r, "by_category", "category"),
    "elements.csv": _elements_long,
    "human.csv": _human_long,
    "coverage.csv": coverage_table,
}


def paper_files(paper: Mapping[int, Table]) -> list[tuple[str, str]]:
    """(file name, text) of each paper table: ``tableN.md``, ``tableN.csv``, ``tableN.json``."""
    files = []
    for number, table in paper.items():
        files.append((f"table{number}.md", to_markdown(table, heading=2) + "\n"))
        files.append((f"table{number}.csv", to_csv(table)))
        files.append((f"table{number}.json", dumps(to_json(table))))
    return files


def write_report(report: dict, out_dir: str | Path, costs: Mapping[str, Cost] | None = None) -> list[Path]:
    """Write agreement.json, agreement.md, the CSVs and the paper's tables (Table 2's cost columns
    from COSTS) into `out_dir`; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paper = paper_tables_of(report, costs)
    written = []
    for name, text in (
        ("agreement.json", dumps(report)),
        ("agreement.md", markdown_report(report, paper)),
        *((name, to_csv(build(report))) for name, build in CSV_TABLES.items()),
        *paper_files(paper),
    ):
        written.append(write_atomic(out / name, text))
    return written
