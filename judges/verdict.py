"""A judge's answers → the result record `agree` and `report` read (pure: no model, no files).

Rules (docs/validation.md): an element is satisfied when its satisfaction probability is > 0.5 (p_yes,
or 1 - p_yes for a negated statement asked affirmatively); the image passes when every element
is satisfied; the continuous score is the mean satisfaction probability (``whole``: p itself).
Records keep the scorer's shape: `objects` (present = p > 0.5, confidence = p, no box) and
`statements` (satisfied, and one cause when not: ``subject_missing`` / ``target_missing`` when
the judge said that object is absent, else ``forbidden_rendered`` for a negated statement and
``wrong_value`` for a positive one), plus every question with its p_yes and p_satisfied.
A ``whole`` record has no objects or statements: one question judged the whole prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dataset_builder.records import PromptRecord, Statement
from evaluator.results import Cause, ObjectResult, QuestionResult, ResultRecord, StatementResult

from .questions import Question

THRESHOLD = 0.5


@dataclass(frozen=True)
class RecordContext:
    """What every record of one run shares: who judged, with which version and config."""

    evaluator: str  # "<judge key>/<mode>"
    evaluator_version: str
    config_hash: str


def _cause(statement: Statement, absent: set[str]) -> Cause:
    if statement.subject in absent:
        return "subject_missing"
    if statement.target is not None and statement.target in absent:
        return "target_missing"
    return "forbidden_rendered" if statement.negated else "wrong_value"


def _statement_results(
    prompt: PromptRecord, by_element: dict[str, QuestionResult], absent: set[str]
) -> list[StatementResult]:
    """The prompt's statements that were asked about: satisfied where P(satisfied) > 0.5, else a cause."""
    statements = []
    for statement in prompt.statements:
        answer = by_element.get(f"statement:{statement.index}")
        if answer is None:
            continue
        satisfied = answer.p_satisfied > THRESHOLD
        statements.append(
            StatementResult(
                index=statement.index,
                polarity=statement.polarity,
                satisfied=satisfied,
                cause=None if satisfied else _cause(statement, absent),
            )
        )
    return statements


def judge_record(
    prompt: PromptRecord,
    questions: Sequence[Question],
    p_yes: Sequence[float],
    *,
    context: RecordContext,
    model_key: str,
    sample_index: int,
) -> ResultRecord:
    """The record of one image from the judge's P("yes") for each of `questions` (same order).

    Args:
        prompt: the image's prompt.
        questions: the questions asked (`questions_for`).
        p_yes: the judge's P("yes") of each.
        context: the run's evaluator, version and config hash.
        model_key: the image's model key.
        sample_index: the image's sample index.

    Returns:
        The record: objects present and statements satisfied where P(satisfied) > 0.5, the cause of
        each failed statement, passed when every answer satisfies, `score` the mean P(satisfied).

    Raises:
        ValueError: not one answer per question, or no question.
    """
    if len(questions) != len(p_yes):
        raise ValueError(f"{len(questions)} questions but {len(p_yes)} answers")
    if not questions:
        raise ValueError(f"no questions for prompt {prompt.prompt_id!r}")
    answered = [
        QuestionResult(element=q.element, question=q.text, p_yes=float(p), p_satisfied=float(q.satisfaction(p)))
        for q, p in zip(questions, p_yes, strict=True)
    ]
    by_element = {answer.element: answer for answer in answered}
    objects = [
        ObjectResult(name=element.split(":", 1)[1], present=a.p_satisfied > THRESHOLD, confidence=a.p_satisfied)
        for element, a in by_element.items()
        if element.startswith("object:")
    ]
    absent = {obj.name for obj in objects if not obj.present}
    statements = _statement_results(prompt, by_element, absent)
    satisfaction = [a.p_satisfied for a in answered]
    return ResultRecord(
        prompt_id=prompt.prompt_id,
        model_key=model_key,
        sample_index=sample_index,
        passed=all(p > THRESHOLD for p in satisfaction),
        objects=objects,
        statements=statements,
        evaluator_version=context.evaluator_version,
        config_hash=context.config_hash,
        evaluator=context.evaluator,
        score=sum(satisfaction) / len(satisfaction),
        questions=answered,
    )


def judge_error_record(
    prompt_id: str, model_key: str, sample_index: int, message: str, *, context: RecordContext
) -> ResultRecord:
    """An image the judge could not answer for (bad image, unknown prompt id): failed, with the reason.

    Args:
        prompt_id: the image's prompt id.
        model_key: its model key.
        sample_index: its sample index.
        message: why it was not judged.
        context: the run's evaluator, version and config hash.

    Returns:
        The error row.
    """
    return ResultRecord(
        prompt_id=prompt_id,
        model_key=model_key,
        sample_index=sample_index,
        passed=False,
        evaluator_version=context.evaluator_version,
        config_hash=context.config_hash,
        evaluator=context.evaluator,
        error=message,
    )
