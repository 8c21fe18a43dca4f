"""Aggregation: result records → the numbers of the paper's tables (Table 3, Figure 3, Table 19).

Pure functions: they take `ResultRecord`s and return plain dicts of numbers (their shapes are
the TypedDicts of `evaluator.report.numbers`), with no file or model access; `build_report`
collects them for every model into a `Report`. Each counts over a
model's records flattened once into arrays (`facts.record_facts`), which `build_report` makes once
per model for all the tables. The conventions
(percentages, NaN for an empty cell, coverage) are in `evaluator.report.keys`. Tables, files
and plots are made from a `Report` by `evaluator.report.tables`, `.document` and `.plots`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dataset_builder.records import PromptIndex
from dataset_builder.vocabulary import PROMPTS_PER_SETTING, RELATION_CATEGORIES, SAMPLES_PER_PROMPT
from evaluator.results import CAUSES, ResultRecord
from negt2ibench.core.bootstrap import mean_interval, percentile_interval, resample_indices
from negt2ibench.core.strict_json import json_ready

from .facts import (
    Facts,
    by_category_and_setting,
    by_prompt,
    failed_by_cause,
    first_failed_without_cause,
    negated_relation_counts,
    record_facts,
    statement_counts,
)
from .keys import (
    ALL,
    MATCHED_PAIRS,
    POOLED,
    SETTING_LABELS,
    TABLE3_CATEGORIES,
    expected_images,
    group_by_model,
    model_provenance,
    nanmean,
    percent,
)
from .numbers import DeadZoneRow, FailureCauses, MatchedDelta, OtsStatistics, StatementAccuracy, Table3Numbers
from .ots import builtin_prompts, ots_by_model

# ---------------------------------------------------------------------------------------------
# Table 3: image accuracy by setting, by category, overall; coverage
# ---------------------------------------------------------------------------------------------


def _check_samples(records: Sequence[ResultRecord], expected_samples: int) -> None:
    for record in records:
        if record.sample_index < 0 or record.sample_index >= expected_samples:
            raise ValueError(
                f"model {record.model_key!r}, prompt {record.prompt_id!r}: sample_index {record.sample_index} "
                f"is outside 0–{expected_samples - 1} (set the expected samples per prompt)"
            )


def _table3_one(records: Sequence[ResultRecord], expected_samples: int, facts: Facts | None = None) -> Table3Numbers:
    _check_samples(records, expected_samples)
    facts = facts or record_facts(records)
    total_array, passed_array = by_category_and_setting(facts)
    total, passed = total_array.tolist(), passed_array.tolist()  # [category][setting], Python ints
    setting_index = {label: i for i, label in enumerate(SETTING_LABELS)}

    def setting_accuracy(setting: str) -> float:
        s = setting_index[setting]
        return percent(sum(row[s] for row in passed), sum(row[s] for row in total))

    settings = {label: setting_accuracy(label) for label in SETTING_LABELS}
    categories = {
        category: nanmean(percent(passed[c][s], total[c][s]) for s in range(len(SETTING_LABELS)))
        for c, category in enumerate(TABLE3_CATEGORIES)
    }
    expected = expected_images(expected_samples)
    images = len(facts.scored)
    passed_images = sum(map(sum, passed))
    return {
        "settings": settings,
        "categories": categories,
        "overall": percent(passed_images, images),
        "polarity_gap": settings["0:1"] - settings["1:0"],
        "coverage": percent(images, expected),
        "images": images,
        "passed": passed_images,
        "errors": len(records) - images,
        "expected_images": expected,
        "complete": images == expected,
    }


def table3(results: Sequence[ResultRecord], expected_samples: int = SAMPLES_PER_PROMPT) -> dict[str, Table3Numbers]:
    """Table 3 per model.

    Accuracy (% of scored images passed) per setting (1:0 … 2:2, all categories pooled), per
    category (mean of its 8 settings' accuracies), overall (over all scored images),
    `polarity_gap` = acc(0:1) − acc(1:0), `coverage` = scored images / (4,800 × samples), `images`,
    `passed`, `errors`, `expected_images` and `complete`.

    Args:
        results: result records of one or more models (grouped by `model_key`).
        expected_samples: images per prompt a complete run has.

    Returns:
        Each model's Table 3 numbers, by model key.

    Raises:
        ValueError: a scored record whose prompt id is not a NegT2IBench id.
    """
    return {model: _table3_one(records, expected_samples) for model, records in group_by_model(results).items()}


def overall_interval(
    results: Sequence[ResultRecord],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    facts: Facts | None = None,
) -> tuple[float, float]:
    """The percentile bootstrap interval (%) of one model's overall accuracy (`table3`'s `overall`).

    Passed / scored images, prompts resampled with replacement and each prompt's images drawn
    together, as the report's other intervals draw them.

    Args:
        results: one model's records.
        n_resamples: bootstrap resamples.
        seed: the bootstrap's seed.
        confidence: the interval's confidence level.
        facts: the records' facts when already walked (`record_facts`); read from `results` otherwise.

    Returns:
        (low, high) in %; (NaN, NaN) without a scored image or without resamples.

    Raises:
        ValueError: a scored record whose prompt id is not a NegT2IBench id.
    """
    total, passed = (array.ravel() for array in by_prompt(facts or record_facts(results)))
    kept = total > 0
    total, passed = total[kept].astype(float), passed[kept].astype(float)
    if not total.size or n_resamples < 1:
        return (math.nan, math.nan)
    draws = resample_indices(total.size, resamples=n_resamples, seed=seed)
    shares = 100.0 * passed[draws].sum(axis=1) / total[draws].sum(axis=1)
    return percentile_interval(shares, confidence=confidence)


# ---------------------------------------------------------------------------------------------
# Statement-level tables
# ---------------------------------------------------------------------------------------------


def statement_accuracy(results: Sequence[ResultRecord], facts: Facts | None = None) -> dict[str, StatementAccuracy]:
    """% of statements satisfied, by category (and `all`) × polarity, over scored images.

    Args:
        results: one model's records.
        facts: the records' facts when already walked (`record_facts`).

    Returns:
        `{category: {"positive": %, "negated": %, "positive_n": count, "negated_n": count}}`.

    Raises:
        ValueError: a scored record whose prompt id is not a NegT2IBench id.
    """
    total_array, satisfied_array = statement_counts(facts or record_facts(results))
    rows = dict(zip(TABLE3_CATEGORIES, zip(total_array.tolist(), satisfied_array.tolist(), strict=True), strict=True))
    rows[ALL] = (total_array.sum(axis=0).tolist(), satisfied_array.sum(axis=0).tolist())
    table: dict[str, StatementAccuracy] = {}
    for bucket in TABLE3_CATEGORIES + (ALL,):
        total, satisfied = rows[bucket]  # [positive, negated] each
        table[bucket] = {
            "positive": percent(satisfied[0], total[0]),
            "positive_n": total[0],
            "negated": percent(satisfied[1], total[1]),
            "negated_n": total[1],
        }
    return table


def _failure_counts(facts: Facts) -> tuple[Any, Any]:
    """(settings × causes, categories × causes) counts of failed statements; a failed statement
    without a cause is a ValueError naming the first one."""
    missing = first_failed_without_cause(facts)
    if missing is not None:
        record = facts.scored[int(facts.record[missing])]
        raise ValueError(
            f"model {record.model_key!r}, prompt {record.prompt_id!r}, sample {record.sample_index}: "
            f"statement {int(facts.index[missing])} failed without a cause"
        )
    return failed_by_cause(facts)


def _failure_table(by_setting_counts: Any, by_category_counts: Any) -> FailureCauses:
    def as_table(buckets: Sequence[str], rows: list[list[int]]) -> dict[str, dict[str, int]]:
        return {
            bucket: {**{cause: row[c] for c, cause in enumerate(CAUSES)}, "failed": sum(row)}
            for bucket, row in zip(buckets, rows, strict=True)
        }

    categories = as_table(TABLE3_CATEGORIES, by_category_counts.tolist())
    failed = sum(row["failed"] for row in categories.values())
    forbidden = sum(row["forbidden_rendered"] for row in categories.values())
    share = {ALL: percent(forbidden, failed)}
    share.update({c: percent(row["forbidden_rendered"], row["failed"]) for c, row in categories.items()})
    return {
        "by_setting": as_table(SETTING_LABELS, by_setting_counts.tolist()),
        "by_category": categories,
        "failed": failed,
        "forbidden_share": share,
    }


def failure_causes(results: Sequence[ResultRecord]) -> FailureCauses:
    """Figure 3: every failed statement of a scored image counted once under its cause.

    Args:
        results: one model's records.

    Returns:
        `by_setting` and `by_category` ({bucket: {cause: count, "failed": total}}), the total
        `failed`, and `forbidden_share`: % of failed statements whose cause is `forbidden_rendered`,
        overall (`all`) and per category.

    Raises:
        ValueError: a scored record whose prompt id is not a NegT2IBench id.
    """
    return _failure_table(*_failure_counts(record_facts(results)))


_DEAD_ZONE_ORDER = ("depth", "directional", "comparative", "proximity")  # Table 19's row order


def _dead_zone_table(relation_counts: Any) -> dict[str, DeadZoneRow]:
    """Table 19 from `facts.negated_relation_counts` (categories × (evaluable, passed, dead))."""
    rows = dict(zip(TABLE3_CATEGORIES, relation_counts.tolist(), strict=True))
    table: dict[str, DeadZoneRow] = {}
    for bucket in _DEAD_ZONE_ORDER + ("total",):
        chosen = [rows[bucket]] if bucket != "total" else [rows[c] for c in RELATION_CATEGORIES]
        evaluable, passed, dead = (sum(row[i] for row in chosen) for i in range(3))
        table[bucket] = {
            "evaluable": evaluable,
            "passed": passed,
            "dead_zone_passes": dead,
            "share": percent(dead, passed),
        }
    return table


def dead_zone_passes(results: Sequence[ResultRecord]) -> dict[str, DeadZoneRow]:
    """Table 19 per relation category and `total`.

    Args:
        results: one model's records.

    Returns:
        Per category and `total`: `evaluable` (negated relation statements with both objects present,
        i.e. satisfied or failed for a reason other than a missing object), `passed`,
        `dead_zone_passes` (passed only because no predicate was emitted) and `share` (% of passes
        that were dead-zone passes).

    Raises:
        ValueError: a scored record whose prompt id is not a NegT2IBench id.
    """
    return _dead_zone_table(negated_relation_counts(record_facts(results)))


# ---------------------------------------------------------------------------------------------
# Matched-group polarity deltas
# ---------------------------------------------------------------------------------------------


def matched_group_deltas(
    results: Sequence[ResultRecord],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    facts: Facts | None = None,
) -> dict[str, dict[str, MatchedDelta]]:
    """Negated-minus-positive image accuracy on matched groups, for one model's results.

    Prompt k of 1:0 is paired with prompt k of 0:1 (likewise 2:0/0:2 and 2:1/1:2) in the same
    category; a group counts when both prompts have a scored image.

    Args:
        results: one model's records.
        n_resamples: bootstrap resamples.
        seed: the bootstrap's seed.
        confidence: the intervals' confidence level.
        facts: the records' facts when already walked (`record_facts`).

    Returns:
        Per category (and `all`) and per pair (and `all`): `groups`, `positive` and `negated` mean
        accuracies, `delta` (pp) and a percentile bootstrap interval `ci_low`, `ci_high` over groups.

    Raises:
        ValueError: a scored record whose prompt id is not a NegT2IBench id.
    """
    total_array, passed_array = by_prompt(facts or record_facts(results))
    total, passed = total_array.tolist(), passed_array.tolist()  # [category][setting][k]
    setting_index = {label: i for i, label in enumerate(SETTING_LABELS)}

    def accuracy(c: int, setting: str, k: int) -> float | None:
        s = setting_index[setting]
        return percent(passed[c][s][k], total[c][s][k]) if total[c][s][k] else None

    sides: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for c, category in enumerate(TABLE3_CATEGORIES):
        for positive, negated in MATCHED_PAIRS:
            pair = f"{positive} vs {negated}"
            for k in range(PROMPTS_PER_SETTING):
                pos_acc = accuracy(c, positive, k)
                neg_acc = accuracy(c, negated, k)
                if pos_acc is None or neg_acc is None:
                    continue
                for bucket in ((category, pair), (category, ALL), (ALL, pair), (ALL, ALL)):
                    sides[bucket].append((pos_acc, neg_acc))
    pairs = tuple(f"{p} vs {n}" for p, n in MATCHED_PAIRS) + (ALL,)
    table: dict[str, dict[str, MatchedDelta]] = {}
    for category in TABLE3_CATEGORIES + (ALL,):
        table[category] = {
            pair: _matched_delta(sides.get((category, pair), []), n_resamples, seed, confidence) for pair in pairs
        }
    return table


def _matched_delta(sides: list[tuple[float, float]], n_resamples: int, seed: int, confidence: float) -> MatchedDelta:
    """One bucket's `groups`, mean `positive` and `negated` accuracies, `delta` and its bootstrap interval."""
    values = [neg_acc - pos_acc for pos_acc, neg_acc in sides]
    low, high = mean_interval(values, resamples=n_resamples, seed=seed, confidence=confidence)
    return {
        "groups": len(values),
        "positive": nanmean(p for p, _ in sides),
        "negated": nanmean(n for _, n in sides),
        "delta": nanmean(values),
        "ci_low": low,
        "ci_high": high,
    }


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """All tables for one or many models. Per-model dicts are keyed by model key; the failure-cause
    and dead-zone tables also carry `POOLED` (all models together, as the paper's Figure 3 and
    Table 19 are)."""

    models: tuple[str, ...]
    table3: dict[str, Table3Numbers]
    statement_accuracy: dict[str, dict[str, StatementAccuracy]]
    failure_causes: dict[str, FailureCauses]
    dead_zone: dict[str, dict[str, DeadZoneRow]]
    matched_deltas: dict[str, dict[str, dict[str, MatchedDelta]]]
    provenance: dict[str, dict[str, str]]
    options: dict[str, Any] = field(default_factory=dict)
    # What was read and left out (`inputs.ReportInputs.to_dict()`); empty when built from records.
    inputs: dict[str, Any] = field(default_factory=dict)
    ots: dict[str, OtsStatistics] = field(default_factory=dict)  # the order-to-space diagnostic (`ots`)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (NaN becomes None), as `report.json` holds it.

        Returns:
            Every table of the report by name, `inputs` only when the report has them.
        """
        return json_ready(
            {
                "models": list(self.models),
                "options": self.options,
                "provenance": self.provenance,
                "table3": self.table3,
                "statement_accuracy": self.statement_accuracy,
                "failure_causes": self.failure_causes,
                "dead_zone": self.dead_zone,
                "matched_deltas": self.matched_deltas,
                "ots": self.ots,
                **({"inputs": self.inputs} if self.inputs else {}),
            }
        )


def build_report(
    results: Sequence[ResultRecord],
    n_resamples: int = 1000,
    seed: int = 0,
    expected_samples: int = SAMPLES_PER_PROMPT,
    inputs: dict[str, Any] | None = None,
    prompts: PromptIndex | None = None,
) -> Report:
    """Every table for every model in `results` (grouped by `model_key`).

    Result files are read with `evaluator.report.read_report_inputs`, which leaves out and names
    what is not reportable, and whose `to_dict()` is passed as `inputs` so the report says what it
    left out.

    Args:
        results: reportable result records of one or more models.
        n_resamples: bootstrap resamples of every interval.
        seed: the bootstrap's seed.
        expected_samples: images per prompt a complete run has.
        inputs: what was read and left out (`ReportInputs.to_dict()`), said in the report.
        prompts: the prompts giving the order-to-space diagnostic each relation statement's objects
            and side (default: the built-in corpus).

    Returns:
        The report: Table 3, statement accuracy, failure causes, dead zone, matched deltas, OTS and
        provenance per model (failure causes and dead zone pooled too when there are several).

    Raises:
        ValueError: no results, or a record that is not reportable (the message names the first).
    """
    grouped = group_by_model(results)
    if not grouped:
        raise ValueError("no results to report")
    facts = {model: record_facts(records) for model, records in grouped.items()}  # each model's records walked once
    failure_counts = {model: _failure_counts(facts[model]) for model in grouped}
    relation_counts = {model: negated_relation_counts(facts[model]) for model in grouped}
    failures = {model: _failure_table(*failure_counts[model]) for model in grouped}
    dead_zone = {model: _dead_zone_table(relation_counts[model]) for model in grouped}
    if len(grouped) > 1:  # all models' statements together: the sums of their counts
        failures[POOLED] = _failure_table(
            sum(counts[0] for counts in failure_counts.values()), sum(counts[1] for counts in failure_counts.values())
        )
        dead_zone[POOLED] = _dead_zone_table(sum(relation_counts.values()))
    return Report(
        models=tuple(grouped),
        table3={model: _table3_one(records, expected_samples, facts[model]) for model, records in grouped.items()},
        statement_accuracy={model: statement_accuracy(records, facts[model]) for model, records in grouped.items()},
        failure_causes=failures,
        dead_zone=dead_zone,
        matched_deltas={
            model: matched_group_deltas(records, n_resamples, seed, facts=facts[model])
            for model, records in grouped.items()
        },
        provenance={model: model_provenance(records) for model, records in grouped.items()},
        options={"bootstrap": n_resamples, "seed": seed, "expected_samples": expected_samples, "confidence": 0.95},
        inputs=dict(inputs or {}),
        ots=ots_by_model(grouped, prompts or builtin_prompts(), resamples=n_resamples, seed=seed),
    )
