"""The negated-question probe (paper Table 10): how a judge's answers move when a negated
statement is asked in negated form instead of affirmatively. Pure: records in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from evaluator.results import ResultRecord
from negt2ibench.core.errors import UserError


class ProbeError(UserError, ValueError):
    """The two runs cannot be compared (not one judge's pos and neg runs)."""


def _judge_and_mode(records: list[ResultRecord], expected_mode: str, argument: str) -> str | None:
    evaluators = {record.evaluator for record in records}
    judges = set()
    for evaluator in evaluators:
        judge, _, mode = evaluator.rpartition("/")
        if mode != expected_mode:
            raise ProbeError(
                f"{argument} must be a judge's {expected_mode!r} run (evaluator '<judge>/{expected_mode}'), "
                f"got evaluator {evaluator!r}"
            )
        judges.add(judge)
    if len(judges) > 1:
        raise ProbeError(f"{argument} mixes judges {', '.join(sorted(judges))}: pass one judge's run")
    return next(iter(judges), None)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def negation_probe(pos_records: Iterable[ResultRecord], neg_records: Iterable[ResultRecord]) -> dict:
    """Flip rate, complement error and called-correct of one judge's ``pos`` and ``neg`` runs.

    Description: every negated statement is asked twice, affirmatively in ``pos`` ("Is the cup
    red?") and in negated form in ``neg`` ("Is the cup not red?"). A judge that reads negation
    answers the two with opposite words and complementary probabilities.

    Images are paired by (model_key, prompt_id, sample_index); error rows and images missing from
    either run are left out, and so are statements without a question in both records.

    Args:
        pos_records: the result records of the judge's ``pos`` run (evaluator ``"<judge>/pos"``).
        neg_records: those of its ``neg`` run (evaluator ``"<judge>/neg"``).

    Returns:
        A dict: ``judge``: the judge key; ``n_images``: paired images; ``n_statements``: paired
        negated statements; ``flips``: how many of them changed their raw yes/no answer;
        ``flip_rate`` in [0, 1]: flips / n_statements (1 = every answer's word changed, as it
        should when the wording is negated); ``complement_error`` in [0, 1]: mean
        |p_pos + p_neg − 1| of the raw P("yes"), 0 when the two answers are complementary;
        ``called_correct_pos`` / ``called_correct_neg`` in [0, 1]: share of the paired images
        each mode passes. A figure with nothing to average over is NaN (never an error).

    Raises:
        ProbeError: the runs are not one judge's pos and neg runs.

    Example:
        two images; image A's negated statement gets p_yes 0.9 ("red?") then 0.2 ("not red?"):
        a flip, |0.9 + 0.2 - 1| = 0.1; image B's gets 0.7 then 0.6: no flip, error 0.3.
        flip_rate 0.5, complement_error 0.2.
    """
    pos = [record for record in pos_records if record.error is None]
    neg = [record for record in neg_records if record.error is None]
    judge_pos = _judge_and_mode(pos, "pos", "pos_records")
    judge_neg = _judge_and_mode(neg, "neg", "neg_records")
    if judge_pos and judge_neg and judge_pos != judge_neg:
        raise ProbeError(f"the pos run is judge {judge_pos!r} but the neg run is judge {judge_neg!r}")
    neg_by_key = {record.key: record for record in neg}
    pairs = [(record, neg_by_key[record.key]) for record in pos if record.key in neg_by_key]
    flips, errors = 0, []
    for pos_record, neg_record in pairs:
        pos_p = {q.element: q.p_yes for q in pos_record.questions}
        neg_p = {q.element: q.p_yes for q in neg_record.questions}
        for statement in pos_record.statements:
            element = f"statement:{statement.index}"
            if statement.polarity != "negated" or element not in pos_p or element not in neg_p:
                continue
            p_pos, p_neg = pos_p[element], neg_p[element]
            flips += (p_pos > 0.5) != (p_neg > 0.5)
            errors.append(abs(p_pos + p_neg - 1.0))
    return {
        "judge": judge_pos or judge_neg,
        "n_images": len(pairs),
        "n_statements": len(errors),
        "flips": flips,
        "flip_rate": flips / len(errors) if errors else math.nan,
        "complement_error": _mean(errors),
        "called_correct_pos": _mean([float(p.passed) for p, _ in pairs]),
        "called_correct_neg": _mean([float(n.passed) for _, n in pairs]),
    }
