"""One model's result records as integer arrays, made in one pass: what the report's tables count.

Every table of `aggregate` is a count over the scored records (by category, setting, prompt) or
over their statements (by category, setting, polarity, cause). Walking 19,200 pydantic records a
model once per table cost most of a report's time, so `record_facts` walks them once, and the
tables are `np.bincount`s of these arrays. Counts leave here as Python ints, so the percentages
computed from them are the same floats as before, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dataset_builder.vocabulary import PROMPTS_PER_SETTING
from evaluator.results import CAUSES, ResultRecord

from .keys import MISSING_CAUSES, SETTING_LABELS, TABLE3_CATEGORIES, parse_prompt_id

CATEGORY_INDEX = {category: i for i, category in enumerate(TABLE3_CATEGORIES)}
SETTING_INDEX = {setting: i for i, setting in enumerate(SETTING_LABELS)}
CAUSE_INDEX = {cause: i for i, cause in enumerate(CAUSES)}
NO_CAUSE = -1
_MISSING = tuple(CAUSE_INDEX[cause] for cause in MISSING_CAUSES)


@dataclass(frozen=True)
class Facts:
    """The scored records of some results (in their order) and their statements, as arrays.

    Per scored record: `category`, `setting` (indices into TABLE3_CATEGORIES / SETTING_LABELS),
    `k` (the prompt's number) and `passed`. Per statement of a scored record: `record` (its
    record's position in `scored`), `index` (the statement's own index), its record's `s_category`
    and `s_setting`, `negated`, `satisfied`, `cause` (index into CAUSES, NO_CAUSE when None) and
    `dead_zone`.
    """

    scored: list[ResultRecord]
    category: np.ndarray
    setting: np.ndarray
    k: np.ndarray
    passed: np.ndarray
    record: np.ndarray
    index: np.ndarray
    s_category: np.ndarray
    s_setting: np.ndarray
    negated: np.ndarray
    satisfied: np.ndarray
    cause: np.ndarray
    dead_zone: np.ndarray


def record_facts(records: Iterable[ResultRecord]) -> Facts:
    """The facts of RECORDS' scored records (error rows left out); a prompt id that is not a
    NegT2IBench id is a ValueError (`parse_prompt_id`)."""
    scored: list[ResultRecord] = []
    per_record: list[tuple[int, int, int, bool]] = []
    per_statement: list[tuple[int, int, int, int, bool, bool, int, bool]] = []
    places: dict[str, tuple[int, int, int]] = {}
    causes: dict[str | None, int] = {None: NO_CAUSE}
    causes.update(CAUSE_INDEX)
    for record in records:
        if record.error is not None:
            continue
        place = places.get(record.prompt_id)
        if place is None:
            key = parse_prompt_id(record.prompt_id)
            place = places[record.prompt_id] = (CATEGORY_INDEX[key.category], SETTING_INDEX[key.setting], key.k)
        category, setting, _ = place
        position = len(scored)
        scored.append(record)
        per_record.append((*place, record.passed))
        per_statement.extend(
            (
                position,
                s.index,
                category,
                setting,
                s.polarity == "negated",
                s.satisfied,
                causes[s.cause],
                s.dead_zone_pass,
            )
            for s in record.statements
        )
    records_array = np.array(per_record, dtype=np.int64).reshape(-1, 4)
    statements = np.array(per_statement, dtype=np.int64).reshape(-1, 8)
    return Facts(
        scored=scored,
        category=records_array[:, 0],
        setting=records_array[:, 1],
        k=records_array[:, 2],
        passed=records_array[:, 3].astype(bool),
        record=statements[:, 0],
        index=statements[:, 1],
        s_category=statements[:, 2],
        s_setting=statements[:, 3],
        negated=statements[:, 4].astype(bool),
        satisfied=statements[:, 5].astype(bool),
        cause=statements[:, 6],
        dead_zone=statements[:, 7].astype(bool),
    )


def counts(shape: tuple[int, ...], *indices: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """How many entries fall in each cell of an array of SHAPE, the cell given by INDICES (one array
    per axis), counting only where WHERE holds."""
    if where is not None:
        indices = tuple(index[where] for index in indices)
    flat = np.ravel_multi_index(indices, shape) if indices[0].size else np.zeros(0, dtype=np.int64)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)


def by_category_and_setting(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """(scored images, passed images), each categories × settings."""
    shape = (len(TABLE3_CATEGORIES), len(SETTING_LABELS))
    return counts(shape, facts.category, facts.setting), counts(
        shape, facts.category, facts.setting, where=facts.passed
    )


def by_prompt(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """(scored images, passed images), each categories × settings × prompt numbers."""
    shape = (len(TABLE3_CATEGORIES), len(SETTING_LABELS), PROMPTS_PER_SETTING)
    passed = counts(shape, facts.category, facts.setting, facts.k, where=facts.passed)
    return counts(shape, facts.category, facts.setting, facts.k), passed


def first_failed_without_cause(facts: Facts) -> int | None:
    """The position of the first statement that failed without a cause, or None."""
    found = np.flatnonzero(~facts.satisfied & (facts.cause == NO_CAUSE))
    return int(found[0]) if found.size else None


def failed_by_cause(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """Failed statements (with a cause) counted settings × causes and categories × causes."""
    failed = ~facts.satisfied & (facts.cause != NO_CAUSE)
    return (
        counts((len(SETTING_LABELS), len(CAUSES)), facts.s_setting, facts.cause, where=failed),
        counts((len(TABLE3_CATEGORIES), len(CAUSES)), facts.s_category, facts.cause, where=failed),
    )


def negated_relation_counts(facts: Facts) -> np.ndarray:
    """Per category: (evaluable, passed, dead-zone passes) of negated statements, categories × 3;
    evaluable = satisfied, or failed for a reason other than a missing object."""
    missing = np.isin(facts.cause, _MISSING)
    evaluable = facts.negated & (facts.satisfied | ~missing)
    shape = (len(TABLE3_CATEGORIES),)
    return np.stack(
        [
            counts(shape, facts.s_category, where=evaluable),
            counts(shape, facts.s_category, where=evaluable & facts.satisfied),
            counts(shape, facts.s_category, where=evaluable & facts.satisfied & facts.dead_zone),
        ],
        axis=1,
    )


def statement_counts(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """(statements, satisfied statements), each categories × polarity (positive, negated)."""
    shape = (len(TABLE3_CATEGORIES), 2)
    polarity = facts.negated.astype(np.int64)
    return counts(shape, facts.s_category, polarity), counts(shape, facts.s_category, polarity, where=facts.satisfied)
