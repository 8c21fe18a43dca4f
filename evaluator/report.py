"""Aggregate result records into the paper's tables (paper Table 3, Figure 3, Table 19).

The core functions are pure: they take `ResultRecord`s and return plain dicts of numbers, with no
file or model access. `write_report` at the bottom is the thin shell that writes Markdown, CSV,
JSON and PNG files.

Conventions used by every table:
- Accuracies, shares and coverage are percentages (0–100); deltas are percentage points.
  A cell with nothing to average is NaN (JSON `null`, empty CSV cell, `–` in Markdown).
- An image with `error` set was not scored: it is left out of every accuracy and lowers coverage.
- Category, setting, load and matched group come from the prompt id
  (`{category}_pos{P}_neg{N}_{k:03d}`, see `parse_prompt_id`).
- A model whose coverage is below 100% is flagged `complete: False`; its accuracies are over the
  images it has, never presented as a full-benchmark number.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dataset_builder.vocabulary import (
    CATEGORIES,
    PROMPTS_PER_SETTING,
    RELATION_CATEGORIES,
    SAMPLES_PER_PROMPT,
    SETTINGS,
    kind_of,
    setting_label,
)

from .results import CAUSES, ResultRecord

# Table 3's column order: settings by load, then categories as the paper lists them.
SETTING_LABELS: tuple[str, ...] = tuple(setting_label(p, n) for p, n in SETTINGS)
TABLE3_CATEGORIES: tuple[str, ...] = ("color", "material", "comparative", "depth", "directional", "proximity")
CATEGORY_TITLES: dict[str, str] = {
    "color": "Color",
    "material": "Material",
    "comparative": "Compar.",
    "depth": "Depth",
    "directional": "Direct.",
    "proximity": "Proxim.",
}
LEADERBOARD_COLUMNS: tuple[str, ...] = (
    ("model",) + SETTING_LABELS + TABLE3_CATEGORIES + ("overall", "polarity_gap", "coverage", "images")
)
# Matched groups: prompt k of the positive setting and of the negated setting share objects and
# predicates and differ only in polarity (docs/corpus.md). 1:1 has no mirror and is not paired.
MATCHED_PAIRS: tuple[tuple[str, str], ...] = (("1:0", "0:1"), ("2:0", "0:2"), ("2:1", "1:2"))
POOLED = "(all models)"  # cannot collide with a model key, which matches [a-z0-9_]+
ALL = "all"
MISSING_CAUSES = ("subject_missing", "target_missing")

_PROMPT_ID = re.compile(r"^(?P<category>[a-z]+)_pos(?P<pos>\d+)_neg(?P<neg>\d+)_(?P<k>\d{3})$")


@dataclass(frozen=True)
class PromptKey:
    """What a prompt id says about its prompt."""

    category: str
    num_pos: int
    num_neg: int
    k: int  # matched-group number within (category, load)

    @property
    def setting(self) -> str:
        return setting_label(self.num_pos, self.num_neg)

    @property
    def load(self) -> int:
        return self.num_pos + self.num_neg

    @property
    def kind(self) -> str:
        return kind_of(self.category)


@functools.lru_cache(maxsize=8192)  # 4,800 ids, parsed once per result otherwise
def parse_prompt_id(prompt_id: str) -> PromptKey:
    """Split `{category}_pos{P}_neg{N}_{k:03d}` into its parts; anything else is a ValueError."""
    match = _PROMPT_ID.match(prompt_id)
    if not match:
        raise ValueError(
            f"prompt id {prompt_id!r} is not a NegT2IBench id; expected '{{category}}_pos{{P}}_neg{{N}}_{{k:03d}}', "
            f"e.g. 'color_pos1_neg0_000'"
        )
    key = PromptKey(match["category"], int(match["pos"]), int(match["neg"]), int(match["k"]))
    if key.category not in CATEGORIES:
        raise ValueError(
            f"prompt id {prompt_id!r}: unknown category {key.category!r} (expected one of {', '.join(CATEGORIES)})"
        )
    if (key.num_pos, key.num_neg) not in SETTINGS:
        raise ValueError(
            f"prompt id {prompt_id!r}: unknown setting {key.setting} (expected one of {', '.join(SETTING_LABELS)})"
        )
    if key.k >= PROMPTS_PER_SETTING:
        raise ValueError(f"prompt id {prompt_id!r}: prompt number {key.k} is outside 000–{PROMPTS_PER_SETTING - 1:03d}")
    return key


def expected_images(expected_samples: int = SAMPLES_PER_PROMPT) -> int:
    """Images in a complete run: 4,800 prompts × samples per prompt."""
    return len(CATEGORIES) * len(SETTINGS) * PROMPTS_PER_SETTING * expected_samples


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else math.nan


def _nanmean(values: Iterable[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


# ---------------------------------------------------------------------------------------------
# Grouping and validation
# ---------------------------------------------------------------------------------------------


def _deduplicate(records: Sequence[ResultRecord]) -> list[ResultRecord]:
    """One record per image key. A scored record replaces an error record for the same image
    (a re-run fixed it); two scored records for one image are an error (double counting)."""
    chosen: dict[tuple[str, str, int], ResultRecord] = {}
    for record in records:
        previous = chosen.get(record.key)
        if previous is None or (previous.error is not None and record.error is None):
            chosen[record.key] = record
        elif previous.error is None and record.error is None and previous != record:
            model, prompt_id, sample = record.key
            raise ValueError(
                f"two different results for model {model!r}, prompt {prompt_id!r}, sample {sample}: "
                f"pass each image's result once (was the same run given twice with different configs?)"
            )
    return list(chosen.values())


def model_provenance(records: Sequence[ResultRecord]) -> dict[str, str]:
    """The one evaluator version and config hash behind one model's results; mixed ones are a ValueError."""
    if not records:
        raise ValueError("no results")
    provenance: dict[str, str] = {}
    for attribute in ("evaluator_version", "config_hash"):
        values = sorted({getattr(record, attribute) for record in records})
        if len(values) > 1:
            raise ValueError(
                f"model {records[0].model_key!r} mixes {attribute} values {', '.join(values)}: "
                f"its images were scored by different evaluators; re-score them with one configuration"
            )
        provenance[attribute] = values[0]
    return provenance


def group_by_model(results: Sequence[ResultRecord]) -> dict[str, list[ResultRecord]]:
    """Results per model key (sorted), duplicates resolved, ids and provenance checked."""
    grouped: dict[str, list[ResultRecord]] = defaultdict(list)
    for record in results:
        parse_prompt_id(record.prompt_id)
        grouped[record.model_key].append(record)
    out = {}
    for model in sorted(grouped):
        records = _deduplicate(grouped[model])
        model_provenance(records)
        out[model] = records
    return out


def _scored(records: Iterable[ResultRecord]) -> list[ResultRecord]:
    return [record for record in records if record.error is None]


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
    scored = _scored(records)
    for record in scored:
        key = parse_prompt_id(record.prompt_id)
        total[key.category, key.setting] += 1
        passed[key.category, key.setting] += int(record.passed)

    def setting_accuracy(setting: str) -> float:
        return _percent(sum(passed[c, setting] for c in CATEGORIES), sum(total[c, setting] for c in CATEGORIES))

    settings = {label: setting_accuracy(label) for label in SETTING_LABELS}
    categories = {
        category: _nanmean(_percent(passed[category, s], total[category, s]) for s in SETTING_LABELS)
        for category in TABLE3_CATEGORIES
    }
    expected = expected_images(expected_samples)
    images = len(scored)
    return {
        "settings": settings,
        "categories": categories,
        "overall": _percent(sum(passed.values()), images),
        "polarity_gap": settings["0:1"] - settings["1:0"],
        "coverage": _percent(images, expected),
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


def leaderboard_row(
    results: Sequence[ResultRecord], model_key: str, expected_samples: int = SAMPLES_PER_PROMPT
) -> dict[str, float | int | str]:
    """One flat leaderboard row (keys `LEADERBOARD_COLUMNS`) for `model_key`; other models' results are ignored."""
    own = [record for record in results if record.model_key == model_key]
    if not own:
        raise ValueError(f"no results for model {model_key!r}")
    table = table3(own, expected_samples)[model_key]
    row: dict[str, float | int | str] = {"model": model_key}
    row.update(table["settings"])
    row.update(table["categories"])
    row.update({key: table[key] for key in ("overall", "polarity_gap", "coverage", "images")})
    return row


# ---------------------------------------------------------------------------------------------
# Statement-level tables
# ---------------------------------------------------------------------------------------------


def statement_accuracy(results: Sequence[ResultRecord]) -> dict[str, dict[str, dict[str, float]]]:
    """% of statements satisfied, by category (and `all`) × polarity, over scored images:
    `{category: {"positive": %, "negated": %, "positive_n": count, "negated_n": count}}`."""
    satisfied: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    for record in _scored(results):
        category = parse_prompt_id(record.prompt_id).category
        for statement in record.statements:
            for bucket in (category, ALL):
                total[bucket, statement.polarity] += 1
                satisfied[bucket, statement.polarity] += int(statement.satisfied)
    table: dict[str, dict[str, float]] = {}
    for bucket in TABLE3_CATEGORIES + (ALL,):
        row: dict[str, float] = {}
        for polarity in ("positive", "negated"):
            row[polarity] = _percent(satisfied[bucket, polarity], total[bucket, polarity])
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
    for record in _scored(results):
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
    share = {ALL: _percent(forbidden, failed)}
    share.update({c: _percent(row["forbidden_rendered"], row["failed"]) for c, row in categories.items()})
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
    counts = {category: Counter() for category in RELATION_CATEGORIES}
    for record in _scored(results):
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
            "share": _percent(dead, passed),
        }
    return table


# ---------------------------------------------------------------------------------------------
# Matched-group polarity deltas
# ---------------------------------------------------------------------------------------------


def bootstrap_mean_interval(
    values: Sequence[float], n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean, resampling `values` with replacement.
    Deterministic for a fixed seed; NaNs when `values` is empty."""
    data = np.asarray(values, dtype=float)
    if data.size == 0 or n_resamples < 1:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 4_000_000 // data.size)  # bound memory: ≤ 4M drawn indices at a time
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        means[start:stop] = data[rng.integers(0, data.size, size=(stop - start, data.size))].mean(axis=1)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return (float(low), float(high))


def _prompt_accuracies(records: Sequence[ResultRecord]) -> dict[tuple[str, str, int], float]:
    """% of scored samples passed per prompt, keyed by (category, setting, k)."""
    passed: Counter[tuple[str, str, int]] = Counter()
    total: Counter[tuple[str, str, int]] = Counter()
    for record in _scored(records):
        key = parse_prompt_id(record.prompt_id)
        total[key.category, key.setting, key.k] += 1
        passed[key.category, key.setting, key.k] += int(record.passed)
    return {prompt: _percent(passed[prompt], total[prompt]) for prompt in total}


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
            low, high = bootstrap_mean_interval(values, n_resamples, seed, confidence)
            table[category][pair] = {
                "groups": len(values),
                "positive": _nanmean(p for p, _ in sides.get((category, pair), [])),
                "negated": _nanmean(n for _, n in sides.get((category, pair), [])),
                "delta": _nanmean(values),
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

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (NaN becomes None)."""
        return _json_ready(
            {
                "models": list(self.models),
                "options": self.options,
                "provenance": self.provenance,
                "table3": self.table3,
                "statement_accuracy": self.statement_accuracy,
                "failure_causes": self.failure_causes,
                "dead_zone": self.dead_zone,
                "matched_deltas": self.matched_deltas,
            }
        )


def build_report(
    results: Sequence[ResultRecord],
    n_resamples: int = 1000,
    seed: int = 0,
    expected_samples: int = SAMPLES_PER_PROMPT,
) -> Report:
    """Every table for every model in `results` (grouped by `model_key`)."""
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
    )


def _json_ready(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    return value


# ---------------------------------------------------------------------------------------------
# Rows and Markdown (pure: strings and lists)
# ---------------------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.1f}"
    return str(value)


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def table_rows(report: Report) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """Every table as (header, rows) of raw values: the shared source of the CSV and Markdown files."""
    tables: dict[str, tuple[list[str], list[list[Any]]]] = {}
    tables["table3"] = (
        list(LEADERBOARD_COLUMNS) + ["errors", "complete"],
        [
            [model]
            + [report.table3[model]["settings"][s] for s in SETTING_LABELS]
            + [report.table3[model]["categories"][c] for c in TABLE3_CATEGORIES]
            + [report.table3[model][k] for k in ("overall", "polarity_gap", "coverage", "images", "errors", "complete")]
            for model in report.models
        ],
    )
    tables["statement_accuracy"] = (
        ["model", "category", "positive", "negated", "positive_n", "negated_n"],
        [
            [model, category] + [row[k] for k in ("positive", "negated", "positive_n", "negated_n")]
            for model in report.models
            for category, row in report.statement_accuracy[model].items()
        ],
    )
    for axis in ("setting", "category"):
        tables[f"failure_causes_by_{axis}"] = (
            ["model", axis, *CAUSES, "failed"],
            [
                [model, bucket] + [row[cause] for cause in CAUSES] + [row["failed"]]
                for model, causes in report.failure_causes.items()
                for bucket, row in causes[f"by_{axis}"].items()
            ],
        )
    tables["forbidden_share"] = (
        ["model", *TABLE3_CATEGORIES, ALL],
        [
            [model] + [causes["forbidden_share"][c] for c in TABLE3_CATEGORIES + (ALL,)]
            for model, causes in report.failure_causes.items()
        ],
    )
    tables["dead_zone"] = (
        ["model", "category", "evaluable", "passed", "dead_zone_passes", "share"],
        [
            [model, category] + [row[k] for k in ("evaluable", "passed", "dead_zone_passes", "share")]
            for model, table in report.dead_zone.items()
            for category, row in table.items()
        ],
    )
    tables["matched_deltas"] = (
        ["model", "category", "pair", "groups", "positive", "negated", "delta", "ci_low", "ci_high"],
        [
            [model, category, pair] + [row[k] for k in ("groups", "positive", "negated", "delta", "ci_low", "ci_high")]
            for model in report.models
            for category, pairs in report.matched_deltas[model].items()
            for pair, row in pairs.items()
        ],
    )
    return tables


def table3_markdown(report: Report) -> str:
    """Table 3 in the paper's layout: models as rows, one decimal, incomplete models marked †."""
    header = [
        "Model",
        *SETTING_LABELS,
        *(CATEGORY_TITLES[c] for c in TABLE3_CATEGORIES),
        "Overall",
        "Gap 0:1−1:0",
        "Coverage",
    ]
    rows = []
    incomplete = []
    for model in report.models:
        table = report.table3[model]
        name = model if table["complete"] else f"{model} †"
        if not table["complete"]:
            incomplete.append(
                f"{model}: {table['images']:,} of {table['expected_images']:,} images scored ({table['coverage']:.1f}%)"
            )
        rows.append(
            [name]
            + [table["settings"][s] for s in SETTING_LABELS]
            + [table["categories"][c] for c in TABLE3_CATEGORIES]
            + [table["overall"], table["polarity_gap"], table["coverage"]]
        )
    text = (
        "Accuracy (% of images passed). Load 1: 1:0, 0:1 · load 2: 2:0, 1:1, 0:2 · load 3: 2:1, 1:2 · load 4: 2:2. "
        "Categories average their eight settings.\n\n" + _markdown_table(header, rows)
    )
    if incomplete:
        text += "\n\n† Incomplete, accuracies are over the scored images only: " + "; ".join(incomplete) + "."
    configs = {(p["evaluator_version"], p["config_hash"]) for p in report.provenance.values()}
    if len(configs) > 1:
        text += (
            "\n\nWarning: these models were scored with different evaluator versions or configurations "
            "(see Provenance); their numbers are not directly comparable."
        )
    return text


def report_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    parts = ["# NegT2IBench report", "", "## Table 3: image accuracy", "", table3_markdown(report), ""]

    parts += [
        "## Statement accuracy by polarity and category",
        "",
        "% of statements satisfied (positive / negated).",
        "",
    ]
    header = (
        ["Model"]
        + [f"{CATEGORY_TITLES[c]} {p}" for c in TABLE3_CATEGORIES for p in ("pos", "neg")]
        + ["All pos", "All neg"]
    )
    rows = [
        [model]
        + [report.statement_accuracy[model][c][p] for c in TABLE3_CATEGORIES + (ALL,) for p in ("positive", "negated")]
        for model in report.models
    ]
    parts += [_markdown_table(header, rows), ""]

    parts += [
        "## Failure causes (Figure 3)",
        "",
        "Each failed statement counted once under its cause; satisfied statements are not counted.",
        "",
    ]
    for axis, buckets in (("setting", SETTING_LABELS), ("category", TABLE3_CATEGORIES)):
        parts += [f"### By {axis}", ""]
        header = ["Model", axis.capitalize(), *CAUSES, "Failed"]
        rows = [
            [model, bucket]
            + [causes[f"by_{axis}"][bucket][c] for c in CAUSES]
            + [causes[f"by_{axis}"][bucket]["failed"]]
            for model, causes in report.failure_causes.items()
            for bucket in buckets
        ]
        parts += [_markdown_table(header, rows), ""]
    parts += ["### Share of failed statements that rendered the forbidden content (%)", ""]
    header = ["Model", *(CATEGORY_TITLES[c] for c in TABLE3_CATEGORIES), "All"]
    rows = [
        [model] + [causes["forbidden_share"][c] for c in TABLE3_CATEGORIES + (ALL,)]
        for model, causes in report.failure_causes.items()
    ]
    parts += [_markdown_table(header, rows), ""]

    parts += [
        "## Dead-zone passes among negated relations (Table 19)",
        "",
        "Evaluable: negated relation statements with both objects present. Share: dead-zone passes / passed.",
        "",
    ]
    header = ["Model", "Category", "Evaluable", "Passed", "Dead-zone passes", "Share of passes (%)"]
    rows = [
        [model, category.capitalize()] + [row[k] for k in ("evaluable", "passed", "dead_zone_passes", "share")]
        for model, table in report.dead_zone.items()
        for category, row in table.items()
    ]
    parts += [_markdown_table(header, rows), ""]

    parts += [
        "## Matched-group deltas (negated − positive)",
        "",
        f"Image accuracy of prompt k in the negated setting minus prompt k in the positive setting (same objects "
        f"and predicates), pooled over 1:0/0:1, 2:0/0:2 and 2:1/1:2; {report.options.get('bootstrap')} bootstrap "
        f"resamples over groups (seed {report.options.get('seed')}), 95% percentile interval, percentage points.",
        "",
    ]
    header = ["Model", "Category", "Groups", "Positive", "Negated", "Δ", "95% CI"]
    rows = []
    for model in report.models:
        for category in TABLE3_CATEGORIES + (ALL,):
            row = report.matched_deltas[model][category][ALL]
            interval = "–" if math.isnan(row["ci_low"]) else f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
            rows.append([model, category, row["groups"], row["positive"], row["negated"], row["delta"], interval])
    parts += [_markdown_table(header, rows), ""]

    parts += ["## Provenance", ""]
    parts += [
        _markdown_table(
            ["Model", "Evaluator version", "Config hash"],
            [[m, p["evaluator_version"], p["config_hash"]] for m, p in report.provenance.items()],
        ),
        "",
    ]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# The shell: files
# ---------------------------------------------------------------------------------------------


def _csv_cell(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return ""
    return value


def write_report(report: Report, out_dir: str | Path) -> list[Path]:
    """Write `report.md`, one CSV per table, `report.json` and the PNG plots into `out_dir`
    (created if needed). Returns the paths written."""
    from . import plots  # matplotlib only when files are written

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    markdown = out / "report.md"
    markdown.write_text(report_markdown(report) + "\n", encoding="utf-8")
    written.append(markdown)

    for name, (header, rows) in table_rows(report).items():
        path = out / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows([[_csv_cell(value) for value in row] for row in rows])
        written.append(path)

    data = out / "report.json"
    data.write_text(json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    written.append(data)

    written.append(plots.plot_accuracy_by_setting(report, out / "accuracy_by_setting.png"))
    written.append(plots.plot_statement_accuracy(report, out / "statement_accuracy.png"))
    written.append(plots.plot_failure_causes(report, out / "failure_causes.png"))
    return written
