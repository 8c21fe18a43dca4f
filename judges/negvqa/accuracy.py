"""NegVQA accuracies of one judge's records, with their bootstrap intervals: the figures
`summary.summarize_judge` puts together (how each is counted: `judges.negvqa.summary`'s docstring).
Pure: records in, numbers out.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from negt2ibench.core.bootstrap import percentile_interval, resample_indices

from .data import DOMAINS
from .figures import Accuracies, DomainAccuracy, DropFigures, Interval, OriginalDrop, SourceAccuracy
from .records import NegVQARecord

NAN = math.nan


def share(part: int, whole: int) -> float:
    """PART / WHOLE as a fraction.

    Args:
        part: the count of what is measured.
        whole: the count it is a share of.

    Returns:
        The fraction; NaN when WHOLE is 0.
    """
    return part / whole if whole else NAN


def _by_source(records: Sequence[NegVQARecord]) -> dict[str, list[NegVQARecord]]:
    grouped: dict[str, list[NegVQARecord]] = {}
    for record in records:
        grouped.setdefault(record.source, []).append(record)
    return dict(sorted(grouped.items()))


def _draw_sums(values: Mapping[str, np.ndarray], resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per source: the sums of its values (questions, or question pairs) in each resample of its questions."""
    sums = {}
    for offset, source in enumerate(sorted(values)):
        rows = resample_indices(len(values[source]), resamples=resamples, seed=seed + offset)
        sums[source] = values[source][rows].sum(axis=1)
    return sums


def _interval(draws: np.ndarray | None, confidence: float) -> Interval:
    return (NAN, NAN) if draws is None else percentile_interval(draws, confidence=confidence)


def _domains(sources: Mapping[str, str]) -> dict[str, list[str]]:
    """Domain → its sources, NegVQA's domains first in the paper's order, then any other."""
    order = list(DOMAINS) + sorted(set(sources.values()) - set(DOMAINS))
    return {d: sorted(s for s, of in sources.items() if of == d) for d in order if d in sources.values()}


def accuracies(records: Sequence[NegVQARecord], resamples: int, seed: int, confidence: float) -> Accuracies:
    """Overall (all questions), by source, by domain (mean of its sources), with intervals.

    Args:
        records: one judge's answered negated records.
        resamples: bootstrap resamples (0: (NaN, NaN) intervals).
        seed: the bootstrap's seed, offset by each source dataset's place in the sorted names.
        confidence: the intervals' confidence level.

    Returns:
        The questions, correct answers and accuracy overall, by domain and by source dataset.
    """
    by_source = _by_source(records)
    domain_of = {source: group[0].domain for source, group in by_source.items()}
    correct = {source: np.array([float(bool(r.correct)) for r in group]) for source, group in by_source.items()}
    sums = _draw_sums(correct, resamples, seed) if resamples > 0 else {}
    n = {source: len(values) for source, values in correct.items()}
    total = sum(n.values())
    sources: dict[str, SourceAccuracy] = {
        source: {
            "domain": domain_of[source],
            "questions": n[source],
            "correct": int(values.sum()),
            "accuracy": float(values.mean()),
            "accuracy_ci": _interval(sums[source] / n[source] if sums else None, confidence),
        }
        for source, values in correct.items()
    }
    domains: dict[str, DomainAccuracy] = {}
    for domain, members in _domains(domain_of).items():
        draws = np.mean([sums[s] / n[s] for s in members], axis=0) if sums else None
        domains[domain] = {
            "sources": members,
            "questions": sum(n[s] for s in members),
            "correct": sum(int(correct[s].sum()) for s in members),
            "accuracy": float(np.mean([correct[s].mean() for s in members])),
            "accuracy_ci": _interval(draws, confidence),
        }
    overall = np.sum(list(sums.values()), axis=0) / total if sums and total else None
    right = sum(int(values.sum()) for values in correct.values())
    return {
        "questions": total,
        "correct": right,
        "accuracy": share(right, total),
        "accuracy_ci": _interval(overall, confidence),
        "by_domain": domains,
        "by_source": sources,
    }


def _drop_figures(
    members: Sequence[str],
    macro: bool,
    *,
    values: Mapping[str, np.ndarray],
    sums: Mapping[str, np.ndarray],
    total: int,
    confidence: float,
) -> DropFigures:
    """The drop over MEMBERS' pairs (VALUES: negated, original correct), TOTAL pairs in all."""
    n = {s: len(values[s]) for s in members}
    if macro:  # a domain: the mean of its sources' accuracies
        means = np.mean([values[s].mean(axis=0) for s in members], axis=0)
        draws = np.mean([sums[s] / n[s] for s in members], axis=0) if sums else None
    else:  # overall: every pair once
        means = np.sum([values[s].sum(axis=0) for s in members], axis=0) / total
        draws = np.sum([sums[s] for s in members], axis=0) / total if sums else None
    return {
        "pairs": sum(n[s] for s in members),
        "accuracy_original": float(means[1]),
        "accuracy_negated": float(means[0]),
        "drop": float(means[1] - means[0]),
        "accuracy_original_ci": _interval(None if draws is None else draws[:, 1], confidence),
        "drop_ci": _interval(None if draws is None else draws[:, 1] - draws[:, 0], confidence),
    }


def paired_drop(
    negated: Sequence[NegVQARecord], original: Sequence[NegVQARecord], resamples: int, seed: int, confidence: float
) -> OriginalDrop:
    """Original − negated accuracy over the questions answered in both forms, paired.

    The originals' letters are read against their own key (the other letter of the negated one's,
    the seed's §2.1); their error rows are counted (`error_rows`) and, having no answer, in no pair.

    Args:
        negated: one judge's answered negated records.
        original: its original records (error rows included).
        resamples: bootstrap resamples (0: no intervals).
        seed: the bootstrap's seed.
        confidence: the intervals' confidence level.

    Returns:
        The pairs, both accuracies and the drop overall and by domain, the originals' letter
        shares; without a pair, only the counts and NaN figures.
    """
    originals = {r.question_id: r for r in original if r.error is None}
    errors = len(original) - len(originals)
    pairs = [(r, originals[r.question_id]) for r in negated if r.question_id in originals]
    grouped: dict[str, list[tuple[NegVQARecord, NegVQARecord]]] = {}
    for pair in pairs:
        grouped.setdefault(pair[0].source, []).append(pair)
    values = {s: np.array([[float(bool(n.correct)), float(bool(o.correct))] for n, o in g]) for s, g in grouped.items()}
    sums = _draw_sums(values, resamples, seed) if resamples > 0 and values else {}
    n = {source: len(v) for source, v in values.items()}
    total = sum(n.values())

    figures = functools.partial(_drop_figures, values=values, sums=sums, total=total, confidence=confidence)
    if not total:
        return {
            "pairs": 0,
            "accuracy_original": NAN,
            "accuracy_negated": NAN,
            "drop": NAN,
            "by_domain": {},
            "error_rows": errors,
        }
    every = figures(list(values), macro=False)
    domain_of = {source: group[0][0].domain for source, group in grouped.items()}
    chosen, key = sum(o.letter == "A" for _, o in pairs), sum(o.answer == "A" for _, o in pairs)
    return {  # in the order the JSON has always had: the overall figures, by domain, the letters
        "pairs": every["pairs"],
        "accuracy_original": every["accuracy_original"],
        "accuracy_negated": every["accuracy_negated"],
        "drop": every["drop"],
        "accuracy_original_ci": every["accuracy_original_ci"],
        "drop_ci": every["drop_ci"],
        "by_domain": {domain: figures(members, macro=True) for domain, members in _domains(domain_of).items()},
        "chosen_A": chosen / total,
        "key_A": key / total,
        "bias_A": (chosen - key) / total,
        "error_rows": errors,
    }
