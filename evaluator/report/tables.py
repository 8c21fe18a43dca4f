"""The report's tables, each built once from aggregated numbers (see `aggregate`) as a `Table`.

The builders take the per-model dicts that `aggregate` returns (not records), so a caller that
stored them (the Space keeps each submission's rows) builds the same tables. `report_tables`
builds every table of a `Report`; Markdown, CSV, JSON, frames and plots are drawn from those.
Table 3's columns (`TABLE3_COLUMNS`) are also the leaderboard's (`LEADERBOARD_COLUMNS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.results import CAUSES, ResultRecord
from negt2ibench.core.table import Column, Table

from .aggregate import Report, table3
from .keys import ALL, CATEGORY_TITLES, SETTING_LABELS, TABLE3_CATEGORIES
from .numbers import DeadZoneRow, FailureCauses, LeaderboardRow, MatchedDelta, StatementAccuracy
from .ots import ots_table

MODEL = Column("model", "Model", fmt=str)
TEXT = str  # the `fmt` of a text column


def category_title(category: str) -> str:
    """The short heading of a category as the paper prints it (`all` → `All`).

    Args:
        category: a category's key, or `all`.

    Returns:
        Its heading.
    """
    return CATEGORY_TITLES.get(category, "All")


def _interval(bounds: tuple[float, float]) -> str:
    low, high = bounds
    return "–" if math.isnan(low) else f"[{low:.1f}, {high:.1f}]"


# -- Table 3 and the leaderboard ----------------------------------------------------------------------

TABLE3_COLUMNS: tuple[Column, ...] = (
    MODEL,
    *(Column(setting, setting, higher_is_better=True) for setting in SETTING_LABELS),
    *(Column(category, CATEGORY_TITLES[category], higher_is_better=True) for category in TABLE3_CATEGORIES),
    Column("overall", "Overall", higher_is_better=True),
    Column("polarity_gap", "Gap 0:1−1:0"),  # acc(0:1) − acc(1:0): a property, neither way is better
    Column("coverage", "Coverage", higher_is_better=True),
    Column("images", "Images", in_markdown=False),
    Column("errors", "Errors", higher_is_better=False, in_markdown=False),
    Column("complete", "Complete", fmt=TEXT, in_markdown=False),
)
# A leaderboard row: Table 3's columns up to the image count (the Space adds status and link).
LEADERBOARD_COLUMNS: tuple[str, ...] = tuple(column.key for column in TABLE3_COLUMNS[:-2])
TABLE3_CAPTION = (
    "Accuracy (%) by polarity and statement load (left) and by semantic category (right). P:N denotes P asserted "
    "and N negated statements; category values are averaged over all eight settings. Bold marks the best value "
    "per column. Gap: 0:1 − 1:0 (percentage points); Coverage: % of the benchmark's images scored."
)
# The paper's header rows over Table 3's Markdown columns (model, 8 settings, 6 categories, overall,
# then our gap and coverage).
TABLE3_HEADER_ROWS = (
    (("", 1), ("Statement polarity and load", 8), ("Semantic category", 7), ("", 2)),
    (("", 1), ("Load 1", 2), ("Load 2", 3), ("Load 3", 2), ("Load 4", 1), ("Attributes", 2), ("Relations", 4), ("", 3)),
)
OTHER_FAMILY = "Other"
MIXED_CONFIGS_NOTE = (
    "Warning: these models were scored with different evaluator versions or configurations "
    "(see Provenance); their numbers are not directly comparable."
)


def _family_order(by_model: Mapping[str, Any], models: Mapping[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """(model, family title) in Table 3's order: families as `models` lists them first, each
    family's models in `models`' order, then models it does not know (family "Other")."""
    families = list(dict.fromkeys(family for family, _ in models.values()))
    known = [(model, models[model][0]) for model in models if model in by_model]
    known.sort(key=lambda entry: families.index(entry[1]))
    return known + [(model, OTHER_FAMILY) for model in by_model if model not in models]


def _table3_columns(models: Mapping[str, tuple[str, str]] | None) -> tuple[Column, ...]:
    """`TABLE3_COLUMNS`, or with MODELS their display names in the model column and a `family` column."""
    if models is None:
        return TABLE3_COLUMNS
    names = {model: name for model, (_, name) in models.items()}
    model_column = replace(MODEL, fmt=lambda key: names.get(key, key))
    return (model_column, *TABLE3_COLUMNS[1:], Column("family", "Family", fmt=TEXT, in_markdown=False))


def table3_table(
    by_model: Mapping[str, Mapping[str, Any]],
    provenance: Mapping[str, Mapping[str, str]] | None = None,
    models: Mapping[str, tuple[str, str]] | None = None,
) -> Table:
    """Table 3 in the paper's layout, one row per model.

    With its header rows (polarity and load, semantic category) and the best value of each column
    in bold; a model with missing images is marked † and its coverage given in a note.

    Args:
        by_model: each model's Table 3 numbers (`aggregate.table3`).
        provenance: each model's evaluator version and config hash; when they differ, a note warns.
        models: {model key: (family title, display name)} (`generation.registry.table3_models`):
            groups the rows by family and names them as the paper does; the files keep the model key
            and gain a `family` column. Without it the columns are `TABLE3_COLUMNS` (the
            leaderboard's) and the rows keep their order.

    Returns:
        The `table3` table.
    """
    order = _family_order(by_model, models) if models is not None else [(model, "") for model in by_model]
    rows, marks, incomplete = [], [], []
    for model, family in order:
        numbers = by_model[model]
        row: dict[str, Any] = {"model": model}
        row.update({setting: numbers["settings"][setting] for setting in SETTING_LABELS})
        row.update({category: numbers["categories"][category] for category in TABLE3_CATEGORIES})
        row.update({key: numbers[key] for key in ("overall", "polarity_gap", "coverage", "images", "errors")})
        row["complete"] = numbers["complete"]
        if models is not None:
            row["family"] = family
        rows.append(row)
        marks.append("" if numbers["complete"] else "†")
        if not numbers["complete"]:
            incomplete.append(
                f"{model}: {numbers['images']:,} of {numbers['expected_images']:,} images scored "
                f"({numbers['coverage']:.1f}%)"
            )
    notes = []
    if incomplete:
        notes.append("† Incomplete, accuracies are over the scored images only: " + "; ".join(incomplete) + ".")
    if provenance and len({(p["evaluator_version"], p["config_hash"]) for p in provenance.values()}) > 1:
        notes.append(MIXED_CONFIGS_NOTE)
    return Table(
        "table3",
        "Table 3: image accuracy",
        _table3_columns(models),
        rows,
        notes=notes,
        caption=TABLE3_CAPTION,
        marks=marks,
        header_rows=TABLE3_HEADER_ROWS,
        group="family" if models is not None else None,
        bold_best=True,
    )


def leaderboard_row(
    results: Sequence[ResultRecord], model_key: str, expected_samples: int = SAMPLES_PER_PROMPT
) -> LeaderboardRow:
    """One flat leaderboard row for a model: Table 3's row for it.

    Args:
        results: result records of any models; only MODEL_KEY's are read.
        model_key: the model whose row to make.
        expected_samples: images per prompt in a complete run (for the coverage).

    Returns:
        The row, keyed by `LEADERBOARD_COLUMNS` in their order.

    Raises:
        ValueError: RESULTS hold no record of MODEL_KEY, or a record is not reportable (a sample
            index out of range, a failed statement without a cause).
    """
    own = [record for record in results if record.model_key == model_key]
    if not own:
        raise ValueError(f"no results for model {model_key!r}")
    row = table3_table(table3(own, expected_samples)).rows[0]
    return cast(LeaderboardRow, {key: row[key] for key in LEADERBOARD_COLUMNS})


# -- statement-level tables -----------------------------------------------------------------------------


def statement_accuracy_table(by_model: Mapping[str, Mapping[str, StatementAccuracy]]) -> Table:
    """% of statements satisfied per model × category (and `all`) × polarity, with the counts.

    Args:
        by_model: each model's statement accuracy (`aggregate.statement_accuracy`).

    Returns:
        The `statement_accuracy` table, one row per model and category.
    """
    columns = (
        MODEL,
        Column("category", "Category", fmt=category_title),
        Column("positive", "Positive", higher_is_better=True),
        Column("negated", "Negated", higher_is_better=True),
        Column("positive_n", "Positive statements", in_markdown=False),
        Column("negated_n", "Negated statements", in_markdown=False),
    )
    rows = [
        {"model": model, "category": category, **row}
        for model, categories in by_model.items()
        for category, row in categories.items()
    ]
    return Table(
        "statement_accuracy",
        "Statement accuracy by polarity and category",
        columns,
        rows,
        caption="% of statements satisfied (positive / negated).",
    )


def failure_causes_table(by_model: Mapping[str, FailureCauses], axis: str) -> Table:
    """Figure 3's counts: failed statements per model × setting or category × cause.

    Args:
        by_model: each model's failure causes (`aggregate.failure_causes`).
        axis: `setting` or `category`.

    Returns:
        The `failure_causes_by_{axis}` table.
    """
    columns = (
        MODEL,
        Column(axis, axis.capitalize(), fmt=TEXT),
        *(Column(cause, cause, higher_is_better=False) for cause in CAUSES),
        Column("failed", "Failed", higher_is_better=False),
    )
    rows = [
        {"model": model, axis: bucket, **{cause: row[cause] for cause in CAUSES}, "failed": row["failed"]}
        for model, causes in by_model.items()
        for bucket, row in (causes["by_setting"] if axis == "setting" else causes["by_category"]).items()
    ]
    return Table(f"failure_causes_by_{axis}", f"By {axis}", columns, rows)


def forbidden_share_table(by_model: Mapping[str, FailureCauses]) -> Table:
    """% of failed statements whose cause is `forbidden_rendered`, per model × category (and all).

    Args:
        by_model: each model's failure causes.

    Returns:
        The `forbidden_share` table.
    """
    buckets = TABLE3_CATEGORIES + (ALL,)
    columns = (MODEL, *(Column(bucket, category_title(bucket), higher_is_better=False) for bucket in buckets))
    rows = [
        {"model": model, **{bucket: causes["forbidden_share"][bucket] for bucket in buckets}}
        for model, causes in by_model.items()
    ]
    return Table("forbidden_share", "Share of failed statements that rendered the forbidden content (%)", columns, rows)


def dead_zone_table(by_model: Mapping[str, Mapping[str, DeadZoneRow]]) -> Table:
    """Table 19: negated relations that passed only because no predicate was emitted.

    Args:
        by_model: each model's dead-zone rows (`aggregate.dead_zone_passes`).

    Returns:
        The `dead_zone` table, one row per model and category.
    """
    columns = (
        MODEL,
        Column("category", "Category", fmt=str.capitalize),
        Column("evaluable", "Evaluable"),
        Column("passed", "Passed"),
        Column("dead_zone_passes", "Dead-zone passes", higher_is_better=False),
        Column("share", "Share of passes (%)", higher_is_better=False),
    )
    rows = [
        {"model": model, "category": category, **row}
        for model, table in by_model.items()
        for category, row in table.items()
    ]
    return Table(
        "dead_zone",
        "Dead-zone passes among negated relations (Table 19)",
        columns,
        rows,
        caption="Evaluable: negated relation statements with both objects present. Share: dead-zone passes / passed.",
    )


def matched_deltas_table(
    by_model: Mapping[str, Mapping[str, Mapping[str, MatchedDelta]]], options: Mapping[str, Any]
) -> Table:
    """Negated − positive accuracy on matched groups, per model × category × pair (and `all`).

    With the bootstrap interval; on screen the interval is one cell, in files two.

    Args:
        by_model: each model's matched deltas (`aggregate.matched_group_deltas`).
        options: the report's options (its `bootstrap` and `seed` go in the caption).

    Returns:
        The `matched_deltas` table.
    """
    columns = (
        MODEL,
        Column("category", "Category", fmt=TEXT),
        Column("pair", "Pair", fmt=TEXT, in_markdown=False),
        Column("groups", "Groups"),
        Column("positive", "Positive", higher_is_better=True),
        Column("negated", "Negated", higher_is_better=True),
        Column("delta", "Δ"),
        Column("ci_low", "95% CI low", in_markdown=False),
        Column("ci_high", "95% CI high", in_markdown=False),
        Column("ci", "95% CI", fmt=_interval, in_files=False),
    )
    rows = [
        {"model": model, "category": category, "pair": pair, **row, "ci": (row["ci_low"], row["ci_high"])}
        for model, categories in by_model.items()
        for category, pairs in categories.items()
        for pair, row in pairs.items()
    ]
    caption = (
        f"Image accuracy of prompt k in the negated setting minus prompt k in the positive setting (same objects "
        f"and predicates), pooled over 1:0/0:1, 2:0/0:2 and 2:1/1:2; {options.get('bootstrap')} bootstrap "
        f"resamples over groups (seed {options.get('seed')}), 95% percentile interval, percentage points."
    )
    return Table("matched_deltas", "Matched-group deltas (negated − positive)", columns, rows, caption=caption)


def provenance_table(provenance: Mapping[str, Mapping[str, str]]) -> Table:
    """Which evaluator version and configuration scored each model.

    Args:
        provenance: each model's evaluator version and config hash.

    Returns:
        The `provenance` table.
    """
    columns = (
        MODEL,
        Column("evaluator_version", "Evaluator version", fmt=TEXT),
        Column("config_hash", "Config hash", fmt=TEXT),
    )
    rows = [
        {"model": model, **{key: p[key] for key in ("evaluator_version", "config_hash")}}
        for model, p in provenance.items()
    ]
    return Table("provenance", "Provenance", columns, rows)


INPUTS_SHOWN = 50  # notes listed in report.md (report.json has them all)


def inputs_table(inputs: Mapping[str, Any], shown: int = INPUTS_SHOWN) -> Table:
    """The lines a report left out and the error rows it kept, each with its file:line and reason.

    Args:
        inputs: what was read (`inputs.ReportInputs.to_dict()`).
        shown: the notes shown (the count is in the caption, the rest in report.json).

    Returns:
        The `inputs` table.
    """
    columns = (
        Column("kind", "Kind", fmt=TEXT),
        Column("where", "File:line", fmt=TEXT),
        Column("prompt_id", "Prompt id", fmt=TEXT),
        Column("sample_index", "Sample", fmt=TEXT),
        Column("reason", "Reason", fmt=TEXT),
    )
    notes = [("left out", note) for note in inputs.get("left_out", [])]
    notes += [("error row", note) for note in inputs.get("error_rows", [])]
    keys = ("where", "prompt_id", "sample_index", "reason")
    rows = [{"kind": kind, **{k: "" if note[k] is None else note[k] for k in keys}} for kind, note in notes[:shown]]
    caption = (
        f"{inputs.get('records', 0)} results read from {', '.join(inputs.get('files', [])) or '-'}; "
        f"{len(inputs.get('left_out', []))} line(s) left out of every table, "
        f"{len(inputs.get('error_rows', []))} error row(s) counted in coverage only."
    )
    notes_below = [f"... and {len(notes) - shown} more: report.json lists them all."] if len(notes) > shown else []
    return Table("inputs", "Inputs", columns, rows, caption=caption, notes=notes_below)


def report_tables(report: Report, models: Mapping[str, tuple[str, str]] | None = None) -> dict[str, Table]:
    """Every table of the report, each built once, by name (the order of the report's files).

    Args:
        report: a built report.
        models: groups and names Table 3's rows (see `table3_table`).

    Returns:
        The tables by name; `inputs` only when the report has inputs.
    """
    tables = [
        table3_table(report.table3, report.provenance, models),
        statement_accuracy_table(report.statement_accuracy),
        failure_causes_table(report.failure_causes, "setting"),
        failure_causes_table(report.failure_causes, "category"),
        forbidden_share_table(report.failure_causes),
        dead_zone_table(report.dead_zone),
        matched_deltas_table(report.matched_deltas, report.options),
        provenance_table(report.provenance),
        ots_table(report.ots),
    ]
    if report.inputs:
        tables.append(inputs_table(report.inputs))
    return {table.name: table for table in tables}
