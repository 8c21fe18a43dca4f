"""Hand-made annotation and result records for the validation tests (test doubles: no scorer, no people).

`answers(prompt, passes, way)` gives the raw answers (to affirmative questions) of an annotator
who passes the image, or fails it in one of two ways: a statement answered wrongly, or the first
object not seen. `result(prompt, passed)` gives an evaluator record whose elements agree with
its verdict. `study(confusion)` builds a labelled set whose majority labels and evaluator
verdicts give exactly the requested confusion matrix.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dataset_builder.corpus import build_corpus
from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import CATEGORIES, SETTINGS, setting_name
from evaluator.results import ObjectResult, ResultRecord, StatementResult
from validation.annotations import AnnotationRecord

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@functools.lru_cache(maxsize=1)
def corpus() -> dict[str, PromptRecord]:
    return {record.prompt_id: record for record in build_corpus()}


def prompts_round_robin(n: int) -> list[PromptRecord]:
    """`n` distinct prompts cycling over categories and settings (even spread)."""
    index = corpus()
    cells = [(c, setting_name(p, q)) for c in CATEGORIES for p, q in SETTINGS]
    return [index[f"{c}_{s}_{i // len(cells):03d}"] for i, (c, s) in ((i, cells[i % len(cells)]) for i in range(n))]


def answers(prompt: PromptRecord, passes: bool, way: int = 0) -> tuple[dict[str, bool], dict[str, bool]]:
    """Raw answers that make the annotator pass, or fail (way 0: last statement wrong; 1: first object unseen)."""
    objects = {name: True for name in prompt.objects}
    statements = {str(s.index): not s.negated for s in prompt.statements}
    if not passes:
        if way == 0:
            last = str(max(s.index for s in prompt.statements))
            statements[last] = not statements[last]
        else:
            objects[prompt.objects[0]] = False
    return objects, statements


def annotation(
    prompt: PromptRecord,
    annotator: str,
    passes: bool,
    *,
    way: int = 0,
    model_key: str = "m",
    sample_index: int = 0,
    minute: int = 0,
) -> AnnotationRecord:
    objects, statements = answers(prompt, passes, way)
    return AnnotationRecord(
        prompt_id=prompt.prompt_id,
        model_key=model_key,
        sample_index=sample_index,
        annotator=annotator,
        objects=objects,
        statements=statements,
        created_at=T0 + timedelta(minutes=minute),
    )


def result(
    prompt: PromptRecord,
    passed: bool,
    *,
    model_key: str = "m",
    sample_index: int = 0,
    evaluator: str = "negt2ibench/current",
    score: float | None = None,
    config_hash: str = "h1",
    error: str | None = None,
) -> ResultRecord:
    """An evaluator record: all elements satisfied when `passed`, else the last statement fails."""
    last = max(s.index for s in prompt.statements)
    statements = [
        StatementResult(
            index=s.index,
            polarity=s.polarity,
            satisfied=passed or s.index != last,
            cause=None if passed or s.index != last else "wrong_value",
        )
        for s in prompt.statements
    ]
    return ResultRecord(
        prompt_id=prompt.prompt_id,
        model_key=model_key,
        sample_index=sample_index,
        passed=passed and error is None,
        objects=[ObjectResult(name=n, present=True, confidence=0.9) for n in prompt.objects] if not error else [],
        statements=statements if not error else [],
        evaluator_version="1.0.0",
        config_hash=config_hash,
        evaluator=evaluator,
        score=score,
        error=error,
    )


RATER_NAMES = ("ann", "bob", "cat")


def study(tp: int, tn: int, fp: int, fn: int, *, evaluator: str = "negt2ibench/current"):
    """(annotations, results) over tp+tn+fp+fn images whose majority label × verdict is that confusion.

    Accepted images alternate 3-of-3 and 2-of-3 passes, rejected ones 0-of-3 and 1-of-3, with the
    failing annotator alternating between the two ways of failing.
    """
    cells = [(True, True)] * tp + [(False, False)] * tn + [(False, True)] * fp + [(True, False)] * fn
    records, results = [], []
    for i, (prompt, (human, judged)) in enumerate(zip(prompts_round_robin(len(cells)), cells, strict=True)):
        passes = [True, True, i % 2 == 0] if human else [False, False, i % 2 == 0]
        for slot, name in enumerate(RATER_NAMES):
            records.append(annotation(prompt, name, passes[slot], way=(i + slot) % 2, minute=i))
        results.append(result(prompt, judged, evaluator=evaluator))
    return records, results


def write_jsonl(records, path: Path) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    return path
