"""The verdict on one image: every statement of the prompt decided by the rules, with its cause.

Pure: a prompt record and what perception saw in, a `ResultRecord` out; no model, no file.
Semantics (docs/scoring.md): a statement holds iff its objects are present and (positive) its
predicate is emitted / (negated) it is not. A failed statement gets exactly one cause, the
first that applies in this order:

1. ``subject_missing``    the statement's subject was not detected;
2. ``target_missing``     (relations) the target was not detected;
3. ``forbidden_rendered`` negated: the forbidden value / relation was measured;
4. ``wrong_value``        positive: another value (attributes), or the other predicate of the
   same axis (relations: asked left of, got right of; asked near, got far from);
5. ``dead_zone``          positive relation: nothing emitted on the statement's axis.

A negated relation that holds while the rule emitted no predicate at all for the pair is a
*dead-zone pass* (`dead_zone_pass=True`): the paper's Table 19 definition ("the relation
evaluator returns no predicate for that object pair"). A pass with another predicate emitted
(asked "not left of", measured "above") is an ordinary pass. Axes: directional horizontal / vertical, comparative
area / height, proximity, depth (see `rules.RELATION_AXES`).

Empty masks. A present object whose mask came back empty (SAM, or the detector's own mask, found
no pixel in its box) is present but unmeasurable; its `ObjectResult.mask_empty` is True.

- Relations: no predicate is emitted for any pair it is part of (nothing can be measured on
  zero pixels, and a box is not a mask). A positive statement about the pair fails as
  ``dead_zone``; a negated one holds as a dead-zone pass, in every relation category, proximity
  included (the paper's Table 19 counts 3 such proximity passes). The measurements say which
  mask was empty (`empty_mask_subject`, `empty_mask_target`).
- Attributes: perception scores the object's box crop instead (`evaluator.perception`), so it has
  values as any present object and its statements are judged as usual.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dataset_builder.records import PromptRecord, Statement
from dataset_builder.vocabulary import CATEGORY_VOCABULARY

from .config import EVALUATOR_VERSION, PRESETS, EvaluatorConfig
from .observation import ImageObservation, ObjectObservation
from .results import Cause, ObjectResult, ResultRecord, StatementResult
from .rules import RelationResult, attribute_values, axis_of, relation_predicates


def decide_statements(
    prompt: PromptRecord,
    observation: ImageObservation,
    *,
    model_key: str,
    sample_index: int,
    config: EvaluatorConfig = PRESETS["current"],
) -> ResultRecord:
    """Decide every statement of `prompt` on what perception saw in one image.

    Raises ValueError when the observation cannot be judged (a perception bug, not a verdict):
    a present attribute object without `value_scores`, a present relation object without a mask,
    or a depth prompt with both objects present but no disparity map.
    """
    objects = [_object_result(observation.get(name)) for name in prompt.objects]
    relations: dict[tuple[str, str], RelationResult] = {}
    statements = [
        _decide_statement(prompt, statement, observation, config, relations) for statement in prompt.statements
    ]
    passed = all(obj.present for obj in objects) and all(result.satisfied for result in statements)
    elements = [obj.present for obj in objects] + [result.satisfied for result in statements]
    return ResultRecord(
        prompt_id=prompt.prompt_id,
        model_key=model_key,
        sample_index=sample_index,
        passed=passed,
        objects=objects,
        statements=statements,
        evaluator_version=EVALUATOR_VERSION,
        config_hash=config.config_hash,
        evaluator=f"negt2ibench/{config.name}",
        score=sum(elements) / len(elements),
    )


def error_record(
    prompt_id: str,
    model_key: str,
    sample_index: int,
    reason: str,
    config: EvaluatorConfig = PRESETS["current"],
) -> ResultRecord:
    """The record of an image that could not be scored (unreadable, perception failed): not passed."""
    if not reason.strip():
        raise ValueError("an error record needs a reason")
    return ResultRecord(
        prompt_id=prompt_id,
        model_key=model_key,
        sample_index=sample_index,
        passed=False,
        evaluator_version=EVALUATOR_VERSION,
        config_hash=config.config_hash,
        error=reason,
        evaluator=f"negt2ibench/{config.name}",
    )


def _object_result(seen: ObjectObservation) -> ObjectResult:
    box = None if seen.box is None else [float(v) for v in seen.box]
    mask_empty = bool(seen.present and seen.mask is not None and not np.any(seen.mask))
    return ObjectResult(
        name=seen.name, present=bool(seen.present), confidence=float(seen.confidence), box=box, mask_empty=mask_empty
    )


def _decide_statement(
    prompt: PromptRecord,
    statement: Statement,
    observation: ImageObservation,
    config: EvaluatorConfig,
    relations: dict[tuple[str, str], RelationResult],
) -> StatementResult:
    if statement.predicate not in CATEGORY_VOCABULARY[prompt.category]:
        raise ValueError(
            f"{prompt.prompt_id} statement {statement.index}: {statement.predicate!r} is not a "
            f"{prompt.category} {'value' if prompt.kind == 'attribute' else 'predicate'}"
        )
    subject = observation.get(statement.subject)
    if not subject.present:
        return _failed(statement, "subject_missing")
    if prompt.kind == "attribute":
        return _judge_attribute(prompt, statement, subject, config)
    if statement.target is None:
        raise ValueError(f"{prompt.prompt_id} statement {statement.index}: a relation needs a target")
    target = observation.get(statement.target)
    if not target.present:
        return _failed(statement, "target_missing")
    key = (statement.subject, statement.target)
    if key not in relations:
        mask_a = _mask_of(prompt, subject)
        mask_b = _mask_of(prompt, target)
        if not mask_a.any() or not mask_b.any():  # present but unmeasurable: no predicate at all
            relations[key] = RelationResult(
                frozenset(), {"empty_mask_subject": not mask_a.any(), "empty_mask_target": not mask_b.any()}
            )
        else:
            relations[key] = relation_predicates(prompt.category, mask_a, mask_b, observation.disparity, config)
    return _judge_relation(prompt, statement, relations[key])


def _judge_attribute(
    prompt: PromptRecord, statement: Statement, subject: ObjectObservation, config: EvaluatorConfig
) -> StatementResult:
    if subject.value_scores is None:
        raise ValueError(
            f"{prompt.prompt_id}: object {subject.name!r} is present but has no {prompt.category} value scores"
        )
    values = attribute_values(subject.value_scores, prompt.category, config)
    vocabulary = CATEGORY_VOCABULARY[prompt.category]
    observed = [value for value in vocabulary if value in values]
    scores = {value: float(subject.value_scores[value]) for value in vocabulary}
    measurements: dict[str, Any] = {
        "scores": scores,
        "max_score": max(scores.values()),
        "margin": config.color_margin if prompt.category == "color" else config.material_margin,
    }
    has_value = statement.predicate in values
    cause: Cause
    if statement.negated:
        satisfied, cause = not has_value, "forbidden_rendered"
    else:
        satisfied, cause = has_value, "wrong_value"  # an object always has some value
    return StatementResult(
        index=statement.index,
        polarity=statement.polarity,
        satisfied=satisfied,
        cause=None if satisfied else cause,
        observed=observed,
        measurements=measurements,
    )


def _judge_relation(prompt: PromptRecord, statement: Statement, relation: RelationResult) -> StatementResult:
    emitted = relation.predicates
    on_axis = [p for p in axis_of(prompt.category, statement.predicate) if p in emitted]
    observed = [p for p in CATEGORY_VOCABULARY[prompt.category] if p in emitted]
    holds = statement.predicate in emitted
    dead_zone_pass = False
    cause: Cause
    if statement.negated:
        satisfied, cause = not holds, "forbidden_rendered"
        dead_zone_pass = satisfied and not emitted
    else:
        satisfied = holds
        cause = "wrong_value" if on_axis else "dead_zone"
    return StatementResult(
        index=statement.index,
        polarity=statement.polarity,
        satisfied=satisfied,
        cause=None if satisfied else cause,
        observed=observed,
        measurements=dict(relation.measurements),
        dead_zone_pass=dead_zone_pass,
    )


def _mask_of(prompt: PromptRecord, seen: ObjectObservation) -> np.ndarray:
    if seen.mask is None:
        raise ValueError(f"{prompt.prompt_id}: object {seen.name!r} is present but has no mask")
    return seen.mask


def _failed(statement: Statement, cause: Cause) -> StatementResult:
    return StatementResult(index=statement.index, polarity=statement.polarity, satisfied=False, cause=cause)
