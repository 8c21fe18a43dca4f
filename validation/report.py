"""The agreement report as files: ``agreement.json`` (fractions), ``agreement.md`` (the paper's
percentages, one decimal) and CSV tables (fractions; an interval as ``*_ci_low`` / ``*_ci_high``).

Tables are built once as `Table` objects and rendered to Markdown and CSV by the same two
functions, so the printed table, the Markdown and the CSV cannot drift apart.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_builder.vocabulary import CATEGORIES

from .agreement import BLOCKS, IMAGE_METRICS, RANK_METRICS, SETTING_LABELS
from .probes import probe_markdown

HUMAN = "H. inter-annotator"
BLOCK_TITLES = {"all": "All elements", "positive": "Affirmative (objects + positive statements)", "negated": "Negated"}
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


@dataclass(frozen=True)
class Table:
    """Rows of fraction values keyed by column; `columns` maps a key to its Markdown header."""

    name: str
    title: str
    columns: dict[str, str]
    rows: list[dict] = field(default_factory=list)
    notes: str = ""


def _percent(value: object, interval: Sequence[float] | None = None) -> str:
    if isinstance(value, str):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = f"{100 * float(value):.1f}"
    if interval is not None and not any(v is None or math.isnan(v) for v in interval):
        text += f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"
    return text


def to_markdown(table: Table) -> str:
    keys = list(table.columns)
    lines = [f"## {table.title}", ""]
    if table.notes:
        lines += [table.notes, ""]
    lines.append("| " + " | ".join(table.columns[k] for k in keys) + " |")
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(keys))) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(_percent(row.get(k), row.get(f"{k}_ci")) for k in keys) + " |")
    return "\n".join(lines) + "\n"


def _csv_value(value: object) -> object:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def to_csv(table: Table) -> str:
    """Every scalar of every row (not only the Markdown columns), intervals split into two columns."""
    header: list[str] = []
    flat_rows = []
    for row in table.rows:
        flat = {}
        for key, value in row.items():
            if isinstance(value, (list, tuple)) and key.endswith("_ci"):
                flat[f"{key}_low"], flat[f"{key}_high"] = value
            elif not isinstance(value, dict):
                flat[key] = value
        header += [k for k in flat if k not in header]
        flat_rows.append(flat)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for flat in flat_rows:
        writer.writerow({k: _csv_value(flat.get(k)) for k in header})
    return buffer.getvalue()


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
            "kappa": human["pairwise_kappa"],
            "called_correct": human["majority_pass"],
            "kendall_tau": human["loo_tau"],
        }
    )
    notes = (
        "Against the majority label of three annotators (positive = accepted). τ, ρ and pair accuracy: against "
        f"the continuous human score. {HUMAN}: mean pairwise κ between annotators, the share the majority "
        "passes (Called correct), and each annotator's τ against the mean of the others."
    )
    return Table("agreement", "Image-level agreement (paper Tables 2, 7, 9, 17)", columns, rows, notes)


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
    human_metric = {"kendall_tau": "loo_tau", "kappa": "pairwise_kappa"}.get(metric)
    if human_metric:
        human = report["human"]
        rows.append(
            {"evaluator": HUMAN, "all": human[human_metric]}
            | {g: c[human_metric] for g, c in human[field_name].items()}
        )
    return Table(f"{field_name}_{metric}", title, columns, rows)


def element_tables(report: dict) -> list[Table]:
    columns = {"evaluator": "Evaluator", "n": "n", "accuracy": "Acc.", "kappa": "κ"}
    columns |= {"satisfied": "Satisfied", "unsatisfied": "Unsatisfied", "balanced": "Balanced"}
    tables = []
    for block in ("positive", "negated", "all"):
        rows = [
            {"evaluator": name} | ev["elements"][block] for name, ev in report["evaluators"].items() if ev["elements"]
        ]
        human = report["human"]["elements"][block]
        rows.append({"evaluator": HUMAN, "n": human["n"], "kappa": human["pairwise_kappa"]})
        title = f"Elements: {BLOCK_TITLES[block]} (paper Table 13)"
        tables.append(Table(f"elements_{block}", title, columns, rows))
    return tables


def human_table(report: dict) -> Table:
    columns = {"elements": "Elements", "n": "n", "fleiss_kappa": "Fleiss' κ", "unanimous": "Unanimous"}
    columns["pairwise_kappa"] = "Pairwise κ"
    rows = [{"elements": BLOCK_TITLES[b]} | report["human"]["elements"][b] for b in BLOCKS]
    human = report["human"]
    notes = (
        f"{human['n']} images, {human['annotators']} annotators; "
        f"the majority passes {_percent(human['majority_pass'])}%. "
        "Each object and statement is one element; objects are asked affirmatively, so they count as affirmative."
    )
    return Table("human", "Agreement between annotators (paper Table 5)", columns, rows, notes)


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
    return Table("coverage", "Coverage", columns, rows, notes)


def _long(report: dict, field_name: str, group_name: str) -> Table:
    rows = [
        {"evaluator": name, group_name: group} | cell
        for name, block in report["evaluators"].items()
        for group, cell in block[field_name].items()
    ]
    return Table(field_name, field_name, {}, rows)


def _elements_long(report: dict) -> Table:
    rows = [
        {"evaluator": name, "block": b} | cell
        for name, block in report["evaluators"].items()
        for b, cell in block["elements"].items()
    ]
    return Table("elements", "elements", {}, rows)


def _human_long(report: dict) -> Table:
    human = report["human"]
    scalar = {k: v for k, v in human.items() if not isinstance(v, dict)}
    rows = [{"scope": "images"} | scalar]
    rows += [{"scope": f"elements:{b}"} | human["elements"][b] for b in BLOCKS]
    rows += [{"scope": f"setting:{g}"} | c for g, c in human["by_setting"].items()]
    rows += [{"scope": f"category:{g}"} | c for g, c in human["by_category"].items()]
    return Table("human", "human", {}, rows)


def markdown_report(report: dict) -> str:
    options = report["options"]
    intervals = (
        f"Intervals: {100 * options['confidence']:.0f}% percentile bootstrap over images "
        f"({options['resamples']:,} resamples, seed {options['seed']})."
        if options["resamples"]
        else "No intervals (--bootstrap 0)."
    )
    parts = [
        "# Agreement with human annotations\n",
        f"{report['n_images']} images with three annotators. Figures in %. {intervals}\n",
        to_markdown(main_table(report)),
        to_markdown(human_table(report)),
        to_markdown(_by_table(report, "by_setting", "kendall_tau", SETTING_LABELS, "Kendall τ by setting (Table 11)")),
        to_markdown(_by_table(report, "by_category", "kendall_tau", CATEGORIES, "Kendall τ by category (Table 12)")),
        to_markdown(_by_table(report, "by_setting", "kappa", SETTING_LABELS, "Cohen's κ by setting")),
        to_markdown(_by_table(report, "by_category", "kappa", CATEGORIES, "Cohen's κ by category")),
    ]
    parts += [to_markdown(t) for t in element_tables(report)]
    parts.append(to_markdown(coverage_table(report)))
    for name, result in report.get("probes", {}).items():
        section = probe_markdown(name, result)
        if section:
            parts.append(section.rstrip() + "\n")
    return "\n".join(parts)


def json_ready(value: object) -> object:
    """`value` with NaN floats as None, nested dicts, lists and tuples included (strict JSON)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def _write(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


CSV_TABLES: dict[str, Callable[[dict], Table]] = {
    "agreement.csv": main_table,
    "by_setting.csv": lambda r: _long(r, "by_setting", "setting"),
    "by_category.csv": lambda r: _long(r, "by_category", "category"),
    "elements.csv": _elements_long,
    "human.csv": _human_long,
    "coverage.csv": coverage_table,
}


def write_report(report: dict, out_dir: str | Path) -> list[Path]:
    """Write agreement.json, agreement.md and the CSVs into `out_dir`; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (
        ("agreement.json", json.dumps(json_ready(report), indent=1, allow_nan=False) + "\n"),
        ("agreement.md", markdown_report(report)),
        *((name, to_csv(build(report))) for name, build in CSV_TABLES.items()),
    ):
        _write(out / name, text)
        written.append(out / name)
    return written
