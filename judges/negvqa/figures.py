"""The shapes of a NegVQA summary (`summary.summarize_judge`), as mypy checks them.

Each is a `TypedDict`: a plain dict at run time, so `negvqa summary --json` writes what it wrote,
while every key a reader spells is checked. Accuracies and shares are fractions in 0–1 (NaN when
nothing was counted); intervals are (low, high), (NaN, NaN) without a bootstrap.
"""

from __future__ import annotations

from typing import TypedDict

Interval = tuple[float, float]


class SourceAccuracy(TypedDict):
    """One source dataset's questions and accuracy."""

    domain: str
    questions: int
    correct: int
    accuracy: float
    accuracy_ci: Interval


class DomainAccuracy(TypedDict):
    """One domain: its source datasets and the mean of their accuracies."""

    sources: list[str]
    questions: int
    correct: int
    accuracy: float  # the mean of its sources' accuracies (each counts once)
    accuracy_ci: Interval


class Accuracies(TypedDict):
    """Accuracy overall (every question once), by domain and by source dataset."""

    questions: int
    correct: int
    accuracy: float
    accuracy_ci: Interval
    by_domain: dict[str, DomainAccuracy]
    by_source: dict[str, SourceAccuracy]


class DropFigures(TypedDict):
    """Original and negated accuracy over the questions answered in both forms, and the drop."""

    pairs: int
    accuracy_original: float
    accuracy_negated: float
    drop: float  # original − negated
    accuracy_original_ci: Interval
    drop_ci: Interval


class _OriginalAlways(TypedDict):
    pairs: int
    accuracy_original: float
    accuracy_negated: float
    drop: float
    by_domain: dict[str, DropFigures]
    error_rows: int  # the originals' rows with no answer (in no pair)


class OriginalDrop(_OriginalAlways, total=False):
    """The originals beside the negated questions; without a single pair, only the keys that are always there
    (NaN figures, no domain)."""

    accuracy_original_ci: Interval
    drop_ci: Interval
    chosen_A: float  # the originals' share of A answers ...
    key_A: float  # ... and of A in their key
    bias_A: float


class LetterShares(TypedDict):
    """The share of answers that are each letter, and of each letter in the answer key."""

    chosen: dict[str, float]
    key: dict[str, float]
    bias_A: float  # chosen A − key A


class GeneratedReplies(TypedDict):
    """What the written replies (`--generate`) name."""

    replies: int
    disagree: int  # replies that do not name the letter the scores chose (no letter included)
    disagree_share: float
    unread: int  # replies that name no letter


class SummaryOptions(TypedDict):
    """The bootstrap the intervals came from."""

    bootstrap: int
    seed: int
    confidence: float


class JudgeSummary(TypedDict):
    """Every figure of one judge, in the order `negvqa summary --json` writes them."""

    judge: str
    params: str
    files: list[str]
    error_rows: int  # negated rows with no answer, left out of every figure
    error_kinds: dict[str, int]  # error kind (the text before its first colon) → rows
    questions: int
    correct: int
    accuracy: float
    accuracy_ci: Interval
    by_domain: dict[str, DomainAccuracy]
    by_source: dict[str, SourceAccuracy]
    letters: LetterShares
    original: OriginalDrop | None  # None when no originals were given
    generated: GeneratedReplies | None  # None when no reply was written
    options: SummaryOptions
