"""Aggregation: result records → the numbers of the paper's tables (Table 3, Figure 3, Table 19).

Pure functions: they take `ResultRecord`s and return plain dicts of numbers, with no file or
model access; `build_report` collects them for every model into a `Report`. The conventions
(percentages, NaN for an empty cell, coverage) are in `evaluator.report.keys`. Tables, files
and plots are made from a `Report` by `evaluator.report.tables`, `.document` and `.plots`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dataset_builder.records import PromptIndex
from dataset_builder.vocabulary import CATEGORIES, PROMPTS_PER_SETTING, RELATION_CATEGORIES, SAMPLES_PER_PROMPT
from evaluator.results import CAUSES, ResultRecord
from negt2ibench.core.bootstrap import mean_interval
from negt2ibench.core.strict_json import json_ready

from .keys import (
    ALL,
    MATCHED_PAIRS,
    MISSING_CAUSES,
    POOLED,
    SETTING_LABELS,
    TABLE3_CATEGORIES,
    expected_images,
    group_by_model,
    model_provenance,
    nanmean,
    parse_prompt_id,
    percent,
    scored_only,
)
from .ots import builtin_prompts, ots_by_model

# ---------------------------------------------------------------------------------------------
# Table 3: image accuracy by setting, by category, overall; coverage
# ---------------------------------------------------------------------------------------------


def _table3_one(records: Sequence[ResultRecord], expected_samples: int) -> dict[str, Any]:
    passed: Counter[tuple[str, str]] = Counter()  # (category, setting)
    total: Counter[tuple[str, str]] = Counter()
    for record in records:
        if record.sample_index < 0 or record.sample_index >= expected_samples:
            raise ValueError(
                f"model {record.model_key!r}, prompt {record.prompt_id!r}: sample_index {record.sample_index} "
                f"is outside 0–{expected_samples - 1} (set the expected samples per prompt)"
            )
    scored = scored_only(records)
    for record in scored:
        key = parse_prompt_id(record.prompt_id)
        total[key.category, key.setting] += 1
        passed[key.category, key.setting] += int(record.passed)

    def setting_accuracy(setting: str) -> float:
        return percent(sum(passed[c, setting] for c in CATEGORIES), sum(total[c, setting] for c in CATEGORIES))

    settings = {label: setting_accuracy(label) for label in SETTING_LABELS}
    categories = {
        category: nanmean(percent(passed[category, s], total[category, s]) for s in SETTING_LABELS)
        for category in TABLE3_CATEGORIES
    }
    expected = expected_images(expected_samples)
    images = len(scored)
    return {
        "settings": settings,
        "categories": categories,
        "overall": percent(sum(passed.values()), images),
        "polarity_gap": settings["0:1"] - settings["1:0"],
        "coverage": percent(images, expected),
        "images": images,
        "passed": sum(passed.values()),
        "errors": len(records) - images,
        "expected_images": expected,
        "complete": images == expected,
    }


def table3(results: Sequence[ResultRecord], expected_samples: int = SAMPLES_PER_PROMPT) -> dict[str, dict[str, Any]]:
    """Table 3 per model: accuracy (% of scored images passed) per setting (1:0 … 2:2, all
    categories pooled), per category (mean of its 8 settings' accuracies), overall (over all scored
    images), `polarity_gap` = acc(0:1) − acc(1:0), `coverage` = scored images / (4,800 × samples),
    `images`, `passed`, `errors`, `expected_images` and `complete`."""
    return {model: _table3_one(records, expected_samples) for model, records in group_by_model(results).items()}


# ---------------------------------------------------------------------------------------------
# Statement-level tables
# ---------------------------------------------------------------------------------------------


def statement_accuracy(results: Sequence[ResultRecord]) -> dict[str, dict[str, float]]:
    """% of statements satisfied, by category (and `all`) × polarity, over scored images:
    `{category: {"positive": %, "negated": %, "positive_n": count, "negated_n": count}}`."""
    satisfied: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    for record in scored_only(results):
        category = parse_prompt_id(record.prompt_id).category
        for statement in record.statements:
            for bucket in (category, ALL):
                total[bucket, statement.polarity] += 1
                satisfied[bucket, statement.polarity] += int(statement.satisfied)
    table: dict[str, dict[str, float]] = {}
    for bucket in TABLE3_CATEGORIES + (ALL,):
        row: dict[str, float] = {}
        for polarity in ("positive", "negated"):
            row[polarity] = percent(satisfied[bucket, polarity], total[bucket, polarity])
            row[f"{polarity}_n"] = total[bucket, polarity]
        table[bucket] = row
    return table


def _failed_causes(record: ResultRecord) -> Iterable[str]:
    for statement in record.statements:
        if statement.satisfied:
            continue
        if statement.cause is None:
            raise ValueError(
                f"model {record.model_key!r}, prompt {record.prompt_id!r}, sample {record.sample_index}: "
                f"statement {statement.index} failed without a cause"
            )
        yield statement.cause


def failure_causes(results: Sequence[ResultRecord]) -> dict[str, Any]:
    """Figure 3: every failed statement of a scored image counted once under its cause.

    Returns `by_setting` and `by_category` ({bucket: {cause: count, "failed": total}}), the total
    `failed`, and `forbidden_share`: % of failed statements whose cause is `forbidden_rendered`,
    overall (`all`) and per category."""
    by_setting: dict[str, Counter[str]] = {label: Counter() for label in SETTING_LABELS}
    by_category: dict[str, Counter[str]] = {category: Counter() for category in TABLE3_CATEGORIES}
    for record in scored_only(results):
        key = parse_prompt_id(record.prompt_id)
        for cause in _failed_causes(record):
            by_setting[key.setting][cause] += 1
            by_category[key.category][cause] += 1

    def as_table(counters: dict[str, Counter[str]]) -> dict[str, dict[str, int]]:
        return {
            bucket: {**{cause: counts[cause] for cause in CAUSES}, "failed": sum(counts.values())}
            for bucket, counts in counters.items()
        }

    categories = as_table(by_category)
    failed = sum(row["failed"] for row in categories.values())
    forbidden = sum(row["forbidden_rendered"] for row in categories.values())
    share = {ALL: percent(forbidden, failed)}
    share.update({c: percent(row["forbidden_rendered"], row["failed"]) for c, row in categories.items()})
    return {
        "by_setting": as_table(by_setting),
        "by_category": categories,
        "failed": failed,
        "forbidden_share": share,
    }


def dead_zone_passes(results: Sequence[ResultRecord]) -> dict[str, dict[str, float]]:
    """Table 19 per relation category and `total`: `evaluable` (negated relation statements with
    both objects present, i.e. satisfied or failed for a reason other than a missing object),
    `passed`, `dead_zone_passes` (passed only because no predicate was emitted) and `share`
    (% of passes that were dead-zone passes)."""
    counts: dict[str, Counter[str]] = {category: Counter() for category in RELATION_CATEGORIES}
    for record in scored_only(results):
        category = parse_prompt_id(record.prompt_id).category
        if category not in counts:
            continue
        for statement in record.statements:
            if statement.polarity != "negated":
                continue
            if not statement.satisfied and statement.cause in MISSING_CAUSES:
                continue
            counts[category]["evaluable"] += 1
            if statement.satisfied:
                counts[category]["passed"] += 1
                counts[category]["dead_zone_passes"] += int(statement.dead_zone_pass)
    table: dict[str, dict[str, float]] = {}
    order = ("depth", "directional", "comparative", "proximity")  # Table 19's row order
    for bucket in order + ("total",):
        rows = [counts[bucket]] if bucket != "total" else list(counts.values())
        evaluable = sum(row["evaluable"] for row in rows)
        passed = sum(row["passed"] for row in rows)
        dead = sum(row["dead_zone_passes"] for row in rows)
        table[bucket] = {
            "evaluable": evaluable,
            "passed": passed,
            "dead_zone_passes": dead,
            "share": percent(dead, passed),
        }
    return table


# ---------------------------------------------------------------------------------------------
# Matched-group polarity deltas
# ---------------------------------------------------------------------------------------------


def _prompt_accuracies(records: Sequence[ResultRecord]) -> dict[tuple[str, str, int], float]:
    """% of scored samples passed per prompt, keyed by (category, setting, k)."""
    passed: Counter[tuple[str, str, int]] = Counter()
    total: Counter[tuple[str, str, int]] = Counter()
    for record in scored_only(records):
        key = parse_prompt_id(record.prompt_id)
        total[key.category, key.setting, key.k] += 1
        passed[key.category, key.setting, key.k] += int(record.passed)
    return {prompt: percent(passed[prompt], total[prompt]) for prompt in total}


def matched_group_deltas(
    results: Sequence[ResultRecord], n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, dict[str, dict[str, float]]]:
    """Negated-minus-positive image accuracy on matched groups, for one model's results.

    Prompt k of 1:0 is paired with prompt k of 0:1 (likewise 2:0/0:2 and 2:1/1:2) in the same
    category; a group counts when both prompts have a scored image. Per category (and `all`) and
    per pair (and `all`): `groups`, `positive` and `negated` mean accuracies, `delta` (pp) and a
    percentile bootstrap interval `ci_low`, `ci_high` over groups."""
    accuracy = _prompt_accuracies(results)
    deltas: dict[tuple[str, str], list[float]] = defaultdict(list)
    sides: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for category in TABLE3_CATEGORIES:
        for positive, negated in MATCHED_PAIRS:
            pair = f"{positive} vs {negated}"
            for k in range(PROMPTS_PER_SETTING):
                pos_acc = accuracy.get((category, positive, k))
                neg_acc = accuracy.get((category, negated, k))
                if pos_acc is None or neg_acc is None:
                    continue
                for bucket in ((category, pair), (category, ALL), (ALL, pair), (ALL, ALL)):
                    deltas[bucket].append(neg_acc - pos_acc)
                    sides[bucket].append((pos_acc, neg_acc))
    pairs = tuple(f"{p} vs {n}" for p, n in MATCHED_PAIRS) + (ALL,)
    table: dict[str, dict[str, dict[str, float]]] = {}
    for category in TABLE3_CATEGORIES + (ALL,):
        table[category] = {}
        for pair in pairs:
            values = deltas.get((category, pair), [])
            low, high = mean_interval(values, resamples=n_resamples, seed=seed, confidence=confidence)
            table[category][pair] = {
                "groups": len(values),
                "positive": nanmean(p for p, _ in sides.get((category, pair), [])),
                "negated": nanmean(n for _, n in sides.get((category, pair), [])),
                "delta": nanmean(values),
                "ci_low": low,
                "ci_high": high,
            }
    return table


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """All tables for one or many models. Per-model dicts are keyed by model key; the failure-cause
    and dead-zone tables also carry `POOLED` (all models together, as the paper's Figure 3 and
    Table 19 are)."""

    models: tuple[str, ...]
    table3: dict[str, dict[str, Any]]
    statement_accuracy: dict[str, dict[str, dict[str, float]]]
    failure_causes: dict[str, dict[str, Any]]
    dead_zone: dict[str, dict[str, dict[str, float]]]
    matched_deltas: dict[str, dict[str, dict[str, dict[str, float]]]]
    provenance: dict[str, dict[str, str]]
    options: dict[str, Any] = field(default_factory=dict)
    # What was read and left out (`inputs.ReportInputs.to_dict()`); empty when built from records.
    inputs: dict[str, Any] = field(default_factory=dict)
    ots: dict[str, dict[str, Any]] = field(default_factory=dict)  # the order-to-space diagnostic (`ots`)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (NaN becomes None)."""
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

    `results` must be reportable (a ValueError names the first record that is not); result files
    are read with `evaluator.report.read_report_inputs`, which leaves out and names what is not,
    and whose `to_dict()` is passed as `inputs` so the report says what it left out. `prompts` (default:
    the built-in corpus) gives the order-to-space diagnostic each relation statement's objects and side."""
    grouped = group_by_model(results)
    if not grouped:
        raise ValueError("no results to report")
    every = [record for records in grouped.values() for record in records]
    failures = {model: failure_causes(records) for model, records in grouped.items()}
    dead_zone = {model: dead_zone_passes(records) for model, records in grouped.items()}
    if len(grouped) > 1:
        failures[POOLED] = failure_causes(every)
        dead_zone[POOLED] = dead_zone_passes(every)
    return Report(
        models=tuple(grouped),
        table3={model: _table3_one(records, expected_samples) for model, records in grouped.items()},
        statement_accuracy={model: statement_accuracy(records) for model, records in grouped.items()},
        failure_causes=failures,
        dead_zone=dead_zone,
        matched_deltas={model: matched_group_deltas(records, n_resamples, seed) for model, records in grouped.items()},
        provenance={model: model_provenance(records) for model, records in grouped.items()},
        options={"bootstrap": n_resamples, "seed": seed, "expected_samples": expected_samples, "confidence": 0.95},
        inputs=dict(inputs or {}),
        ots=ots_by_model(grouped, prompts or builtin_prompts(), resamples=n_resamples, seed=seed),
    )
