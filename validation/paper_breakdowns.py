"""The paper's breakdowns, Tables 11, 12 and 13, as `Table`s in its layout, from `agree`'s report.

Tables 11 and 12: Kendall τ against the continuous human score by polarity setting and by
category, one group of rows per evaluator (a judge: one row per mode), ordered by their best ρ
as Table 7, and the annotators' leave-one-out τ recomputed within each cell. Table 13: element
agreement by polarity, one block of rows each, bold best within a block.
"""

from __future__ import annotations

from collections.abc import Sequence

from dataset_builder.vocabulary import SETTINGS, setting_label
from negt2ibench.core.table import Column, HeaderRow, Table

from .cells import HUMAN, NAN, figure, median_width, order_by_best, percent, share, text, with_interval
from .evaluators import MODE_ROWS, evaluator_groups
from .paper_tables import mode_rows

SETTING_COLUMNS = tuple(setting_label(p, n) for p, n in SETTINGS)
NO_NEGATION = frozenset(setting_label(p, n) for p, n in SETTINGS if n == 0)  # 1:0, 2:0: nothing to rephrase
LOAD_HEADER: HeaderRow = (("", 1), ("Load 1", 2), ("Load 2", 3), ("Load 3", 2), ("Load 4", 1), ("", 1))
CATEGORY_COLUMNS = ("color", "material", "comparative", "depth", "directional", "proximity")
CATEGORY_HEADER: HeaderRow = (("", 1), ("Attributes", 2), ("Relations", 4), ("", 1))
ANNOTATORS = "Annotators"


def _tau_table(
    report: dict, *, field: str, buckets: Sequence[str], header: HeaderRow, name: str, title: str, caption: str
) -> Table:
    evaluators = report["evaluators"]
    columns = [text("evaluator", "Evaluator", shown=False), text("mode", "mode", shown=False), text("row", "Evaluator")]
    columns += [share(bucket, bucket.capitalize() if bucket[0].isalpha() else bucket) for bucket in buckets]
    columns.append(share("all", "All"))
    columns += [
        Column(f"{bucket}_ci", f"{bucket} interval", percent, in_markdown=False, pair=True) for bucket in buckets
    ]
    rows, intervals = [], []
    for group in order_by_best(evaluator_groups(evaluators), evaluators, "spearman_rho"):
        for mode, run in mode_rows(group):
            block = evaluators[run]
            row = {
                "evaluator": group.label,
                "mode": mode or "single",
                "row": MODE_ROWS[mode],
                "all": figure(block["kendall_tau"]),
            }
            for bucket in buckets:
                cell = block[field].get(bucket, {})
                blank = mode == "neg" and bucket in NO_NEGATION
                row[bucket] = NAN if blank else figure(cell.get("kendall_tau"))
                row[f"{bucket}_ci"] = None if blank else cell.get("kendall_tau_ci")
                intervals.append(row[f"{bucket}_ci"])
            rows.append(row)
    human = report["human"]
    rows.append(
        {"evaluator": ANNOTATORS, "mode": "", "row": HUMAN, "all": figure(human["loo_tau"])}
        | {bucket: figure(human[field].get(bucket, {}).get("loo_tau")) for bucket in buckets}
        | {f"{bucket}_ci": None for bucket in buckets}
    )
    width = median_width(intervals)
    notes = (
        [f"Per-cell intervals (in the CSV) have a median width of {100 * width:.0f} points."] if width == width else []
    )
    return Table(
        name,
        title,
        tuple(columns),
        rows,
        notes=tuple(notes),
        caption=caption,
        header_rows=(header,),
        group="evaluator",
        bold_best=True,
        references=(False,) * (len(rows) - 1) + (True,),
    )


def _cell_sizes(report: dict, field: str) -> str:
    sizes = [cell["n"] for cell in report["human"][field].values()]
    return f"{min(sizes)} to {max(sizes)}" if sizes and min(sizes) != max(sizes) else (str(sizes[0]) if sizes else "0")


def table11(report: dict) -> Table:
    """Table 11: Kendall τ by polarity setting, the neg row blank at 1:0 and 2:0."""
    caption = (
        "Kendall τ against the continuous human score, by polarity setting (positive:negated statements). Judges "
        "are shown in their three scoring modes. The inter-annotator score (H. inter-annotator) is recomputed within "
        "each setting. Settings with no negated statement (1:0, 2:0) have nothing to rephrase, so their negated row "
        f"is blank. Each cell holds {_cell_sizes(report, 'by_setting')} images. All is computed on all "
        f"{report['n_images']} images."
    )
    return _tau_table(
        report,
        field="by_setting",
        buckets=SETTING_COLUMNS,
        header=LOAD_HEADER,
        name="table11",
        title="Table 11: Kendall τ by polarity setting",
        caption=caption,
    )


def table12(report: dict) -> Table:
    """Table 12: Kendall τ by category, attributes then relations (Color, Material, Comparative,
    Depth, Directional, Proximity)."""
    caption = (
        "Kendall τ against the continuous human score, by semantic category. Judges are shown in their three scoring "
        "modes. The inter-annotator score (H. inter-annotator) is recomputed within each category. Each cell holds "
        f"{_cell_sizes(report, 'by_category')} images. All is computed on all {report['n_images']} images."
    )
    return _tau_table(
        report,
        field="by_category",
        buckets=CATEGORY_COLUMNS,
        header=CATEGORY_HEADER,
        name="table12",
        title="Table 12: Kendall τ by category",
        caption=caption,
    )


# ----------------------------------------------------------------------------------------- Table 13

BLOCK_TITLES = {"positive": "Affirmative statements", "negated": "Negated statements", "all": "All elements"}


def table13(report: dict) -> Table:
    """Table 13: element-level agreement by polarity, one block each (affirmative, negated, all),
    each with its own annotators' row (leave-one-out κ); only evaluators that decide elements."""
    evaluators = report["evaluators"]
    columns = [text("block", "Block", shown=False), text("evaluator", "Evaluator"), Column("n", "n", percent)]
    columns += [share("accuracy", "Acc.")]
    columns += with_interval("kappa", "κ")
    columns += [share("satisfied", "Satisfied"), share("unsatisfied", "Unsatisfied"), share("balanced", "Balanced")]
    metrics = ("accuracy", "kappa", "satisfied", "unsatisfied", "balanced")
    rows, references = [], []
    for block, title in BLOCK_TITLES.items():
        for group in evaluator_groups(evaluators):
            for mode, run in mode_rows(group):
                cell = evaluators[run]["elements"].get(block)
                if not cell:
                    continue  # a whole-prompt run decides no element
                row = {"block": title, "evaluator": group.row_label(mode), "n": int(cell["n"])}
                row |= {metric: figure(cell.get(metric)) for metric in metrics} | {"kappa_ci": cell.get("kappa_ci")}
                rows.append(row)
                references.append(False)
        human = report["human"]["elements"][block]
        rows.append(
            {"block": title, "evaluator": HUMAN, "n": int(human["n"]), "kappa": figure(human["loo_kappa"])}
            | {metric: NAN for metric in metrics if metric != "kappa"}
            | {"kappa_ci": None}
        )
        references.append(True)
    options = report["options"]
    caption = (
        "Element-level agreement, by polarity. One decision per object and per statement instead of one verdict per "
        "image. Negated statements are harder for the annotators too, so each block has its own inter-annotator score "
        "(leave-one-out κ). Satisfied, Unsatisfied: the share of satisfied and of unsatisfied elements each method "
        "gets right; Balanced: their mean."
        + (
            f" Intervals on κ are {100 * options['confidence']:.0f}% bootstrap intervals resampling images."
            if options["resamples"]
            else ""
        )
    )
    return Table(
        "table13",
        "Table 13: element-level agreement, by polarity",
        tuple(columns),
        rows,
        caption=caption,
        group="block",
        bold_best=True,
        best_by_group=True,
        references=tuple(references),
    )
