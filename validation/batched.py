"""Vectorised versions of the `validation.stats` statistics for the bootstrap.

Each takes ``weights`` of shape (resamples, n): how often each image is drawn in each resample
(`bootstrap.resample_counts`). A statistic of a weighted sample equals the statistic of the
resampled data with each image repeated `weight` times, so these return, for every resample at
once, exactly what `validation.stats` returns on that resample (the tests check it).

- Confusion-based statistics (accuracy, κ, precision, recall, specificity, called-correct) come
  from the weighted 2×2 counts, ``weights @ one_hot``.
- Rank statistics use n × n pair matrices, so they are meant for validation-sized sets (a few
  thousand images): with S the sign matrix of the human scores and T of the evaluator's,
  τ-b = wᵀ(S∘T)w / sqrt(wᵀ|S|w · wᵀ|T|w) (a pair of copies of one image is tied on both sides,
  which τ-b leaves out of both factors), pair accuracy = ½ + wᵀ(S∘T)w / (2 wᵀ|S|w), and
  Spearman's average rank of image i is Σⱼ wⱼ([xⱼ < xᵢ] + ½[xⱼ = xᵢ]) + ½.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

TP, TN, FP, FN = range(4)


def confusion_counts(weights: np.ndarray, references: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """(resamples, 4) weighted counts in the order TP, TN, FP, FN."""
    ref = np.asarray(references, dtype=bool)
    pred = np.asarray(predictions, dtype=bool)
    one_hot = np.stack([ref & pred, ~ref & ~pred, ~ref & pred, ref & ~pred], axis=1).astype(float)
    return _product(np.atleast_2d(weights), one_hot, one_hot.astype(np.float32))


def _divide(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(whole > 0, part / np.where(whole > 0, whole, 1.0), np.nan)


def accuracy(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[:, TP] + counts[:, TN], counts.sum(axis=1))


def kappa(counts: np.ndarray) -> np.ndarray:
    """Cohen's κ from counts; NaN where chance agreement is 1 (one class on both sides)."""
    total = counts.sum(axis=1)
    observed = _divide(counts[:, TP] + counts[:, TN], total)
    people_yes = counts[:, TP] + counts[:, FN]
    judged_yes = counts[:, TP] + counts[:, FP]
    expected = _divide(people_yes * judged_yes + (total - people_yes) * (total - judged_yes), total * total)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (observed - expected) / (1.0 - expected)
    return np.where(np.isclose(expected, 1.0, rtol=0.0, atol=1e-12) | ~np.isfinite(value), np.nan, value)


def precision(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[:, TP], counts[:, TP] + counts[:, FP])


def recall(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[:, TP], counts[:, TP] + counts[:, FN])


def specificity(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[:, TN], counts[:, TN] + counts[:, FP])


def balanced_accuracy(counts: np.ndarray) -> np.ndarray:
    return (recall(counts) + specificity(counts)) / 2


def called_correct(counts: np.ndarray) -> np.ndarray:
    return _divide(counts[:, TP] + counts[:, FP], counts.sum(axis=1))


COUNT_STATISTICS = {
    "accuracy": accuracy,
    "kappa": kappa,
    "precision": precision,
    "recall": recall,
    "specificity": specificity,
    "balanced": balanced_accuracy,
    "called_correct": called_correct,
}


# Up to this many images every partial sum of ``weights @ pair matrix`` is a multiple of ½ no larger
# than the number of images, so float32 (exact to 2**24) gives the same result as float64, twice as fast.
FLOAT32_EXACT = 4096


# Products over at most this many images run on one BLAS thread: waking the other threads costs more
# than the product itself (on a busy 2-core machine, 20 ms instead of 0.2 ms for 100 images).
ONE_THREAD_BELOW = 256


@functools.lru_cache(maxsize=1)
def _blas():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _product(weights: np.ndarray, matrix: np.ndarray, matrix32: np.ndarray) -> np.ndarray:
    n = weights.shape[1]
    limit = _blas().limit(limits=1, user_api="blas") if n <= ONE_THREAD_BELOW else contextlib.nullcontext()
    with limit:
        if n <= FLOAT32_EXACT:
            return (weights.astype(np.float32) @ matrix32).astype(float)
        return weights @ matrix


class RankPairs:
    """The pair matrices of one score vector, built once and shared by every evaluator.

    Products with one weights matrix are remembered (the last one per kind), so the human side
    is computed once per set of resamples, not once per evaluator.
    """

    def __init__(self, values: np.ndarray):
        x = np.asarray(values, dtype=float)
        self.sign = np.sign(x[None, :] - x[:, None])  # sign[i, j] = sign(x_j - x_i)
        self.untied = np.abs(self.sign)
        # rank_matrix[j, i] = [x_j < x_i] + ½ [x_j = x_i]: average rank of i = (w @ rank_matrix)_i + ½
        self.rank_matrix = (x[:, None] < x[None, :]) + 0.5 * (x[:, None] == x[None, :])
        self._float32 = {"untied": self.untied.astype(np.float32), "ranks": self.rank_matrix.astype(np.float32)}
        self._memo: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _remembered(self, kind: str, weights: np.ndarray, compute) -> np.ndarray:
        hit = self._memo.get(kind)
        if hit is None or hit[0] is not weights:
            self._memo[kind] = hit = (weights, compute())
        return hit[1]

    def ranks(self, weights: np.ndarray) -> np.ndarray:
        """Average ranks of each image within each resample, (resamples, n)."""
        return self._remembered(
            "ranks", weights, lambda: _product(weights, self.rank_matrix, self._float32["ranks"]) + 0.5
        )

    def untied_pairs(self, weights: np.ndarray) -> np.ndarray:
        """wᵀ|S|w: twice the number of pairs not tied, per resample."""
        return self._remembered(
            "untied",
            weights,
            lambda: np.einsum("bi,bi->b", _product(weights, self.untied, self._float32["untied"]), weights),
        )


def _concordance(weights: np.ndarray, human: RankPairs, judged: RankPairs) -> np.ndarray:
    """wᵀ(S∘T)w: twice (concordant − discordant pairs), per resample."""
    product = human.sign * judged.sign
    return np.einsum("bi,bi->b", _product(weights, product, product.astype(np.float32)), weights)


def rank_statistics(weights: np.ndarray, human: RankPairs, judged: RankPairs) -> dict[str, np.ndarray]:
    """Kendall τ-b, Spearman ρ and pair accuracy for every resample: {name: (resamples,)}."""
    weights = np.atleast_2d(weights)
    concordance = _concordance(weights, human, judged)
    human_untied = human.untied_pairs(weights)
    judged_untied = judged.untied_pairs(weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(
            (human_untied > 0) & (judged_untied > 0), concordance / np.sqrt(human_untied * judged_untied), np.nan
        )
        pairs = np.where(human_untied > 0, 0.5 + concordance / (2 * human_untied), np.nan)
    rho = _weighted_pearson(weights, human.ranks(weights), judged.ranks(weights))
    rho = np.where((human_untied > 0) & (judged_untied > 0), rho, np.nan)  # a constant side: undefined
    return {"kendall_tau": tau, "spearman_rho": rho, "pair_accuracy": pairs}


def _weighted_pearson(weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    total = weights.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_x = (weights * x).sum(axis=1) / total
        mean_y = (weights * y).sum(axis=1) / total
        dx = x - mean_x[:, None]
        dy = y - mean_y[:, None]
        covariance = (weights * dx * dy).sum(axis=1)
        spread = np.sqrt((weights * dx * dx).sum(axis=1) * (weights * dy * dy).sum(axis=1))
        value = covariance / spread
    return np.where(spread > 0, np.clip(value, -1.0, 1.0), np.nan)
