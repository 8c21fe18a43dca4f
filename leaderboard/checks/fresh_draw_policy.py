"""A fresh draw: the entry's model scored on prompts of the same design drawn from a secret seed.

A model tuned on the public prompts scores what it memorised (GenEval went from 63% to 95% under
Flow-GRPO trained on its templates). So for an entry whose images are the model's own
(`leaderboard.checks.regeneration_run`: reproduced), the verification job also:

1. draws a **seed** from the server secret and the submission id (`fresh_seed`, an HMAC: nobody
   knows it before the job reveals it);
2. builds that seed's corpus (`dataset_builder.corpus.build_fresh_corpus`: exactly `negt2ibench
   build --seed SEED`, ids prefixed `fresh_`) and samples **9 prompts in each of the 48 category x
   setting cells** among those that ask for nothing a published prompt asks for
   (`published_combinations`: the test split's and the training split's), so no fresh prompt is a
   published one (`fresh_prompts`);
3. generates 4 images per prompt with the entry's model and settings (the generation's own
   resumable run, `generation.runner.generate_images`), scores them (the spot check's scorer) and
   stores the fresh-draw accuracy beside the public one, each with its 95% bootstrap interval over
   prompts, and the gap (fresh - public) with its interval (`fresh_numbers`); the seed is written
   with them, so anyone can repeat the draw.

**Why 432 prompts** (`fresh_draw_size`): the accuracy is the mean of the prompts' pass shares (4
images each). A share lies in [0, 1], so its variance is at most 1/4 whatever the correlation of a
prompt's images, and the sample mean of N prompts has a 95% half-width of at most 1.96 x
sqrt(1/4 / N) (stratifying with equal cells only lowers it). At most 5 points needs N >= 385; in
whole cells that is 9 per cell: **N = 432 prompts, 1,728 images, half-width <= 4.7 points**.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dataset_builder.corpus import build_fresh_corpus, published_combinations, record_combination
from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import CATEGORIES, SAMPLES_PER_PROMPT, SETTINGS, setting_name
from evaluator.results import ResultRecord, is_error_row
from leaderboard.store.entries import Entry
from negt2ibench.core.bootstrap import percentile_interval, resample_indices

HALF_WIDTH = 5.0  # points: the fresh-draw accuracy's 95% interval is at most +- this
Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
CELLS = len(CATEGORIES) * len(SETTINGS)  # 48 category x setting cells
FRESH_SEED_BASE = 2**32  # fresh seeds lie above it: never a published split's seed (2026, 2027)
RESAMPLES = 1000


def worst_half_width(prompts: int) -> float:
    """The 95% half-width (points) of a mean of `prompts` pass shares, at the largest variance (1/4).

    Args:
        prompts: the prompts the mean is over.

    Returns:
        100 · z95 · sqrt(0.25 / prompts).
    """
    return 100.0 * Z95 * math.sqrt(0.25 / prompts)


def fresh_draw_size(half_width: float = HALF_WIDTH, cells: int = CELLS) -> int:
    """The fewest prompts, in whole cells, whose worst-case 95% half-width is at most `half_width` points.

    Args:
        half_width: the largest half-width wanted, in points.
        cells: the category × setting cells the prompts are spread over.

    Returns:
        The number of prompts, a multiple of `cells`.
    """
    needed = math.ceil(0.25 * (100.0 * Z95 / half_width) ** 2)
    return math.ceil(needed / cells) * cells


FRESH_PER_CELL = fresh_draw_size() // CELLS  # 9


def fresh_seed(secret: bytes, submission_id: str) -> int:
    """The entry's fresh-draw seed: HMAC-SHA256 of its id under the server secret, above `FRESH_SEED_BASE`.

    Args:
        secret: the server's secret.
        submission_id: the entry's id.

    Returns:
        The seed (never one of the published corpus's).

    Raises:
        ValueError: an empty secret.
    """
    if not secret:
        raise ValueError("the fresh draw's secret is empty")
    mac = hmac.new(secret, f"{submission_id}:fresh-draw".encode(), hashlib.sha256).digest()
    return FRESH_SEED_BASE + (int.from_bytes(mac[:8], "big") >> 2)


def fresh_work_tag(secret: bytes, submission_id: str) -> str:
    """A name for the job's work folder of this draw that changes with the secret but does not reveal the seed.

    Args:
        secret: the server's secret.
        submission_id: the entry's id.

    Returns:
        12 hex digits.
    """
    return hmac.new(secret, f"{submission_id}:fresh-work".encode(), hashlib.sha256).hexdigest()[:12]


def fresh_prompts(seed: int, per_cell: int = FRESH_PER_CELL) -> list[PromptRecord]:
    """`per_cell` prompts of each category × setting cell of the seed's corpus, cell by cell.

    Drawn with the seed among those whose objects and values/relations no published prompt asks
    for.

    Args:
        seed: the draw's seed (`fresh_seed`).
        per_cell: prompts drawn in each cell.

    Returns:
        The prompts, cell by cell in the benchmark's order, each cell's sorted by id.

    Raises:
        ValueError: a cell has fewer unpublished prompts than `per_cell`.
    """
    published = published_combinations()
    pool: dict[tuple[str, str], list[PromptRecord]] = defaultdict(list)
    for record in build_fresh_corpus(seed):
        if record_combination(record) not in published:
            pool[(record.category, record.setting)].append(record)
    draw = random.Random(f"negt2ibench:fresh:{seed}")
    chosen: list[PromptRecord] = []
    for category in CATEGORIES:
        for num_pos, num_neg in SETTINGS:
            candidates = pool[(category, setting_name(num_pos, num_neg))]
            if len(candidates) < per_cell:
                raise ValueError(
                    f"seed {seed}: only {len(candidates)} unpublished prompts in {category} {num_pos}:{num_neg}"
                )
            chosen += sorted(draw.sample(candidates, per_cell), key=lambda record: record.prompt_id)
    return chosen


def prompt_shares(results: Sequence[ResultRecord]) -> tuple[np.ndarray, np.ndarray]:
    """(scored images, passed images) per prompt, error rows left out (as the report's accuracy).

    Args:
        results: result records.

    Returns:
        Two float arrays, aligned, one value per prompt with a scored image.
    """
    scored: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in results:
        if is_error_row(record):
            continue
        counts = scored[record.prompt_id]
        counts[0] += 1
        counts[1] += int(record.passed)
    totals = np.array([counts[0] for counts in scored.values()], dtype=float)
    passed = np.array([counts[1] for counts in scored.values()], dtype=float)
    return totals, passed


def _replicates(results: Sequence[ResultRecord], seed: int) -> tuple[float, np.ndarray]:
    """The accuracy (% of scored images passed) and its bootstrap replicates, prompts resampled."""
    totals, passed = prompt_shares(results)
    if not totals.size:
        raise ValueError("no scored image")
    draws = resample_indices(totals.size, resamples=RESAMPLES, seed=seed)
    return 100.0 * passed.sum() / totals.sum(), 100.0 * passed[draws].sum(axis=1) / totals[draws].sum(axis=1)


@dataclass(frozen=True)
class FreshNumbers:
    accuracy: float
    interval: tuple[float, float]
    public: float
    public_interval: tuple[float, float]
    gap: float
    gap_interval: tuple[float, float]


def fresh_numbers(fresh: Sequence[ResultRecord], public: Sequence[ResultRecord]) -> FreshNumbers:
    """Both accuracies with their 95% percentile-bootstrap intervals over prompts, and the gap.

    The gap (fresh − public) has the interval of the difference of independent replicates (the two
    draws share no prompt).

    Args:
        fresh: the records of the fresh draw's images.
        public: the entry's records of the published prompts.

    Returns:
        The fresh and public accuracies (%) with their intervals, and the gap with its interval.

    Raises:
        ValueError: either has no scored image.
    """
    accuracy, fresh_draws = _replicates(fresh, seed=0)
    public_accuracy, public_draws = _replicates(public, seed=1)
    return FreshNumbers(
        accuracy,
        percentile_interval(fresh_draws),
        public_accuracy,
        percentile_interval(public_draws),
        accuracy - public_accuracy,
        percentile_interval(fresh_draws - public_draws),
    )


def fresh_draw_due(entry: Entry) -> bool:
    """Whether the entry waits for its fresh draw: verified, its images reproduced, no draw yet.

    Args:
        entry: a leaderboard entry.

    Returns:
        True when a fresh draw should run for it.
    """
    reproduced = entry.regeneration is not None and entry.regeneration.outcome == "reproduced"
    return entry.status == "verified" and reproduced and entry.fresh_draw is None


def fresh_images(per_cell: int = FRESH_PER_CELL) -> int:
    """Images a fresh draw generates and scores.

    Args:
        per_cell: prompts drawn in each cell.

    Returns:
        per_cell × cells × samples per prompt.
    """
    return per_cell * CELLS * SAMPLES_PER_PROMPT
