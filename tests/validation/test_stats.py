"""Statistics of `validation`: hand-computed cases, the libraries on random data, degenerate input,
and the bootstrap's vectorised statistics against the plain ones resample by resample."""

from __future__ import annotations

import doctest
import importlib
import math
import warnings

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score, precision_score, recall_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from negt2ibench.core.bootstrap import (
    paired_bootstrap,
    percentile_interval,
    resample_counts,
    resample_indices,
    weighted_bootstrap,
)
from validation import batched, interrater, stats

MODULES = [
    "validation.questions",
    "judges.questions",
    "validation.stats",
    "validation.interrater",
    "negt2ibench.core.bootstrap",
    "validation.sample",
    "validation.assignment",
]


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    failures, tried = doctest.testmod(importlib.import_module(module))
    assert tried > 0 and failures == 0


def test_confusion_matrix_worked_on_paper():
    # TP 6, TN 10, FP 2, FN 2 (20 images).
    # p_o = 16/20 = 0.8; people accept 8, evaluator passes 8;
    # p_e = (8·8 + 12·12) / 400 = 208/400 = 0.52; κ = (0.8 − 0.52) / 0.48 = 0.58333…
    references = [1] * 6 + [0] * 10 + [0] * 2 + [1] * 2
    predictions = [1] * 6 + [0] * 10 + [1] * 2 + [0] * 2
    kw = {"references": references, "predictions": predictions}
    assert stats.confusion(**kw) == {"tp": 6, "tn": 10, "fp": 2, "fn": 2}
    assert stats.accuracy(**kw) == 0.8
    assert stats.cohen_kappa(**kw) == pytest.approx(0.28 / 0.48, abs=1e-12)
    assert stats.precision(**kw) == 0.75
    assert stats.recall(**kw) == 0.75
    assert stats.specificity(**kw) == pytest.approx(10 / 12)
    assert stats.balanced_accuracy(**kw) == pytest.approx((0.75 + 10 / 12) / 2)
    assert stats.called_correct(predictions=predictions) == 0.4


def test_rank_statistics_worked_on_paper():
    # human [0, .5, .5, 1], evaluator [0, 0, 1, 1]
    # pairs: (0,1) h up, e tie → ½; (0,2) up/up; (0,3) up/up; (1,2) h tie → not counted; (1,3) up/up;
    # (2,3) h up, e tie → ½. Pair accuracy = (0.5 + 1 + 1 + 1 + 0.5) / 5 = 0.8
    # τ-b: concordant 3, discordant 0, pairs untied in h 5, untied in e 4 → 3 / sqrt(20) = 0.67082
    human, judged = [0, 0.5, 0.5, 1], [0, 0, 1, 1]
    assert stats.pair_accuracy(references=human, scores=judged) == pytest.approx(0.8)
    assert stats.kendall_tau_b(references=human, scores=judged) == pytest.approx(3 / math.sqrt(20))
    # Spearman: ranks h (1, 2.5, 2.5, 4), e (1.5, 1.5, 3.5, 3.5); deviations from 2.5: (−1.5, 0, 0, 1.5) and
    # (−1, −1, 1, 1); covariance sum 1.5 + 1.5 = 3, squares 4.5 and 4 → ρ = 3 / sqrt(18) = 0.70711
    assert stats.spearman_rho(references=human, scores=judged) == pytest.approx(3 / math.sqrt(18))


def test_against_the_libraries_on_random_data():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(5, 80))
        ref, pred = rng.random(n) < 0.4, rng.random(n) < 0.5
        human, judged = rng.integers(0, 5, n) / 4, rng.random(n).round(1)
        kw = {"references": ref, "predictions": pred}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert stats.cohen_kappa(**kw) == pytest.approx(cohen_kappa_score(ref, pred), nan_ok=True)
            assert stats.precision(**kw) == pytest.approx(precision_score(ref, pred, zero_division=np.nan), nan_ok=True)
            assert stats.recall(**kw) == pytest.approx(recall_score(ref, pred, zero_division=np.nan), nan_ok=True)
        assert stats.kendall_tau_b(references=human, scores=judged) == pytest.approx(kendalltau(human, judged)[0])
        assert stats.spearman_rho(references=human, scores=judged) == pytest.approx(spearmanr(human, judged)[0])
        # Pair accuracy by a plain double loop.
        right = pairs = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                if human[i] != human[j]:
                    pairs += 1
                    same = np.sign(human[j] - human[i]) == np.sign(judged[j] - judged[i])
                    right += 1.0 if same else (0.5 if judged[i] == judged[j] else 0.0)
        assert stats.pair_accuracy(references=human, scores=judged) == pytest.approx(right / pairs)


def test_interrater_against_the_libraries_on_random_data():
    rng = np.random.default_rng(11)
    for _ in range(10):
        ratings = rng.random((int(rng.integers(10, 60)), 3)) < 0.6
        table, _ = aggregate_raters(ratings.astype(int), n_cat=2)
        assert interrater.fleiss_kappa(ratings=ratings) == pytest.approx(sm_fleiss(table, method="fleiss"))
        pairs = [cohen_kappa_score(ratings[:, a], ratings[:, b]) for a, b in ((0, 1), (0, 2), (1, 2))]
        assert interrater.mean_pairwise_kappa(ratings=ratings) == pytest.approx(np.mean(pairs))
        assert interrater.unanimous_share(ratings=ratings) == pytest.approx(
            np.mean(ratings.all(axis=1) | (~ratings).all(axis=1))
        )
        scores = rng.integers(0, 4, ratings.shape) / 3
        # the others' mean rounded to 12 decimals, as documented, so equal means tie exactly
        others = [np.round(np.delete(scores, s, axis=1).mean(axis=1), 12) for s in range(3)]
        expected = np.mean([kendalltau(scores[:, s], others[s])[0] for s in range(3)])
        assert interrater.leave_one_out_tau(scores=scores) == pytest.approx(expected)


def test_leave_one_out_kappa_worked_by_hand_and_two_raters_is_cohens():
    # Slots x0 [1 1 1 0 1 0], x1 [1 0 1 0 0 0], x2 [1 1 0 0 0 1] (6 items):
    # slot 0: others' mean m = [1 .5 .5 0 0 .5]; agreement x·m + (1−x)(1−m) = [1 .5 .5 1 0 .5], p_o = 3.5/6;
    #   x̄ = 4/6, m̄ = 2.5/6: p_e = (4·2.5 + 2·3.5)/36 = 17/36; κ0 = (21/36 − 17/36) / (19/36) = 4/19
    # slot 1: m = [1 1 .5 0 .5 .5]; agreement [1 0 .5 1 .5 .5], p_o = 3.5/6; x̄ = 2/6, m̄ = 3.5/6:
    #   p_e = (2·3.5 + 4·2.5)/36 = 17/36; κ1 = 4/19
    # slot 2: m = [1 .5 1 0 .5 0]; agreement [1 .5 0 1 .5 0], p_o = 3/6; x̄ = 3/6, m̄ = 3/6: p_e = 1/2, κ2 = 0
    # mean = (8/19) / 3 = 8/57
    ratings = np.array([[1, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1]], dtype=bool)
    assert interrater.leave_one_out_kappa(ratings=ratings) == pytest.approx(8 / 57)
    # With two raters the other's mean is its answer: Cohen's κ of the pair.
    pair = ratings[:, :2]
    assert interrater.leave_one_out_kappa(ratings=pair) == pytest.approx(cohen_kappa_score(pair[:, 0], pair[:, 1]))


@pytest.mark.parametrize(
    "call",
    [
        lambda: stats.accuracy(references=[], predictions=[]),
        lambda: stats.cohen_kappa(references=[], predictions=[]),
        lambda: stats.cohen_kappa(references=[1, 1, 1], predictions=[1, 1, 1]),  # one class on both sides
        lambda: stats.precision(references=[1, 0], predictions=[0, 0]),  # evaluator passes nothing
        lambda: stats.recall(references=[0, 0], predictions=[1, 0]),  # people accept nothing
        lambda: stats.called_correct(predictions=[]),
        lambda: stats.kendall_tau_b(references=[0.5, 0.5, 0.5], scores=[0.1, 0.2, 0.3]),
        lambda: stats.spearman_rho(references=[0.1], scores=[0.2]),
        lambda: stats.pair_accuracy(references=[0.5, 0.5], scores=[0.1, 0.9]),
        lambda: interrater.fleiss_kappa(ratings=[[1, 1, 1], [1, 1, 1]]),
        lambda: interrater.fleiss_kappa(ratings=np.zeros((0, 3))),
        lambda: interrater.mean_pairwise_kappa(ratings=[[0, 0, 0]]),
        lambda: interrater.leave_one_out_kappa(ratings=[[1, 1, 1], [1, 1, 1]]),
        lambda: interrater.leave_one_out_kappa(ratings=np.zeros((0, 3))),
        lambda: interrater.unanimous_share(ratings=[]),
        lambda: interrater.leave_one_out_tau(scores=[[1, 1, 1], [1, 1, 1]]),
    ],
)
def test_degenerate_input_is_nan_not_an_exception(call):
    assert math.isnan(call())


def test_kappa_is_zero_when_only_the_references_are_constant():
    assert stats.cohen_kappa(references=[1, 1, 1, 1], predictions=[1, 0, 1, 0]) == 0.0


def test_keyword_only_so_labels_cannot_be_swapped_by_position():
    with pytest.raises(TypeError):
        stats.cohen_kappa([1, 0], [1, 0])  # type: ignore[misc]
    with pytest.raises(ValueError, match="one value per image"):
        stats.accuracy(references=[1, 0], predictions=[1])


@pytest.mark.parametrize("float32", [True, False])
def test_batched_statistics_equal_the_plain_ones_on_every_resample(float32, monkeypatch):
    if not float32:  # the float64 path taken for large sets, and BLAS threads left alone
        monkeypatch.setattr(batched, "FLOAT32_EXACT", 0)
        monkeypatch.setattr(batched, "ONE_THREAD_BELOW", 0)
    rng = np.random.default_rng(3)
    n, resamples = 40, 150
    human, judged = rng.integers(0, 4, n) / 3, rng.random(n).round(1)
    ref, pred = human > 0.5, judged > 0.5
    weights = resample_counts(n, resamples=resamples, seed=5)
    indices = resample_indices(n, resamples=resamples, seed=5)
    assert np.array_equal(weights.sum(axis=1), np.full(resamples, n))
    counts = batched.confusion_counts(weights, ref, pred)
    ranks = batched.rank_statistics(weights, batched.RankPairs(human), batched.RankPairs(judged))
    plain = {
        "accuracy": stats.accuracy,
        "kappa": stats.cohen_kappa,
        "precision": stats.precision,
        "recall": stats.recall,
        "specificity": stats.specificity,
    }
    for b, rows in enumerate(indices):
        for name, function in plain.items():
            expected = function(references=ref[rows], predictions=pred[rows])
            assert batched.COUNT_STATISTICS[name](counts)[b] == pytest.approx(expected, abs=1e-12, nan_ok=True)
        assert batched.called_correct(counts)[b] == pytest.approx(stats.called_correct(predictions=pred[rows]))
        for name, function in (
            ("kendall_tau", stats.kendall_tau_b),
            ("spearman_rho", stats.spearman_rho),
            ("pair_accuracy", stats.pair_accuracy),
        ):
            expected = function(references=human[rows], scores=judged[rows])
            assert ranks[name][b] == pytest.approx(expected, abs=1e-12, nan_ok=True)


@pytest.mark.slow
def test_paired_and_weighted_bootstrap_draw_the_same_resamples():
    rng = np.random.default_rng(0)
    ref, pred = rng.random(60) < 0.5, rng.random(60) < 0.5
    plain = paired_bootstrap(stats.cohen_kappa, references=ref, predictions=pred, resamples=300, seed=9)
    fast = weighted_bootstrap(
        lambda w: batched.kappa(batched.confusion_counts(w, ref, pred)), n=60, resamples=300, seed=9
    )
    assert fast == pytest.approx(plain, abs=1e-12)
    again = paired_bootstrap(stats.cohen_kappa, references=ref, predictions=pred, resamples=300, seed=9)
    assert again == plain  # seeded: the same interval every time
    other = paired_bootstrap(stats.cohen_kappa, references=ref, predictions=pred, resamples=300, seed=10)
    assert other != plain


@pytest.mark.slow
def test_bootstrap_interval_brackets_the_estimate_and_handles_degenerate_input():
    ref = [1] * 30 + [0] * 30
    pred = [1] * 25 + [0] * 5 + [0] * 25 + [1] * 5
    low, high = paired_bootstrap(stats.accuracy, references=ref, predictions=pred, resamples=500, seed=0)
    assert low < 50 / 60 < high
    assert paired_bootstrap(stats.accuracy, references=[], predictions=[]) == (math.nan, math.nan) or all(
        math.isnan(v) for v in paired_bootstrap(stats.accuracy, references=[], predictions=[])
    )
    # κ is undefined in every resample of one class: NaN interval, no exception.
    assert all(math.isnan(v) for v in paired_bootstrap(stats.cohen_kappa, references=[1, 1], predictions=[1, 1]))
    with pytest.raises(ValueError, match="one value per image"):
        paired_bootstrap(stats.accuracy, references=[1, 0], predictions=[1])
    assert percentile_interval([1.0, 2.0, 3.0, math.nan], confidence=1.0) == (1.0, 3.0)
