"""The shapes of the report's numbers, as mypy checks them.

Each is a `TypedDict`: a plain dict at run time, so the report's JSON, the Space's stored rows
and every file written from them are what they were, while every key a reader spells is checked.
Percentages are floats in 0–100 (NaN for an empty cell, `keys.percent`); counts are ints.
"""

from __future__ import annotations

# typing_extensions' TypedDict: pydantic validates these where a model holds them (the leaderboard's
# `Entry.row`), and it needs that one below Python 3.12.
from typing_extensions import TypedDict


class Table3Numbers(TypedDict):
    """Table 3's numbers of one model (`aggregate.table3`)."""

    settings: dict[str, float]  # setting label (1:0 … 2:2) → % of its scored images passed
    categories: dict[str, float]  # category → the mean of its 8 settings' accuracies
    overall: float  # % of all scored images passed
    polarity_gap: float  # acc(0:1) − acc(1:0), percentage points
    coverage: float  # % of the benchmark's images scored
    images: int  # scored images
    passed: int
    errors: int  # error rows (not scored)
    expected_images: int
    complete: bool


class StatementAccuracy(TypedDict):
    """% of statements satisfied in one category (or `all`), by polarity, with the counts."""

    positive: float
    positive_n: int
    negated: float
    negated_n: int


class FailureCauses(TypedDict):
    """Figure 3: failed statements by cause (`aggregate.failure_causes`)."""

    by_setting: dict[str, dict[str, int]]  # setting → {cause: count, "failed": total}
    by_category: dict[str, dict[str, int]]  # category → {cause: count, "failed": total}
    failed: int  # every failed statement of a scored image
    forbidden_share: dict[str, float]  # `all` and each category → % of failures that are forbidden_rendered


class DeadZoneRow(TypedDict):
    """Table 19's row of one relation category (or `total`)."""

    evaluable: int  # negated relation statements with both objects present
    passed: int
    dead_zone_passes: int  # passed only because no predicate was emitted
    share: float  # % of passes that were dead-zone passes


class MatchedDelta(TypedDict):
    """Negated-minus-positive accuracy over the matched groups of one category and pair."""

    groups: int
    positive: float
    negated: float
    delta: float  # percentage points
    ci_low: float
    ci_high: float


class OtsStatistics(TypedDict):
    """The order-to-space diagnostic (`ots.ots_statistics`): percentages, NaN where nothing is valid;
    each interval as (low, high)."""

    hom: float  # |2p − 100|, p = % of valid neutral pairs with the first-mentioned object left
    hom_ci: tuple[float, float]
    first_left: float  # p
    neutral_images: int
    neutral_valid: int
    ali: float  # % of valid directional pairs on the side asked, when it agrees with mention order
    ali_ci: tuple[float, float]
    ali_images: int
    ali_valid: int
    rev: float  # ... when it contradicts mention order
    rev_ci: tuple[float, float]
    rev_images: int
    rev_valid: int
    delta: float  # Ali − Rev
    delta_ci: tuple[float, float]
    valid_rule: str  # which pairs are valid, in words


# A leaderboard row (`tables.leaderboard_row`): Table 3's columns up to the image count, in the
# order of `tables.LEADERBOARD_COLUMNS` (tests/evaluator/report/test_numbers.py holds them equal).
LeaderboardRow = TypedDict(
    "LeaderboardRow",
    {
        "model": str,
        "1:0": float,
        "0:1": float,
        "2:0": float,
        "1:1": float,
        "0:2": float,
        "2:1": float,
        "1:2": float,
        "2:2": float,
        "color": float,
        "material": float,
        "comparative": float,
        "depth": float,
        "directional": float,
        "proximity": float,
        "overall": float,
        "polarity_gap": float,
        "coverage": float,
        "images": int,
    },
)
