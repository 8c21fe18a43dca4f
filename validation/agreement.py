"""Human labels + evaluator verdicts → the paper's validation tables, as one JSON-ready dict (pure).

`compute_agreement` joins the human labels with each evaluator's checked verdicts
(`validation.runs.check_results`) and computes, per evaluator, the image-level agreement
(Tables 2, 7, 9, 17) overall, by setting (Table 11) and by category (Table 12), and
element-level agreement by polarity (Table 13); for the annotators, Table 5 and the
inter-annotator references.

Only images with three annotators are compared. Images an evaluator scored that carry no label
(not annotated, or by fewer than three people), its error rows, and labelled images it did not
score are counted in its ``coverage``, never mixed in. All figures are fractions; undefined
ones are NaN here (``null`` in the JSON file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dataset_builder.vocabulary import CATEGORIES, SETTINGS, setting_label
from evaluator.results import ResultRecord
from negt2ibench.core.bootstrap import percentile_interval, resample_counts

from . import batched, interrater
from .labels import ImageLabels, LabelSet
from .probes import ProbeInput, run_probes
from .runs import EvaluatorRun

BLOCKS = ("all", "positive", "negated")  # element blocks; objects count as positive (asked affirmatively)
IMAGE_METRICS = ("accuracy", "kappa", "precision", "recall", "called_correct")
RANK_METRICS = ("kendall_tau", "spearman_rho", "pair_accuracy")
SETTING_LABELS = tuple(setting_label(p, n) for p, n in SETTINGS)


# ------------------------------------------------------------------------------------- statistics


def _interval(values: np.ndarray, confidence: float) -> list[float]:
    return list(percentile_interval(values, confidence=confidence))


def _count_block(
    references: np.ndarray, predictions: np.ndarray, weights: np.ndarray, names: dict[str, str], confidence: float
) -> dict:
    """Confusion counts and the count-based statistics (`names`: output key → batched statistic).

    `weights` is `_Cache.weights`: row 0 all ones (the estimate), then one row per resample.
    """
    counts = batched.confusion_counts(weights, references, predictions)
    block: dict = {"n": int(len(references))}
    block.update(dict(zip(("tp", "tn", "fp", "fn"), (int(c) for c in counts[0]), strict=True)))
    for key, statistic in names.items():
        values = batched.COUNT_STATISTICS[statistic](counts)
        block[key] = float(values[0])
        if len(values) > 1:
            block[f"{key}_ci"] = _interval(values[1:], confidence)
    return block


class _Cache:
    """Bootstrap draws and human-side pair matrices, shared by evaluators scored on the same images."""

    def __init__(self, resamples: int, seed: int):
        self.resamples, self.seed = resamples, seed
        self._pairs: dict[tuple, batched.RankPairs] = {}
        self._weights: dict[int, np.ndarray] = {}

    def pairs(self, keys: tuple, scores: np.ndarray) -> batched.RankPairs:
        if keys not in self._pairs:
            self._pairs[keys] = batched.RankPairs(scores)
        return self._pairs[keys]

    def weights(self, n: int) -> np.ndarray:
        """(1 + resamples, n): a row of ones (the sample itself, for the estimate), then the draws for n images.

        The estimate rides along with the resamples, so each statistic is one matrix product."""
        if n not in self._weights:
            draws = resample_counts(n, resamples=self.resamples, seed=self.seed) if self.resamples > 0 else None
            ones = np.ones((1, n))
            self._weights[n] = ones if draws is None or draws.size == 0 else np.vstack([ones, draws])
        return self._weights[n]


def image_block(
    labels: Sequence[ImageLabels], verdicts: Sequence[ResultRecord], cache: _Cache, confidence: float
) -> dict:
    """Image-level agreement of one evaluator on matched images (same order in both sequences)."""
    human_pass = np.array([label.majority for label in labels], dtype=bool)
    human_score = np.array([label.score for label in labels], dtype=float)
    judged_pass = np.array([record.passed for record in verdicts], dtype=bool)
    judged_score = np.array([record.image_score for record in verdicts], dtype=float)
    weights = cache.weights(len(labels))
    block = _count_block(human_pass, judged_pass, weights, {m: m for m in IMAGE_METRICS}, confidence)
    if len(labels) == 0:
        return block | {metric: float("nan") for metric in RANK_METRICS}
    human = cache.pairs(tuple(label.key for label in labels), human_score)
    values = batched.rank_statistics(weights, human, batched.RankPairs(judged_score))
    for metric in RANK_METRICS:
        block[metric] = float(values[metric][0])
        if len(values[metric]) > 1:
            block[f"{metric}_ci"] = _interval(values[metric][1:], confidence)
    return block


def _element_rows(labels: Sequence[ImageLabels], verdicts: Sequence[ResultRecord]) -> dict[str, list]:
    """Per element: its image's position, block, human majority and the evaluator's decision."""
    rows: dict[str, list] = {"image": [], "block": [], "human": [], "judged": []}
    for position, (label, record) in enumerate(zip(labels, verdicts, strict=True)):
        present = {o.name: o.present for o in record.objects}
        satisfied = {s.index: s.satisfied for s in record.statements}
        statements = sorted(label.prompt.statements, key=lambda s: s.index)
        decisions = [present.get(name) for name in label.prompt.objects] + [satisfied.get(s.index) for s in statements]
        for block, human, judged in zip(label.blocks, label.element_majority, decisions, strict=True):
            if judged is None:  # this evaluator made no decision on the element (e.g. a whole-prompt judge)
                continue
            rows["image"].append(position)
            rows["block"].append("positive" if block == "object" else block)
            rows["human"].append(human)
            rows["judged"].append(judged)
    return rows


def element_blocks(
    labels: Sequence[ImageLabels], verdicts: Sequence[ResultRecord], cache: _Cache, confidence: float
) -> dict:
    """Table 13: element-level agreement by polarity; intervals resample images (with their elements)."""
    rows = _element_rows(labels, verdicts)
    if not rows["image"]:
        return {}
    image = np.array(rows["image"], dtype=int)
    block_of = np.array(rows["block"])
    human, judged = np.array(rows["human"], dtype=bool), np.array(rows["judged"], dtype=bool)
    weights = cache.weights(len(labels))
    names = {
        "accuracy": "accuracy",
        "kappa": "kappa",
        "satisfied": "recall",
        "unsatisfied": "specificity",
        "balanced": "balanced",
    }
    out = {}
    for block in BLOCKS:
        chosen = np.ones(len(image), dtype=bool) if block == "all" else block_of == block
        out[block] = _count_block(human[chosen], judged[chosen], weights[:, image[chosen]], names, confidence)
    return out


def _groups(labels: Sequence[ImageLabels], attribute: Callable[[ImageLabels], str], order: Sequence[str]) -> dict:
    groups: dict[str, list[int]] = {name: [] for name in order}
    for position, label in enumerate(labels):
        groups.setdefault(attribute(label), []).append(position)
    return {name: members for name, members in groups.items() if members}


def _setting(label: ImageLabels) -> str:
    return setting_label(label.prompt.num_pos, label.prompt.num_neg)


def _category(label: ImageLabels) -> str:
    return label.prompt.category


def evaluator_block(run: EvaluatorRun, labels: LabelSet, cache: _Cache, confidence: float) -> dict:
    """Everything about one evaluator: coverage, overall, by setting and category, elements."""
    keys = sorted(k for k in run.records if k in labels.labels)
    matched = [labels.labels[k] for k in keys]
    verdicts = [run.records[k] for k in keys]
    coverage = {
        "records": len(run.records) + len(run.errors),
        "used": len(keys),
        "error_rows": len(run.errors),
        "not_annotated": sum(1 for k in run.records if k not in labels.labels and k not in labels.under_annotated),
        "under_annotated": sum(1 for k in run.records if k in labels.under_annotated),
        "labelled_not_scored": sum(1 for k in labels.labels if k not in run.records),
    }
    block = {"evaluator": run.evaluator, "source": run.source, "version": run.version, "coverage": coverage}
    block.update(image_block(matched, verdicts, cache, confidence))
    for field, attribute, order in (("by_setting", _setting, SETTING_LABELS), ("by_category", _category, CATEGORIES)):
        block[field] = {
            name: image_block([matched[i] for i in members], [verdicts[i] for i in members], cache, confidence)
            for name, members in _groups(matched, attribute, order).items()
        }
    block["elements"] = element_blocks(matched, verdicts, cache, confidence)
    return block


def _human_slice(labels: Sequence[ImageLabels]) -> dict:
    passes = np.array([label.passes for label in labels], dtype=bool).reshape(len(labels), -1)
    scores = np.array([label.scores for label in labels], dtype=float).reshape(len(labels), -1)
    return {
        "n": len(labels),
        "majority_pass": float(np.mean([label.majority for label in labels])) if labels else float("nan"),
        "fleiss_kappa": interrater.fleiss_kappa(ratings=passes),
        "pairwise_kappa": interrater.mean_pairwise_kappa(ratings=passes),
        "loo_kappa": interrater.leave_one_out_kappa(ratings=passes),
        "unanimous": interrater.unanimous_share(ratings=passes),
        "loo_tau": interrater.leave_one_out_tau(scores=scores),
    }


def human_block(labels: LabelSet) -> dict:
    """Table 5 and the inter-annotator references of Tables 2, 11, 12 and 13."""
    matched = [labels.labels[k] for k in sorted(labels.labels)]
    block = {"annotators": len(labels.annotators), "coverage": labels.coverage()}
    block.update(_human_slice(matched))
    ratings: dict[str, list] = {name: [] for name in BLOCKS}
    for label in matched:
        for column, kind in zip(zip(*label.elements, strict=True), label.blocks, strict=True):
            ratings["all"].append(column)
            ratings["negated" if kind == "negated" else "positive"].append(column)
    block["elements"] = {
        name: {
            "n": len(rows),
            "fleiss_kappa": interrater.fleiss_kappa(ratings=rows),
            "unanimous": interrater.unanimous_share(ratings=rows),
            "pairwise_kappa": interrater.mean_pairwise_kappa(ratings=rows),
            "loo_kappa": interrater.leave_one_out_kappa(ratings=rows),
        }
        for name, rows in ratings.items()
    }
    for field, attribute, order in (("by_setting", _setting, SETTING_LABELS), ("by_category", _category, CATEGORIES)):
        block[field] = {
            name: _human_slice([matched[i] for i in members])
            for name, members in _groups(matched, attribute, order).items()
        }
    return block


def compute_agreement(
    labels: LabelSet,
    runs: Sequence[EvaluatorRun],
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    progress: Callable[[str], None] | None = None,
    probe_inputs: Mapping[str, Any] | None = None,
) -> dict:
    """The whole agreement report: ``{"n_images", "options", "human", "evaluators", ["probes"]}``.

    `resamples` = 0 skips the intervals (no ``*_ci`` keys). `progress` is called with each
    evaluator's name before it is computed (the CLI's progress bar). `probe_inputs` reach the
    probes as `ProbeInput.extra` (``{"negvqa": ...}``).
    """
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        raise ValueError(f"evaluator names must be unique, got {names}")
    cache = _Cache(resamples, seed)
    evaluators = {}
    for run in runs:
        if progress is not None:
            progress(run.name)
        evaluators[run.name] = evaluator_block(run, labels, cache, confidence)
    report = {
        "n_images": len(labels.labels),
        "options": {"resamples": resamples, "seed": seed, "confidence": confidence},
        "human": human_block(labels),
        "evaluators": evaluators,
    }
    probes = run_probes(
        ProbeInput(
            labels=labels,
            runs=tuple(runs),
            evaluators=evaluators,
            resamples=resamples,
            seed=seed,
            extra=dict(probe_inputs or {}),
        )
    )
    if probes:
        report["probes"] = probes
    return report
