"""Prompt ids, the report's constants, and the grouping and checking of result records.

Conventions used by every table of the report:
- Accuracies, shares and coverage are percentages (0–100); deltas are percentage points.
  A cell with nothing to average is NaN (JSON `null`, empty CSV cell, `–` in Markdown).
- An image with `error` set was not scored: it is left out of every accuracy and lowers coverage.
- Category, setting, load and matched group come from the prompt id
  (`{category}_pos{P}_neg{N}_{k:03d}`, see `parse_prompt_id`).
- A model whose coverage is below 100% is flagged `complete: False`; its accuracies are over the
  images it has, never presented as a full-benchmark number.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dataset_builder.vocabulary import (
    CATEGORIES,
    PROMPTS_PER_SETTING,
    SAMPLES_PER_PROMPT,
    SETTINGS,
    kind_of,
    setting_label,
)
from evaluator.results import ResultRecord, is_error_row

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
    """Split `{category}_pos{P}_neg{N}_{k:03d}` into its parts.

    Args:
        prompt_id: a prompt id.

    Returns:
        Its category, numbers of positive and negated statements, and prompt number.

    Raises:
        ValueError: not a NegT2IBench id (another form, an unknown category or setting, a prompt
            number out of range).
    """
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
    """Images in a complete run: 4,800 prompts × samples per prompt.

    Args:
        expected_samples: images per prompt.

    Returns:
        The number of images.
    """
    return len(CATEGORIES) * len(SETTINGS) * PROMPTS_PER_SETTING * expected_samples


def percent(part: float, whole: float) -> float:
    """PART as a percentage of WHOLE.

    Args:
        part: the count of what is measured.
        whole: the count it is a share of.

    Returns:
        100 · part / whole; NaN when WHOLE is 0 (an empty cell).
    """
    return 100.0 * part / whole if whole else math.nan


def nanmean(values: Iterable[float]) -> float:
    """The mean of the values that are not NaN.

    Args:
        values: floats, NaN for an empty cell.

    Returns:
        Their mean; NaN when none is a number.
    """
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
        if previous is None or (is_error_row(previous) and not is_error_row(record)):
            chosen[record.key] = record
        elif not is_error_row(previous) and not is_error_row(record) and previous != record:
            model, prompt_id, sample = record.key
            raise ValueError(
                f"two different results for model {model!r}, prompt {prompt_id!r}, sample {sample}: "
                f"pass each image's result once (was the same run given twice with different configs?)"
            )
    return list(chosen.values())


def model_provenance(records: Sequence[ResultRecord]) -> dict[str, str]:
    """The one evaluator version and config hash behind one model's results.

    Args:
        records: one model's records.

    Returns:
        `{"evaluator_version": ..., "config_hash": ...}`.

    Raises:
        ValueError: no records, or records of mixed versions or configurations.
    """
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
    """Results per model key (sorted), duplicates resolved, ids and provenance checked.

    Args:
        results: result records of one or more models.

    Returns:
        Each model's records, one per image.

    Raises:
        ValueError: a prompt id that is not a NegT2IBench id, or a model's records of mixed
            provenance.
    """
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


def scored_only(records: Iterable[ResultRecord]) -> list[ResultRecord]:
    """The records that were scored (error rows left out).

    Args:
        records: result records.

    Returns:
        Those that are not error rows, in order.
    """
    return [record for record in records if not is_error_row(record)]
