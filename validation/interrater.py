"""Agreement among the annotators themselves (paper Table 5, the "H. inter-annotator" rows).

Inputs are matrices with one row per item (an image, or an element of an image) and one column
per rater slot (an image's annotators sorted by name; see `validation.labels`). Degenerate input
(no items, nothing to disagree about) gives NaN, never an exception.
"""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np

from .stats import ArrayLike, cohen_kappa, kendall_tau_b


def _matrix(values: ArrayLike, dtype: type) -> np.ndarray:
    matrix: np.ndarray = np.asarray(values, dtype=dtype)
    if matrix.size == 0:
        return matrix.reshape(0, 0)
    if matrix.ndim != 2:
        raise ValueError(f"expected one row per item and one column per rater, got shape {matrix.shape}")
    return matrix


def fleiss_kappa(*, ratings: ArrayLike) -> float:
    """Fleiss' κ of binary ratings (`statsmodels.stats.inter_rater.fleiss_kappa`).

    Description: agreement of a fixed number of raters per item beyond chance, where the raters
    may differ between items. (P̄ − P̄_e) / (1 − P̄_e).
    Inputs: ratings, shape (items, raters), booleans (satisfied / passed).
    Output: [−1, 1]. Paper: 0.724 over all statements, 0.602 over negated ones (Table 5).
    Degenerate: NaN for no items, fewer than two raters, or every rating the same.

        Items (3 yes), (2 yes 1 no), (3 no), (1 yes 2 no): P̄ = (1 + 1/3 + 1 + 1/3) / 4 = 2/3,
        P̄_e = 0.5² + 0.5² = 1/2, κ = (2/3 − 1/2) / (1/2) = 1/3:

        >>> round(fleiss_kappa(ratings=[[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 0, 1]]), 4)
        0.3333
    """
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

    matrix = _matrix(ratings, bool)
    if matrix.shape[0] == 0 or matrix.shape[1] < 2:
        return math.nan
    table, _ = aggregate_raters(matrix.astype(int), n_cat=2)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        value = statsmodels_fleiss(table, method="fleiss")
    return float(value) if np.isfinite(value) else math.nan


def unanimous_share(*, ratings: ArrayLike) -> float:
    """Share of items every rater answered alike (Table 5's "Unanimous"; 84.9% over all statements).

    Inputs: ratings (items, raters), booleans. Output: [0, 1]. Degenerate: NaN for no items.

        >>> unanimous_share(ratings=[[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 0, 1]])
        0.5
    """
    matrix = _matrix(ratings, bool)
    if matrix.shape[0] == 0:
        return math.nan
    return float(np.mean(np.all(matrix == matrix[:, :1], axis=1)))


def mean_pairwise_kappa(*, ratings: ArrayLike) -> float:
    """Mean Cohen's κ over all pairs of rater slots (each annotator against each other one; kept in
    the files beside `leave_one_out_kappa`, which is Table 5's and Table 2's figure).

    Inputs: ratings (items, raters), booleans. Output: [−1, 1].
    Degenerate: pairs whose κ is undefined are left out of the mean; NaN when all are.

        Slots [1 1 0 0], [1 1 0 0], [1 0 0 1]: κ = 1, 0, 0, so the mean is 1/3:

        >>> round(mean_pairwise_kappa(ratings=[[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 0, 1]]), 4)
        0.3333
    """
    matrix = _matrix(ratings, bool)
    if matrix.shape[0] == 0 or matrix.shape[1] < 2:
        return math.nan
    kappas = [
        cohen_kappa(references=matrix[:, a], predictions=matrix[:, b])
        for a, b in combinations(range(matrix.shape[1]), 2)
    ]
    finite = [k for k in kappas if not math.isnan(k)]
    return sum(finite) / len(finite) if finite else math.nan


def leave_one_out_kappa(*, ratings: ArrayLike) -> float:
    """Leave-one-out κ (Table 5's last column; the H. inter-annotator κ of Tables 2 and 13): the
    mean over rater slots of Cohen's κ between that rater's answers and the mean answer of the
    others (docs/validation.md says why this definition).

    For slot i with answers x (0/1) and the others' mean m (a share in [0, 1]):
    p_o = mean(x·m + (1 − x)(1 − m)), the share of the other raters who agree, averaged over items;
    p_e = x̄·m̄ + (1 − x̄)(1 − m̄); κ_i = (p_o − p_e) / (1 − p_e). It is the binary twin of
    `leave_one_out_tau` (each rater against the mean of the others), uses every item (no rule
    for the other two disagreeing), and with two raters is Cohen's κ of the pair.
    Inputs: ratings (items, raters), booleans. Output: [−1, 1].
    Degenerate: slots whose κ is undefined (p_e = 1) are left out; NaN when all are.

        Slots x0 [1 1 1 0], x1 [1 0 0 0], x2 [0 0 0 0]. Slot 0: m = [.5 0 0 0], p_o = 1.5/4,
        p_e = .75·.125 + .25·.875 = .3125, κ = .0625/.6875 = 1/11; slot 1: m = [.5 .5 .5 0],
        p_o = 2.5/4, p_e = .25·.375 + .75·.625 = .5625, κ = .0625/.4375 = 1/7; slot 2:
        m = [1 .5 .5 0], p_o = .5, p_e = .5, κ = 0. Mean (1/11 + 1/7) / 3 = 0.0779 (the mean
        pairwise κ is 0.0667: κ(0,1) = 0.2, the other pairs 0):

        >>> round(leave_one_out_kappa(ratings=[[1, 1, 0], [1, 0, 0], [1, 0, 0], [0, 0, 0]]), 4)
        0.0779
    """
    matrix = _matrix(ratings, bool).astype(float)
    if matrix.shape[0] == 0 or matrix.shape[1] < 2:
        return math.nan
    kappas = []
    for slot in range(matrix.shape[1]):
        answers = matrix[:, slot]
        others = np.delete(matrix, slot, axis=1).mean(axis=1)
        observed = float(np.mean(answers * others + (1 - answers) * (1 - others)))
        share, other_share = float(answers.mean()), float(others.mean())
        expected = share * other_share + (1 - share) * (1 - other_share)
        if not math.isclose(expected, 1.0):
            kappas.append((observed - expected) / (1 - expected))
    return sum(kappas) / len(kappas) if kappas else math.nan


def leave_one_out_tau(*, scores: ArrayLike) -> float:
    """Mean over rater slots of Kendall τ-b between that rater's scores and the mean of the others'
    (the inter-annotator reference for the evaluators' τ, Tables 2, 11, 12).

    Inputs: scores (items, raters), each rater's share of satisfied elements per image.
    Output: [−1, 1]. Degenerate: slots with undefined τ are left out; NaN when all are.

        Rater 3 [.5 .5 1] against the others' mean [0 .5 1]: 2 concordant pairs, one tied in
        rater 3 only, τ-b = 2 / sqrt(2·3) = 0.8165; raters 1 and 2 give τ = 1. Mean 0.9388:

        >>> round(leave_one_out_tau(scores=[[0, 0, 0.5], [0.5, 0.5, 0.5], [1, 1, 1]]), 4)
        0.9388
    """
    matrix = _matrix(scores, float)
    if matrix.shape[0] == 0 or matrix.shape[1] < 2:
        return math.nan
    taus = []
    for slot in range(matrix.shape[1]):
        # Rounded so that equal means tie exactly whatever the order of the additions (τ-b counts ties).
        others = np.round(np.delete(matrix, slot, axis=1).mean(axis=1), 12)
        taus.append(kendall_tau_b(references=others, scores=matrix[:, slot]))
    finite = [t for t in taus if not math.isnan(t)]
    return sum(finite) / len(finite) if finite else math.nan
