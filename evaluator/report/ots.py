"""The order-to-space diagnostic of OTS-Bench (seed 003): does the first-mentioned object land left?

From the detected boxes of two objects, the first mentioned (A) and the second (B):

- **valid**: both were detected, and GenEval's position rule (box centres, dead zone
  0.1·(size_A + size_B) per axis, ±0.5 cut on the offset's direction; `evaluator.geneval.rules`)
  calls A either left of or right of B. Pairs whose centres are within the dead zone horizontally,
  or whose offset is mostly vertical (more than 60° from horizontal), are not valid, as OTS-Bench's
  judges leave out pairs that "primarily exhibit depth-based or vertical relationships";
- **Hom** (homogenization) over *neutral* prompts, which name no side: p = % of valid images with A
  left of B, Hom = |2p − 100| (0: no order bias, 100: A always on one side);
- **Ali** / **Rev** over *directional* prompts asking for "left of" or "right of": the % of valid
  images where A is on the side asked; Ali when the request agrees with mention order (A left of
  B: the first-mentioned on the left), Rev when it contradicts it (A right of B); **Δ = Ali − Rev**.

Intervals are percentile bootstrap intervals over prompts (a prompt's images are drawn together;
`negt2ibench.core.bootstrap`), Ali and Rev drawn independently for Δ. Pure functions: observations
in, numbers out; `result_observations` reads this project's relation prompts (the subject is
mentioned first; neutral = proximity, comparative and depth statements, directional = positive
left of / right of statements); GenEval's are read in `evaluator.geneval.summary`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.geneval.rules import relative_position
from evaluator.results import ResultRecord, is_error_row
from negt2ibench.core.bootstrap import DEFAULT_CONFIDENCE, percentile_interval, resample_indices
from negt2ibench.core.table import Column, Table

from .numbers import OtsStatistics

NEUTRAL, ALIGNED, REVERSED = "neutral", "aligned", "reversed"
NEUTRAL_CATEGORIES = ("proximity", "comparative", "depth")  # relations that name no side
SIDES = ("left of", "right of")
VALID_RULE = (
    "valid: both objects detected and GenEval's position rule (dead zone 0.1·(size_A + size_B), ±0.5 cut) "
    "calls the first-mentioned object left of or right of the second"
)
Box = Sequence[float]


class OrderObservation(NamedTuple):
    """One image's pair: A (mentioned first) and B, their boxes (None: not detected), the prompt
    (the bootstrap's unit), and for a directional prompt the side asked for A ("left of" / "right of").
    A named tuple: a report makes hundreds of thousands (a frozen dataclass took 5× longer to make)."""

    prompt: str
    first: Box | None
    second: Box | None
    requested: str | None = None

    @property
    def kind(self) -> str:
        if self.requested is None:
            return NEUTRAL
        return ALIGNED if self.requested == "left of" else REVERSED


def side(first: Box | None, second: Box | None, position_threshold: float = 0.1) -> str | None:
    """ "left of" / "right of" when the pair is valid (see the module docstring), else None.

    Args:
        first: the box of the object mentioned first (None: not found).
        second: the box of the other object (None: not found).
        position_threshold: the dead zone's share of the boxes' sizes (`relative_position`'s).

    Returns:
        The side of FIRST relative to SECOND, or None (a box missing, or no horizontal side).
    """
    if first is None or second is None:
        return None
    relations = relative_position(first, second, position_threshold)
    return next((relation for relation in SIDES if relation in relations), None)


# Within this of the ±0.5 cut, a pair is decided by `side` itself: the array form below computes the
# norm of the centre offset as x² + y² in float32, which may round differently from numpy's dot
# product in `relative_position` by an ulp or so (≈ 1e-7 of the direction's component).
_CUT_MARGIN = 1e-5


def sides(pairs: Sequence[tuple[Box | None, Box | None]], position_threshold: float = 0.1) -> list[str | None]:
    """`side` of every (first, second) pair, as numpy arrays over all pairs at once.

    The same float32 arithmetic as `relative_position` element by element, and `side` itself for
    the pairs within `_CUT_MARGIN` of the cut (so every answer is `side`'s).

    Args:
        pairs: (first box, second box) pairs, None for an object not found.
        position_threshold: as `side`'s.

    Returns:
        `side` of each pair, in order.
    """
    found: list[str | None] = [None] * len(pairs)
    both = [(i, first, second) for i, (first, second) in enumerate(pairs) if first is not None and second is not None]
    if not both:
        return found
    values = chain.from_iterable(chain(first[:4], second[:4]) for _, first, second in both)
    boxes = np.fromiter(values, dtype=np.float32, count=8 * len(both))
    boxes = boxes.reshape(len(both), 2, 2, 2)  # pair, object, corner, (x, y)
    centres = boxes.mean(axis=-2)
    sizes = np.abs(np.diff(boxes, axis=-2))[..., 0, :]
    offset = centres[:, 0] - centres[:, 1]
    dead_zone = np.float32(position_threshold) * (sizes[:, 0] + sizes[:, 1])
    revised = np.maximum(np.abs(offset) - dead_zone, np.float32(0)) * np.sign(offset)
    directed = ~np.all(np.abs(revised) < np.float32(1e-3), axis=1)  # relative_position's () otherwise
    norm = np.sqrt(offset[:, 0] * offset[:, 0] + offset[:, 1] * offset[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        dx = revised[:, 0] / np.where(directed, norm, np.float32(1))
    near_cut = directed & (np.abs(np.abs(dx) - np.float32(0.5)) < _CUT_MARGIN)
    answer = np.where(directed & (dx < -0.5), 0, np.where(directed & (dx > 0.5), 1, 2))  # SIDES[0], SIDES[1], None
    answer[near_cut] = 3
    labels = (*SIDES, None)
    for (index, first, second), code in zip(both, answer.tolist(), strict=True):
        found[index] = side(first, second, position_threshold) if code == 3 else labels[code]
    return found


def _interval(valid: np.ndarray, hits: np.ndarray, resamples: int, seed: int, transform) -> np.ndarray:
    """Per resample of prompts: transform(100 × hits / valid), NaN where nothing valid was drawn."""
    if valid.size == 0 or resamples < 1:
        return np.full(max(resamples, 0), math.nan)
    rows = resample_indices(valid.size, resamples=resamples, seed=seed)
    drawn_valid, drawn_hits = valid[rows].sum(axis=1), hits[rows].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return transform(np.where(drawn_valid > 0, 100.0 * drawn_hits / drawn_valid, math.nan))


def _share(observations: Sequence[OrderObservation], hit, position_threshold: float) -> tuple:
    """(images, valid, hits, per-prompt valid counts, per-prompt hits) for one kind of prompt."""
    valid: dict[str, int] = defaultdict(int)
    hits: dict[str, int] = defaultdict(int)
    found_sides = sides([(o.first, o.second) for o in observations], position_threshold)
    for observation, found in zip(observations, found_sides, strict=True):
        valid[observation.prompt] += found is not None
        hits[observation.prompt] += found is not None and hit(observation, found)
    prompts = list(valid)
    counts = np.array([valid[p] for p in prompts], dtype=float)
    successes = np.array([hits[p] for p in prompts], dtype=float)
    return len(observations), int(counts.sum()), int(successes.sum()), counts, successes


def _percent(hits: int, valid: int) -> float:
    return 100.0 * hits / valid if valid else math.nan


def ots_statistics(
    observations: Iterable[OrderObservation],
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    position_threshold: float = 0.1,
) -> OtsStatistics:
    """The order-to-space diagnostic of a set of observed object pairs.

    Args:
        observations: the pairs of relation prompts' images (`result_observations`).
        resamples: bootstrap resamples of prompts for the intervals (0: NaN intervals).
        seed: the bootstrap's seed (Ali's draws use seed + 1, Rev's seed + 2).
        confidence: the intervals' coverage.
        position_threshold: how far apart (as a share of the image) two boxes' centres must be
            for their sides to count.

    Returns:
        Hom over the neutral observations, Ali and Rev over the directional ones, Δ = Ali − Rev,
        their percentile intervals and the counts behind them (percentages; NaN where nothing is valid).
    """
    by_kind: dict[str, list[OrderObservation]] = {NEUTRAL: [], ALIGNED: [], REVERSED: []}
    for observation in observations:
        by_kind[observation.kind].append(observation)
    images, valid, left, counts, lefts = _share(by_kind[NEUTRAL], lambda _, s: s == "left of", position_threshold)
    p = _percent(left, valid)
    hom_draws = _interval(counts, lefts, resamples, seed, lambda share: np.abs(2 * share - 100))
    sides = {}
    for kind, offset in ((ALIGNED, 1), (REVERSED, 2)):
        side_images, side_valid, correct, side_counts, hits = _share(
            by_kind[kind], lambda observation, s: s == observation.requested, position_threshold
        )
        draws = _interval(side_counts, hits, resamples, seed + offset, lambda share: share)
        sides[kind] = (_percent(correct, side_valid), draws, side_images, side_valid)
    ali, ali_draws, ali_images, ali_valid = sides[ALIGNED]
    rev, rev_draws, rev_images, rev_valid = sides[REVERSED]
    return {
        "hom": abs(2 * p - 100) if not math.isnan(p) else math.nan,
        "hom_ci": percentile_interval(hom_draws, confidence=confidence),
        "first_left": p,
        "neutral_images": images,
        "neutral_valid": valid,
        "ali": ali,
        "ali_ci": percentile_interval(ali_draws, confidence=confidence),
        "ali_images": ali_images,
        "ali_valid": ali_valid,
        "rev": rev,
        "rev_ci": percentile_interval(rev_draws, confidence=confidence),
        "rev_images": rev_images,
        "rev_valid": rev_valid,
        "delta": ali - rev,
        "delta_ci": percentile_interval(ali_draws - rev_draws, confidence=confidence),
        "valid_rule": VALID_RULE,
    }


Plan = list[tuple[str, str | None, str | None]]  # (subject, target, side asked) of the statements observed


def result_observations(
    records: Iterable[ResultRecord], prompts: PromptIndex, plans: dict[str, Plan | None] | None = None
) -> list[OrderObservation]:
    """The pairs of this project's relation prompts in scored records.

    Each statement's subject (mentioned first) and target; neutral for proximity, comparative and
    depth statements, directional for positive left of / right of statements (negated ones ask for
    no side). Records whose prompt is not in PROMPTS, or names other objects, are left out.

    Args:
        records: result records.
        prompts: the prompts the records are of.
        plans: each prompt id's pairs, worked out once and shared between calls (filled here).

    Returns:
        One observation per pair: the prompt id, both boxes (None when not found), the side asked.
    """
    observations = []
    plans = {} if plans is None else plans  # per prompt id, worked out once (shared by `ots_by_model`'s models)
    for record in records:
        if is_error_row(record):
            continue
        if record.prompt_id not in plans:
            plans[record.prompt_id] = _plan(prompts[record.prompt_id]) if record.prompt_id in prompts else None
        plan = plans[record.prompt_id]
        if not plan:
            continue
        boxes = {obj.name: obj.box for obj in record.objects if obj.present and obj.box}
        named = {obj.name for obj in record.objects}
        for subject, target, requested in plan:
            if subject not in named or target not in named:  # a statement without a target: left out too
                continue
            first = boxes.get(subject)
            second = boxes.get(target) if target is not None else None
            observations.append(OrderObservation(record.prompt_id, first, second, requested))
    return observations


def _plan(prompt: PromptRecord) -> Plan:
    """(subject, target, side asked) of each statement of PROMPT the diagnostic observes."""
    if prompt.kind != "relation":
        return []
    plan = []
    for statement in prompt.statements:
        if prompt.category in NEUTRAL_CATEGORIES:
            requested = None
        elif prompt.category == "directional" and not statement.negated and statement.predicate in SIDES:
            requested = statement.predicate
        else:
            continue
        plan.append((statement.subject, statement.target, requested))
    return plan


@cache
def builtin_prompts() -> PromptIndex:
    """The built-in corpus by id (built once per process).

    Returns:
        The corpus's prompts, by id.
    """
    from dataset_builder.loading import prompt_index

    return prompt_index(None)


def ots_by_model(
    grouped: Mapping[str, Sequence[ResultRecord]], prompts: PromptIndex, *, resamples: int = 1000, seed: int = 0
) -> dict[str, OtsStatistics]:
    """`ots_statistics` of each model's records (the report's `ots` section).

    Args:
        grouped: each model's records.
        prompts: the prompts the records are of.
        resamples: bootstrap resamples of the intervals.
        seed: the bootstrap's seed.

    Returns:
        Each model's order-to-space numbers with their intervals.
    """
    plans: dict[str, Plan | None] = {}
    return {
        model: ots_statistics(result_observations(records, prompts, plans), resamples=resamples, seed=seed)
        for model, records in grouped.items()
    }


def _ci(bounds: Any) -> str:
    low, high = bounds if bounds is not None else (math.nan, math.nan)
    return "–" if low is None or math.isnan(low) else f"[{low:.1f}, {high:.1f}]"


OTS_COLUMNS: tuple[Column, ...] = (
    Column("model", "Model", fmt=str),
    Column("hom", "Hom ↓", higher_is_better=False, interval="hom_ci"),
    Column("hom_ci", "Hom 95% CI", fmt=_ci, pair=True, in_markdown=False),
    Column("first_left", "A left (%)"),
    Column("neutral_valid", "Valid (neutral)", fmt="{:.0f}"),
    Column("neutral_images", "Images (neutral)", fmt="{:.0f}", in_markdown=False),
    Column("ali", "Ali ↑", higher_is_better=True, interval="ali_ci"),
    Column("ali_ci", "Ali 95% CI", fmt=_ci, pair=True, in_markdown=False),
    Column("rev", "Rev ↑", higher_is_better=True, interval="rev_ci"),
    Column("rev_ci", "Rev 95% CI", fmt=_ci, pair=True, in_markdown=False),
    Column("delta", "Δ ↓", higher_is_better=False, interval="delta_ci"),
    Column("delta_ci", "Δ 95% CI", fmt=_ci, pair=True, in_markdown=False),
    Column("ali_valid", "Valid (Ali)", fmt="{:.0f}"),
    Column("rev_valid", "Valid (Rev)", fmt="{:.0f}"),
)
OTS_CAPTION = (
    "Order-to-space bias (OTS-Bench): Hom = |2p − 100|, p = % of valid neutral pairs with the first-mentioned "
    "object left; Ali / Rev = % of valid directional pairs on the side asked when it agrees / contradicts mention "
    f"order; Δ = Ali − Rev; 95% bootstrap intervals over prompts. {VALID_RULE}."
)


def ots_table(by_model: Mapping[str, Mapping[str, Any]], caption: str = OTS_CAPTION) -> Table:
    """One row per model of `ots_statistics`' numbers.

    Args:
        by_model: each model's numbers (a missing one is NaN).
        caption: the table's caption.

    Returns:
        The `ots` table.
    """
    rows = []
    for model, stats in by_model.items():
        row = {column.key: stats.get(column.key, math.nan) for column in OTS_COLUMNS[1:]}
        rows.append({"model": model, **{key: _float(value) for key, value in row.items()}})
    return Table("ots", "Order-to-space bias (OTS-Bench)", OTS_COLUMNS, rows, caption=caption)


def _float(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(math.nan if bound is None else float(bound) for bound in value)
    if value is None:
        return math.nan
    return float(value) if isinstance(value, (int, float)) else value
