"""The paper's validation Tables 2, 5, 6, 7, 9 and 10 as `Table`s in its layout, from `agree`'s report.

Each builder takes the JSON-ready report of `validation.agreement.compute_agreement` (fractions;
the cells show the paper's percentages) and gives one `Table` with the paper's rows, columns,
header rows, groups and bold best per column (Tables 11–13: `validation.paper_breakdowns`).
Judges are gathered by `validation.evaluators`: one row (Tables 2, 6) or one group of rows
(Table 7) per judge, its modes side by side. The annotators' row (H. inter-annotator) is shown
and never ranked. docs/validation.md lists every table and the choices the paper leaves open.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from negt2ibench.core.table import Column, Table

from .cells import HUMAN, NAN, figure, number, order_by_best, percent, share, text, with_interval
from .costs import Cost
from .evaluators import KIND_TITLES, MODE_ROWS, MODES, SINGLE, EvaluatorGroup, evaluator_groups

BLOCK_ROWS = {"all": "All statements", "positive": "Affirmative", "negated": "Negated"}


def _mode_figure(group: EvaluatorGroup, evaluators: Mapping[str, Mapping], mode: str, metric: str) -> float:
    """A group's `metric` in `mode`; a one-mode evaluator's figure stands in its pos and neg
    columns (the per-element decomposition, negated statements decided by its own rules), not in
    whole."""
    chosen: str | None = mode
    if group.kind != "judge":
        chosen = SINGLE if mode in ("pos", "neg") else None
    name = group.runs.get(chosen) if chosen is not None else None
    return figure(evaluators[name].get(metric)) if name else NAN


def _delta(group: EvaluatorGroup, evaluators: Mapping[str, Mapping], metric: str) -> float:
    """neg − pos of a judge with both modes; NaN otherwise (nothing was rephrased)."""
    if group.kind != "judge" or "pos" not in group.runs or "neg" not in group.runs:
        return NAN
    return _mode_figure(group, evaluators, "neg", metric) - _mode_figure(group, evaluators, "pos", metric)


def _n(report: dict) -> int:
    return int(report["n_images"])


# ------------------------------------------------------------------------------------------ Table 2

TABLE2_CAPTION = (
    "Cost and agreement with human labels on {n} images, against the majority of three annotators. Judge modes: "
    "whole prompt (whole), per-element questions (pos), and per-element with negated statements asked in negated "
    "form (neg); Δ = neg − pos. Precision and recall use the per-element mode. H. inter-annotator: agreement "
    "between annotators. Bold: best in column."
)


def table2(report: dict, costs: Mapping[str, Cost] | None = None) -> Table:
    """Table 2: one row per evaluator, its cost (from run records, blank without one), Cohen's κ
    and Kendall τ in each mode with Δ = neg − pos, and the per-element precision and recall."""
    costs = costs or {}
    evaluators = report["evaluators"]
    columns = [
        text("key", "key", shown=False),
        text("evaluator", "Evaluator"),
        Column("params", "Params ↓", "{:g}B", higher_is_better=False),
        Column("gib", "GiB ↓", "{:.1f}", higher_is_better=False),
        Column("s_per_image", "s/img ↓", "{:.2f}", higher_is_better=False),
        *(share(f"kappa_{mode}", f"{mode} ↑") for mode in MODES),
        share("kappa_delta", "Δ", None),
        share("precision", "Prec. ↑"),
        share("recall", "Rec. ↑"),
        *(share(f"tau_{mode}", f"{mode} ↑") for mode in MODES),
        share("tau_delta", "Δ", None),
        text("cost_source", "cost record", shown=False),
    ]
    rows = []
    for group in evaluator_groups(evaluators):
        cost = costs.get(group.key)
        row: dict[str, Any] = {"key": group.key, "evaluator": group.label}
        row |= {
            "params": figure(cost.params) if cost else NAN,
            "gib": figure(cost.gib) if cost else NAN,
            "s_per_image": figure(cost.seconds_per_image) if cost else NAN,
            "cost_source": cost.source if cost else "",
        }
        for metric, prefix in (("kappa", "kappa"), ("kendall_tau", "tau")):
            row |= {f"{prefix}_{mode}": _mode_figure(group, evaluators, mode, metric) for mode in MODES}
            row[f"{prefix}_delta"] = _delta(group, evaluators, metric)
        per_element = evaluators[group.per_element] if group.per_element else {}
        row |= {metric: figure(per_element.get(metric)) for metric in ("precision", "recall")}
        rows.append(row)
    human = report["human"]
    empty = {column.key: NAN for column in columns} | {"key": "", "cost_source": ""}
    rows.append(
        empty | {"evaluator": HUMAN, "kappa_pos": figure(human["loo_kappa"]), "tau_pos": figure(human["loo_tau"])}
    )
    notes = [
        "The scorer has one mode, the per-element decomposition with its own rule for each negated statement: its "
        "figure stands under pos and neg, and its Δ is blank. H. inter-annotator: each annotator against the mean "
        "answer of the other two (leave-one-out κ, and τ against the mean score), under pos: the annotators "
        "answered the per-element questions with negated statements asked affirmatively.",
        "Cost: Params, peak GiB and s/img from the evaluators' run records (s/img as Table 8: s/question × the "
        "per-element questions per image); blank where no record was given."
        + _cost_sources(costs, [group.key for group in evaluator_groups(evaluators)]),
    ]
    return Table(
        "table2",
        "Table 2: cost and agreement with human labels",
        tuple(columns),
        rows,
        notes=tuple(notes),
        caption=TABLE2_CAPTION.format(n=_n(report)),
        header_rows=((("", 1), ("Cost", 3), ("Cohen's κ", 4), ("Per element", 2), ("Kendall τ", 4)),),
        bold_best=True,
        references=(False,) * (len(rows) - 1) + (True,),
    )


def _cost_sources(costs: Mapping[str, Cost], keys: list[str]) -> str:
    used = [costs[key] for key in keys if key in costs]
    if not used:
        return ""
    rss = [cost.key for cost in used if cost.memory_kind == "rss"]
    text_ = " Records: " + ", ".join(f"{cost.key} ({cost.source})" for cost in used) + "."
    if rss:
        text_ += f" GiB is the process's peak RSS, not GPU memory, for {', '.join(rss)} (a CPU run)."
    return text_


# ------------------------------------------------------------------------------------------ Table 5


def table5(report: dict) -> Table:
    """Table 5: agreement between annotators over all, affirmative and negated statements (objects
    count as affirmative: they are asked affirmatively)."""
    columns = (
        text("statements", "Statements"),
        Column("n", "n", percent),
        share("fleiss_kappa", "Fleiss' κ", None),
        share("unanimous", "Unanimous", None),
        share("loo_kappa", "Leave-one-out κ", None),
        share("pairwise_kappa", "Mean pairwise κ", None, in_markdown=False),
    )
    elements = report["human"]["elements"]
    rows = [
        {"statements": BLOCK_ROWS[block]}
        | {c.key: figure(elements[block].get(c.key)) for c in columns[2:]}
        | {"n": int(elements[block]["n"])}
        for block in ("all", "positive", "negated")
    ]
    caption = (
        "Agreement between annotators. Fleiss' κ and the share of statements all three answered alike. Negated "
        "statements are harder for people as well, so evaluators are compared against the leave-one-out "
        "inter-annotator score rather than against perfect agreement."
    )
    notes = (
        "Leave-one-out κ: each annotator's Cohen's κ against the mean answer of the other two, averaged over the "
        "three (docs/validation.md). Statements include the objects, asked affirmatively.",
    )
    return Table("table5", "Table 5: agreement between annotators", columns, rows, notes=notes, caption=caption)


# ------------------------------------------------------------------------------------------ Table 6


def table6(report: dict) -> Table:
    """Table 6: Cohen's κ in every scoring mode, the scorer apart from the judges."""
    evaluators = report["evaluators"]
    columns = (
        text("kind", "Kind", shown=False),
        text("key", "key", shown=False),
        text("evaluator", "Evaluator"),
        share("whole", "Whole prompt"),
        share("pos", "Per element"),
        share("neg", "Negated per element"),
    )
    order = {kind: number for number, kind in enumerate(KIND_TITLES)}
    groups = sorted(evaluator_groups(evaluators), key=lambda g: order[g.kind])
    rows = [
        {"kind": KIND_TITLES[g.kind], "key": g.key, "evaluator": g.label}
        | {mode: _mode_figure(g, evaluators, mode, "kappa") for mode in MODES}
        for g in groups
    ]
    caption = (
        "Binary agreement (Cohen's κ), all scoring modes. Whole prompt, the benchmark's per-element decomposition, "
        "and that decomposition with the statements the prompt negates asked in negated form; all other questions "
        "are unchanged."
    )
    return Table(
        "table6",
        "Table 6: binary agreement, all scoring modes",
        columns,
        rows,
        caption=caption,
        group="kind",
        bold_best=True,
    )


# ------------------------------------------------------------------------------------------ Table 7

RANKS = (("spearman_rho", "ρ"), ("kendall_tau", "τ"), ("pair_accuracy", "Pair acc."))


def mode_rows(group: EvaluatorGroup) -> list[tuple[str, str]]:
    """(mode, run name) of a group's rows, in the paper's order (whole, pos, neg)."""
    return [(mode, group.runs[mode]) for mode in group.modes() if mode in group.runs]


def table7(report: dict) -> Table:
    """Table 7: Spearman ρ, Kendall τ and pair accuracy with their intervals, one group of rows per
    evaluator (a judge: one row per mode), evaluators ordered by their best ρ."""
    evaluators = report["evaluators"]
    columns = [text("evaluator", "Evaluator", shown=False), text("mode", "mode", shown=False), text("row", "Evaluator")]
    for key, label in RANKS:
        columns += with_interval(key, label)
    rows = []
    for group in order_by_best(evaluator_groups(evaluators), evaluators, "spearman_rho"):
        for mode, name in mode_rows(group):
            block = evaluators[name]
            row: dict[str, Any] = {"evaluator": group.label, "mode": mode or "single", "row": MODE_ROWS[mode]}
            for key, _ in RANKS:
                row |= {key: figure(block.get(key)), f"{key}_ci": block.get(f"{key}_ci")}
            rows.append(row)
    options = report["options"]
    intervals = (
        f"{100 * options['confidence']:.0f}% bootstrap intervals over images ({options['resamples']:,} resamples)"
        if options["resamples"]
        else "no intervals (--bootstrap 0)"
    )
    caption = (
        f"Rank agreement with the human score. Spearman ρ, Kendall τ and pairwise ranking accuracy, with {intervals}. "
        "Judges are ordered by their best ρ. Rank agreement needs no threshold, so it is the only comparison that "
        "admits the similarity and reward scores."
    )
    return Table(
        "table7",
        "Table 7: rank agreement with the human score",
        tuple(columns),
        rows,
        caption=caption,
        group="evaluator",
        bold_best=True,
    )


# ------------------------------------------------------------------------------------------ Table 9


def table9(report: dict) -> Table:
    """Table 9: confusion counts, precision, recall and called correct for the per-element mode,
    judges ordered by Cohen's κ, the scorer (and any other one-mode evaluator) listed apart."""
    evaluators = report["evaluators"]
    columns = (
        text("section", "Section", shown=False),
        text("evaluator", "Evaluator"),
        Column("tp", "TP", percent, higher_is_better=True),
        Column("tn", "TN", percent, higher_is_better=True),
        Column("fp", "FP", percent, higher_is_better=False),
        Column("fn", "FN", percent, higher_is_better=False),
        share("precision", "Prec."),
        share("recall", "Rec."),
        share("called_correct", "Called correct (%)", None),
        share("kappa", "κ", in_markdown=False),
    )
    groups = [g for g in evaluator_groups(evaluators) if g.per_element]
    judges = [g for g in groups if g.kind == "judge"]
    judges = sorted(judges, key=lambda g: -_sortable(evaluators[g.per_element].get("kappa")))
    rows = []
    for group in judges + [g for g in groups if g.kind != "judge"]:
        block = evaluators[group.per_element]
        section = "VQA judges, per element (pos.)" if group.kind == "judge" else KIND_TITLES[group.kind]
        row: dict[str, Any] = {
            "section": section,
            "evaluator": group.row_label("pos" if group.kind == "judge" else SINGLE),
        }
        row |= {key: int(block[key]) for key in ("tp", "tn", "fp", "fn")}
        row |= {key: figure(block.get(key)) for key in ("precision", "recall", "called_correct", "kappa")}
        rows.append(row)
    caption = (
        f"Error structure. Counts against the majority label of three annotators on {_n(report)} images, for the "
        "per-element scoring mode. FP is an image the annotators reject but the evaluator passes; FN is an image "
        "the annotators accept but the evaluator rejects. Judges are ordered by Cohen's κ; NegT2IBench is listed "
        "separately."
    )
    notes = (f"The majority of annotators passes {percent(report['human']['majority_pass'])}% of the images.",)
    return Table(
        "table9",
        "Table 9: error structure",
        columns,
        rows,
        notes=notes,
        caption=caption,
        group="section",
        bold_best=True,
    )


def _sortable(value: object) -> float:
    return -float("inf") if value is None or value != value else number(value)


# ----------------------------------------------------------------------------------------- Table 10


def table10(report: dict) -> Table:
    """Table 10: the negated-question probe of every judge given with a pos and a neg run (the
    `negation` probe's figures), judges ordered by flip rate."""
    from .evaluators import display_name

    columns = (
        text("judge", "key", shown=False),
        text("evaluator", "Evaluator"),
        *(
            share(f"accuracy_{mode}", f"Acc. {label}")
            for mode, label in (("whole", "whole"), ("pos", "pos."), ("neg", "neg."))
        ),
        share("flip_rate", "Flip (%)"),
        Column("complement_error", "Compl. err.", "{:.3f}", higher_is_better=False),
        share("called_correct_pos", "Called corr. pos. (%)", None),
        share("called_correct_neg", "Called corr. neg. (%)", None),
        Column("n", "n", percent, in_markdown=False),
        Column("n_statements", "negated statements", percent, in_markdown=False),
    )
    probe = report.get("probes", {}).get("negation", {})
    paired = {judge: entry for judge, entry in probe.items() if "skipped" not in entry}
    rows = [
        {"judge": judge, "evaluator": display_name(judge, "judge")}
        | {c.key: figure(entry.get(c.key)) for c in columns[2:-2]}
        | {"n": int(entry["n"]), "n_statements": int(entry["n_statements"])}
        for judge, entry in sorted(paired.items(), key=lambda item: -_sortable(item[1].get("flip_rate")))
    ]
    caption = (
        "Negated-question probe. Acc. whole, pos., neg.: image accuracy against the binary human label in each "
        "mode. Flip: share of negated statements whose yes/no answer changes between the positive and negated "
        "wording. Compl. err.: mean |p_pos + p_neg − 1| over those statements, zero when the two answers are "
        "complementary. Called corr. pos., neg.: share of the images the evaluator passes in each mode; the "
        f"annotators pass {percent(report['human']['majority_pass'])}%. NegT2IBench has one scoring mode and no "
        "question to rephrase."
    )
    notes = []
    if not rows:
        notes.append("No judge was given with both a pos and a neg run: nothing to probe.")
    notes += [f"Not paired: {judge}: {entry['skipped']}" for judge, entry in probe.items() if "skipped" in entry]
    return Table(
        "table10",
        "Table 10: negated-question probe",
        columns,
        rows,
        notes=tuple(notes),
        caption=caption,
        bold_best=True,
    )
