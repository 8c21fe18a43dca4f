"""Agreement between an evaluator and the human labels: one pure function per statistic.

Every function is keyword-only, so human labels and evaluator verdicts cannot be swapped by
position: ``references`` are always the people (the majority label, or the continuous human
score), ``predictions`` / ``scores`` always the evaluator. Positive class = "accepted": TP both
accept; FP people reject, evaluator passes; FN people accept, evaluator rejects; TN both reject.

Each docstring is a metric card: what it measures, inputs, output range, degenerate cases and a
doctest with a value worked out by hand. Degenerate input (no images, a ratio with an empty
denominator, a constant ranking) gives NaN, never an exception. Computation is delegated to
scikit-learn and scipy where they have the statistic; the bootstrap's batched versions live in
`validation.batched` and are tested against these.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

ArrayLike = Sequence[float] | Sequence[bool] | np.ndarray


def _pair(references: ArrayLike, other: ArrayLike, other_name: str, *, binary: bool) -> tuple[np.ndarray, np.ndarray]:
    dtype = bool if binary else float
    ref = np.asarray(references, dtype=dtype).reshape(-1)
    oth = np.asarray(other, dtype=dtype).reshape(-1)
    if ref.shape != oth.shape:
        raise ValueError(
            f"references and {other_name} must have one value per image: got {ref.size} and {oth.size} values"
        )
    return ref, oth


def confusion(*, references: ArrayLike, predictions: ArrayLike) -> dict[str, int]:
    """The 2×2 confusion counts ``{"tp", "tn", "fp", "fn"}`` (positive = accepted).

    >>> confusion(references=[1, 1, 0, 0], predictions=[1, 0, 1, 0])
    {'tp': 1, 'tn': 1, 'fp': 1, 'fn': 1}
    """
    ref, pred = _pair(references, predictions, "predictions", binary=True)
    return {
        "tp": int(np.sum(ref & pred)),
        "tn": int(np.sum(~ref & ~pred)),
        "fp": int(np.sum(~ref & pred)),
        "fn": int(np.sum(ref & ~pred)),
    }


def accuracy(*, references: ArrayLike, predictions: ArrayLike) -> float:
    """Share of images where the evaluator's verdict equals the human label.

    Inputs: references (human labels), predictions (evaluator verdicts), booleans, one per image.
    Output: [0, 1]. Paper: C6 agrees with the majority of three annotators on 88.5% (Table 17).
    Degenerate: NaN for no images.

        >>> accuracy(references=[1, 1, 0, 0], predictions=[1, 0, 0, 0])
        0.75
    """
    ref, pred = _pair(references, predictions, "predictions", binary=True)
    return float(np.mean(ref == pred)) if ref.size else math.nan


def cohen_kappa(*, references: ArrayLike, predictions: ArrayLike) -> float:
    """Cohen's κ: agreement beyond chance, (p_o − p_e) / (1 − p_e) (`sklearn.metrics.cohen_kappa_score`).

    Inputs: references (human labels), predictions (evaluator verdicts), booleans.
    Output: [−1, 1]; 1 perfect, 0 chance level, < 0 worse than chance. Paper: 0.732 (C6, Table 17).
    Degenerate: NaN for no images and when p_e = 1 (both sides use one and the same class).
    κ is symmetric in its two inputs; when only the references are constant it is 0.

        p_o = 3/4, p_e = 2/4·1/4 + 2/4·3/4 = 1/2, κ = (3/4 − 1/2) / (1 − 1/2) = 1/2:

        >>> cohen_kappa(references=[1, 1, 0, 0], predictions=[1, 0, 0, 0])
        0.5
    """
    from sklearn.metrics import cohen_kappa_score

    ref, pred = _pair(references, predictions, "predictions", binary=True)
    if ref.size == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(ref, pred, labels=[False, True])
    return float(value) if np.isfinite(value) else math.nan


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def precision(*, references: ArrayLike, predictions: ArrayLike) -> float:
    """Of the images the evaluator passes, the share the people accept: TP / (TP + FP).

    Output: [0, 1]. Paper: Qwen3-VL-32B (per element) 84.1% (Table 9).
    Degenerate: NaN when the evaluator passes nothing.

        >>> precision(references=[1, 1, 0, 0], predictions=[1, 1, 1, 0])
        0.6666666666666666
    """
    counts = confusion(references=references, predictions=predictions)
    return _ratio(counts["tp"], counts["tp"] + counts["fp"])


def recall(*, references: ArrayLike, predictions: ArrayLike) -> float:
    """Of the images the people accept, the share the evaluator passes: TP / (TP + FN).

    For elements this is the "Satisfied" column of Table 13 (satisfied elements called right).
    Output: [0, 1]. Degenerate: NaN when the people accept nothing.

        >>> recall(references=[1, 1, 0, 0], predictions=[1, 0, 1, 0])
        0.5
    """
    counts = confusion(references=references, predictions=predictions)
    return _ratio(counts["tp"], counts["tp"] + counts["fn"])


def specificity(*, references: ArrayLike, predictions: ArrayLike) -> float:
    """Of the images (elements) the people reject, the share the evaluator rejects: TN / (TN + FP).

    The "Unsatisfied" column of Table 13. Output: [0, 1]. Degenerate: NaN when people reject nothing.

        >>> specificity(references=[1, 0, 0, 0], predictions=[1, 1, 0, 0])
        0.6666666666666666
    """
    counts = confusion(references=references, predictions=predictions)
    return _ratio(counts["tn"], counts["tn"] + counts["fp"])


def balanced_accuracy(*, references: ArrayLike, predictions: ArrayLike) -> float:
    """Mean of recall and specificity (Table 13's "Balanced"). NaN when either is undefined.

    >>> balanced_accuracy(references=[1, 1, 0, 0], predictions=[1, 0, 0, 0])
    0.75
    """
    return (
        recall(references=references, predictions=predictions)
        + specificity(references=references, predictions=predictions)
    ) / 2


def called_correct(*, predictions: ArrayLike) -> float:
    """Share of images the evaluator passes ("called correct", Table 9); compare with the share the
    majority of annotators passes (34.3% in the paper). Output: [0, 1]. NaN for no images.

        >>> called_correct(predictions=[1, 0, 0, 0])
        0.25
    """
    pred = np.asarray(predictions, dtype=bool).reshape(-1)
    return float(pred.mean()) if pred.size else math.nan


def kendall_tau_b(*, references: ArrayLike, scores: ArrayLike) -> float:
    """Kendall τ-b between the continuous human score and the evaluator's score (`scipy.stats.kendalltau`).

    τ-b = (concordant − discordant) / sqrt((pairs not tied in references)·(pairs not tied in
    scores)), so ties on either side are handled (a pass/fail scorer ties a lot).
    Output: [−1, 1]. Paper: Qwen3-VL-32B per element 0.633 (Table 2).
    Degenerate: NaN for fewer than two images or a constant side.

        Pairs of [.1 .2 .3 .4] vs [.1 .3 .2 .4]: 5 concordant, 1 discordant, τ = 4/6:

        >>> round(kendall_tau_b(references=[0.1, 0.2, 0.3, 0.4], scores=[0.1, 0.3, 0.2, 0.4]), 4)
        0.6667
    """
    from scipy.stats import kendalltau

    ref, sco = _pair(references, scores, "scores", binary=False)
    if ref.size < 2 or np.ptp(ref) == 0 or np.ptp(sco) == 0:
        return math.nan
    return float(kendalltau(ref, sco, variant="b").statistic)


def spearman_rho(*, references: ArrayLike, scores: ArrayLike) -> float:
    """Spearman ρ (Pearson correlation of average ranks) between human and evaluator scores
    (`scipy.stats.spearmanr`). Output: [−1, 1]. Paper: Qwen3-VL-32B per element 0.765 (Table 7).
    Degenerate: NaN for fewer than two images or a constant side.

        Ranks 1 2 3 4 vs 1 3 2 4: Σd² = 2, ρ = 1 − 6·2 / (4·15) = 0.8:

        >>> round(spearman_rho(references=[0.1, 0.2, 0.3, 0.4], scores=[0.1, 0.3, 0.2, 0.4]), 4)
        0.8
    """
    from scipy.stats import spearmanr

    ref, sco = _pair(references, scores, "scores", binary=False)
    if ref.size < 2 or np.ptp(ref) == 0 or np.ptp(sco) == 0:
        return math.nan
    return float(spearmanr(ref, sco).statistic)


def pair_accuracy(*, references: ArrayLike, scores: ArrayLike) -> float:
    """Pairwise ranking accuracy: over image pairs whose human scores differ, the share the evaluator
    orders the same way; pairs the evaluator ties count ½.

    Output: [0, 1]; 0.5 is a coin (or a constant evaluator). Paper: 94.7% (Qwen3-VL-32B, Table 7).
    Degenerate: NaN when no pair of human scores differs.

        Human [.1 .2 .2 .5], evaluator [.3 .3 .1 .9]: 5 pairs differ for people; the evaluator
        gets 3 right, ties 1 (½) and reverses 1, so 3.5 / 5:

        >>> pair_accuracy(references=[0.1, 0.2, 0.2, 0.5], scores=[0.3, 0.3, 0.1, 0.9])
        0.7
    """
    ref, sco = _pair(references, scores, "scores", binary=False)
    human = np.sign(ref[None, :] - ref[:, None])
    judged = np.sign(sco[None, :] - sco[:, None])
    upper = np.triu(np.ones_like(human, dtype=bool), k=1)
    counted = upper & (human != 0)
    pairs = int(counted.sum())
    if not pairs:
        return math.nan
    right = np.sum(counted & (human == judged)) + 0.5 * np.sum(counted & (judged == 0))
    return float(right / pairs)
