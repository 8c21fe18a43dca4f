"""One model's result records as integer arrays, made in one pass: what the report's tables count.

Every table of `aggregate` is a count over the scored records (by category, setting, prompt) or
over their statements (by category, setting, polarity, cause). Walking 19,200 pydantic records a
model once per table cost most of a report's time, so `record_facts` walks them once, and the
tables are `np.bincount`s of these arrays. Counts leave here as Python ints, so the percentages
computed from them are the same floats as before, bit for bit.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dataset_builder.vocabulary import PROMPTS_PER_SETTING
from evaluator.results import CAUSES, ResultRecord, is_error_row

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


_RECORD_FIELDS = operator.attrgetter("prompt_id", "passed", "statements")
_STATEMENT_FIELDS = operator.attrgetter("index", "polarity", "satisfied", "cause", "dead_zone_pass")
_CAUSE_CODES: dict[str | None, int] = {None: NO_CAUSE}
_CAUSE_CODES.update(CAUSE_INDEX)


def record_facts(records: Iterable[ResultRecord]) -> Facts:
    """The facts of RECORDS' scored records (error rows left out).

    The fields are read by `attrgetter`s over all records, then all statements, at once (a Python
    loop per record took twice as long).

    Args:
        records: result records.

    Returns:
        The scored records and, as aligned arrays, each one's category, setting, prompt number and
        pass, and each of their statements' record, index, category, setting, polarity, satisfaction,
        cause and dead-zone flag.

    Raises:
        ValueError: a prompt id that is not a NegT2IBench id (`parse_prompt_id`).
    """
    scored = [record for record in records if not is_error_row(record)]
    prompt_ids, passed, statement_lists = zip(*map(_RECORD_FIELDS, scored), strict=True) if scored else ((), (), ())
    places: dict[str, tuple[int, int, int]] = {}
    for prompt_id in dict.fromkeys(prompt_ids):  # in order: the first id that is not one raises
        key = parse_prompt_id(prompt_id)
        places[prompt_id] = (CATEGORY_INDEX[key.category], SETTING_INDEX[key.setting], key.k)
    per_record = np.array([places[prompt_id] for prompt_id in prompt_ids], dtype=np.int64).reshape(-1, 3)
    statements = [statement for listed in statement_lists for statement in listed]
    fields = zip(*map(_STATEMENT_FIELDS, statements), strict=True) if statements else iter([()] * 5)
    index, polarity, satisfied, cause, dead_zone = fields
    record = np.repeat(np.arange(len(scored)), np.fromiter(map(len, statement_lists), np.int64, len(scored)))
    return Facts(
        scored=scored,
        category=per_record[:, 0],
        setting=per_record[:, 1],
        k=per_record[:, 2],
        passed=np.array(passed, dtype=bool),
        record=record,
        index=np.array(index, dtype=np.int64),
        s_category=per_record[record, 0],
        s_setting=per_record[record, 1],
        negated=np.fromiter(map("negated".__eq__, polarity), bool, len(statements)),
        satisfied=np.array(satisfied, dtype=bool),
        cause=np.fromiter(map(_CAUSE_CODES.__getitem__, cause), np.int64, len(statements)),
        dead_zone=np.array(dead_zone, dtype=bool),
    )


def counts(shape: tuple[int, ...], *indices: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """How many entries fall in each cell of an array of SHAPE.

    Args:
        shape: the counts' shape.
        *indices: the cell of each entry, one index array per axis.
        where: count only the entries where it holds.

    Returns:
        An int array of SHAPE.
    """
    if where is not None:
        indices = tuple(index[where] for index in indices)
    flat = np.ravel_multi_index(indices, shape) if indices[0].size else np.zeros(0, dtype=np.int64)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)


def by_category_and_setting(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """Scored and passed images, each categories × settings.

    Args:
        facts: one model's facts.

    Returns:
        (scored images, passed images).
    """
    shape = (len(TABLE3_CATEGORIES), len(SETTING_LABELS))
    return counts(shape, facts.category, facts.setting), counts(
        shape, facts.category, facts.setting, where=facts.passed
    )


def by_prompt(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """Scored and passed images, each categories × settings × prompt numbers.

    Args:
        facts: one model's facts.

    Returns:
        (scored images, passed images).
    """
    shape = (len(TABLE3_CATEGORIES), len(SETTING_LABELS), PROMPTS_PER_SETTING)
    passed = counts(shape, facts.category, facts.setting, facts.k, where=facts.passed)
    return counts(shape, facts.category, facts.setting, facts.k), passed


def first_failed_without_cause(facts: Facts) -> int | None:
    """The position of the first statement that failed without a cause.

    Args:
        facts: one model's facts.

    Returns:
        Its position among the statements, or None when every failed statement has a cause.
    """
    found = np.flatnonzero(~facts.satisfied & (facts.cause == NO_CAUSE))
    return int(found[0]) if found.size else None


def failed_by_cause(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """Failed statements (with a cause) counted settings × causes and categories × causes.

    Args:
        facts: one model's facts.

    Returns:
        (settings × causes, categories × causes).
    """
    failed = ~facts.satisfied & (facts.cause != NO_CAUSE)
    return (
        counts((len(SETTING_LABELS), len(CAUSES)), facts.s_setting, facts.cause, where=failed),
        counts((len(TABLE3_CATEGORIES), len(CAUSES)), facts.s_category, facts.cause, where=failed),
    )


def negated_relation_counts(facts: Facts) -> np.ndarray:
    """Per category: (evaluable, passed, dead-zone passes) of negated statements.

    Evaluable: satisfied, or failed for a reason other than a missing object.

    Args:
        facts: one model's facts.

    Returns:
        A categories × 3 int array.
    """
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
    """Statements and satisfied statements, each categories × polarity (positive, negated).

    Args:
        facts: one model's facts.

    Returns:
        (statements, satisfied statements).
    """
    shape = (len(TABLE3_CATEGORIES), 2)
    polarity = facts.negated.astype(np.int64)
    return counts(shape, facts.s_category, polarity), counts(shape, facts.s_category, polarity, where=facts.satisfied)
