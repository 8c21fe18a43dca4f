"""Seeded, paired percentile bootstrap over images, for any statistic.

*Paired*: every resample draws images, and all arrays (human labels, evaluator verdicts, scores)
are resampled by the same image indices, so their pairing is kept. The draw depends only on the
number of images, the seed and the number of resamples: two evaluators scored on the same
images get the same resamples, and their intervals are comparable.

Three ways to run it, with identical draws (and so identical intervals):

- `paired_bootstrap(statistic, references=..., predictions=...)` calls a keyword-only statistic
  (e.g. of `validation.stats`) once per resample (any statistic, simple and slow);
- `weighted_bootstrap(batched, n=...)` hands a (resamples × images) matrix of draw counts to a
  vectorised statistic (e.g. of `validation.batched`): all resamples at once. Elements are
  resampled with their images by expanding the counts (`weights[:, image_of_element]`);
- `mean_interval(values)`: the interval of a mean (the report's matched-group deltas), drawn a
  block of resamples at a time so that memory stays bounded for many values.

Resamples where the statistic is undefined (NaN: say one class only) are left out of the
percentiles; when all are, the interval is (NaN, NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
MAX_DRAWN = 4_000_000  # indices `mean_interval` holds at once (32 MB)


def _draws(n: int, resamples: int, seed: int, block: int | None = None) -> Iterator[np.ndarray]:
    """The (resamples, n) draws in blocks of rows: one generator, so any blocks make the same draws."""
    generator = np.random.default_rng(seed)
    block = block or resamples
    for start in range(0, resamples, block):
        yield generator.integers(0, n, size=(min(block, resamples - start), n))


def _draw(n: int, resamples: int, seed: int) -> np.ndarray:
    return next(_draws(n, resamples, seed))


def resample_indices(n: int, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(resamples, n) image indices drawn with replacement; the same for the same (n, resamples, seed)."""
    if n < 1 or resamples < 1:
        return np.zeros((max(resamples, 0), 0), dtype=np.int64)
    return _draw(n, resamples, seed)


def resample_counts(n: int, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(resamples, n) float counts: how often each image is drawn in each resample (rows sum to n).

    The same draws as `resample_indices`, as weights for the vectorised statistics.
    """
    indices = resample_indices(n, resamples=resamples, seed=seed)
    if indices.size == 0:
        return np.zeros(indices.shape, dtype=float)
    rows = indices.shape[0]
    offsets = indices + (np.arange(rows) * n)[:, None]
    return np.bincount(offsets.ravel(), minlength=rows * n).reshape(rows, n).astype(float)


def percentile_interval(
    values: np.ndarray | list[float], *, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float]:
    """The (low, high) percentiles that hold `confidence` of the finite values; NaNs when none."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return (math.nan, math.nan)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return (float(low), float(high))


def paired_bootstrap(
    statistic: Callable[..., float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    **arrays: object,
) -> tuple[float, float]:
    """Percentile interval of ``statistic(**arrays)`` over images resampled with replacement.

    Args:
        statistic: a keyword-only statistic, e.g. `validation.stats.cohen_kappa`.
        resamples: number of bootstrap resamples (1,000 by default, as the paper).
        seed: the seed of the draws (numpy's default generator).
        confidence: the interval's coverage (0.95: 2.5th and 97.5th percentiles).
        **arrays: the statistic's inputs, one value per image each (first axis = images).

    Returns:
        (low, high); (NaN, NaN) for no images, no resamples, or a statistic never defined.

        >>> def accuracy(*, references, predictions):
        ...     return float((references == predictions).mean())
        >>> paired_bootstrap(accuracy, references=[1, 1, 1, 1], predictions=[1, 1, 1, 1], resamples=50)
        (1.0, 1.0)
    """
    columns = {name: np.asarray(value) for name, value in arrays.items()}
    sizes = {len(value) for value in columns.values()}
    if len(sizes) > 1:
        raise ValueError(f"paired arrays must have one value per image each, got lengths {sorted(sizes)}")
    n = sizes.pop() if sizes else 0
    if n == 0 or resamples < 1:
        return (math.nan, math.nan)
    values = [statistic(**{name: value[row] for name, value in columns.items()}) for row in _draw(n, resamples, seed)]
    return percentile_interval(values, confidence=confidence)


def weighted_bootstrap(
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n: int,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    weights: np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile interval of a vectorised statistic: ``statistic(weights)`` → one value per resample.

    `weights` (from `resample_counts`) may be passed in to share one draw between statistics;
    otherwise it is drawn from (n, resamples, seed), the same draw `paired_bootstrap` makes.
    """
    if n == 0 or resamples < 1:
        return (math.nan, math.nan)
    if weights is None:
        weights = resample_counts(n, resamples=resamples, seed=seed)
    return percentile_interval(statistic(weights), confidence=confidence)


def mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float]:
    """Percentile interval of the mean of VALUES, resampled with replacement: the draws of
    `resample_indices(len(values))`, made `MAX_DRAWN` indices at a time. (NaN, NaN) when empty."""
    data = np.asarray(values, dtype=float)
    if data.size == 0 or resamples < 1:
        return (math.nan, math.nan)
    means = np.concatenate(
        [data[rows].mean(axis=1) for rows in _draws(data.size, resamples, seed, max(1, MAX_DRAWN // data.size))]
    )
    return percentile_interval(means, confidence=confidence)
