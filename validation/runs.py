"""One evaluator's verdicts, checked against the corpus before any statistic sees them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dataset_builder.records import PromptRecord
from evaluator.results import ResultRecord, is_error_row
from negt2ibench.core.errors import UserError

from .annotations import ImageKey


@dataclass(frozen=True)
class EvaluatorRun:
    """One evaluator's checked verdicts: usable records by image, and its error rows."""

    name: str
    source: str
    records: Mapping[ImageKey, ResultRecord]
    errors: frozenset[ImageKey]
    evaluator: str
    version: str  # "evaluator_version config_hash"


def _element_mismatch(record: ResultRecord, prompt: PromptRecord) -> str | None:
    if record.objects and sorted(o.name for o in record.objects) != sorted(prompt.objects):
        return f"objects {sorted(o.name for o in record.objects)}, prompt has {sorted(prompt.objects)}"
    if record.statements:
        theirs = sorted((s.index, s.polarity) for s in record.statements)
        ours = sorted((s.index, s.polarity) for s in prompt.statements)
        if theirs != ours:
            return f"statements {theirs}, prompt has {ours}"
    return None


def check_results(
    records: Sequence[ResultRecord], prompts: Mapping[str, PromptRecord], *, name: str, source: str
) -> EvaluatorRun:
    """Validate one results file's records; `UserError` (one line) for anything that would mislead.

    Refused: no records; records of several evaluators or evaluator versions/configs; two
    records of one image; an unknown prompt id; objects or statements that differ from the
    prompt's (results of another corpus version).
    """
    if not records:
        raise UserError(f"{source}: no result records")
    evaluators = sorted({r.evaluator for r in records})
    versions = sorted({f"{r.evaluator_version} {r.config_hash}" for r in records})
    if len(evaluators) > 1 or len(versions) > 1:
        raise UserError(
            f"{source}: holds results of several evaluators/configs ({', '.join(evaluators)}; {', '.join(versions)}); "
            "pass one file per evaluator"
        )
    usable: dict[ImageKey, ResultRecord] = {}
    errors: set[ImageKey] = set()
    for record in records:
        if record.key in usable or record.key in errors:
            raise UserError(f"{source}: two records of {record.model_key}/{record.prompt_id}#{record.sample_index}")
        prompt = prompts.get(record.prompt_id)
        if prompt is None:
            raise UserError(
                f"{source}: unknown prompt id {record.prompt_id!r}: results of another corpus (pass --prompts)"
            )
        problem = _element_mismatch(record, prompt)
        if problem:
            raise UserError(
                f"{source}: {record.prompt_id} does not match the prompt ({problem}): results of another corpus version"
            )
        if is_error_row(record) or record.image_score is None:
            errors.add(record.key)
        else:
            usable[record.key] = record
    return EvaluatorRun(name, source, usable, frozenset(errors), evaluators[0], versions[0])
