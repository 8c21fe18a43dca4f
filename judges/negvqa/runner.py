"""`negt2ibench negvqa`: a judge answers NegVQA's questions, one record per question and form, as one more
user of the engine (`evaluator.engine.run_records`: resume by key, ranks and their merge, batches with
per-image isolation into error rows, the verdict/write thread, progress).

Each question's image is read once; its negated question (``OUT.jsonl``) and, with `original`, its
affirmative original (``OUT.original.jsonl``) are asked in the same batched call of
`JudgeAdapter.letter_probabilities` (and of `generate`, with `generate`). Questions already in an
output are not asked again, so rerunning resumes, and a later run with `original` asks only the
originals. The run's summary is written beside the results as ``OUT.run.json``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from evaluator.engine import BatchStep, Failed, Job, RecordFiles, RecordRun, run_records
from evaluator.loader import Loaded, Work
from evaluator.resultio import check_appendable
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check, non_negative_int

from ..adapters import JudgeAdapter
from ..run_record import ModeCounts, RunRecord
from .data import NegVQAData, NegVQAQuestion
from .records import (
    LETTERS,
    MAX_NEW_TOKENS,
    NEGVQA_VERSION,
    Form,
    Letter,
    NegVQARecord,
    generated_letter,
    likelier,
    negvqa_config_hash,
    original_path,
    prompt_text,
)

ERROR_KINDS = ("bad image", "judge failed")


NEGVQA_FILES = RecordFiles.for_record_type(NegVQARecord)
Answer = tuple[tuple[float, ...], str | None]  # the letters' probabilities, the written reply


@dataclass(kw_only=True)
class NegVQARun(RunRecord):
    """What one `negvqa` run did and cost. Its `outputs` are its forms (judged: answered; passed: correct)."""

    data: str
    questions: int = 0  # questions of the source (after --limit)
    malformed: list[str] = field(default_factory=list)
    asked: int = 0  # (image, prompt) pairs asked in this run

    @property
    def forms(self) -> dict[str, ModeCounts]:
        """Each form's counts (the run's `outputs`)."""
        return self.outputs

    def did_work(self) -> bool:
        """Whether this run asked its judge anything.

        Returns:
            True when it asked at least one prompt.
        """
        return bool(self.asked)

    def to_dict(self) -> dict[str, Any]:
        """The record as written to ``OUT.run.json``.

        Returns:
            The judge, where it ran, the data, the questions and malformed rows, the times, the memory,
            each form's counts and the error reasons.
        """
        return {
            "judge": self.judge,
            "hub_id": self.hub_id,
            "params": self.params,
            "device": self.device,
            "dtype": self.dtype,
            "data": self.data,
            "rank": self.rank,
            "world": self.world,
            "questions_in_source": self.questions,
            "malformed_rows": len(self.malformed),
            "malformed": self.malformed,
            "prompts_asked": self.asked,
            "load_seconds": round(self.load_seconds, 3),
            "seconds": round(self.seconds, 3),
            "seconds_per_prompt": self.seconds / self.asked if self.asked else None,
            **self._memory_fields(),
            "forms": {
                form: {
                    "out": str(c.path),
                    "answered": c.judged,
                    "errors": c.errors,
                    "correct": c.passed,
                    "already_done": c.already_done,
                }
                for form, c in self.forms.items()
            },
            "error_reasons": dict(sorted(self.error_reasons.items())),
        }

    def line(self) -> str:
        """The run in one line, as `negt2ibench negvqa` prints it.

        Returns:
            The line.
        """
        forms = "; ".join(
            f"{form}: {c.judged + c.errors} new ({c.passed} correct, {c.errors} errors), "
            f"{c.already_done} already done → {c.path}"
            for form, c in self.forms.items()
        )
        rate = f", {self.seconds / self.asked:.3g} s/prompt" if self.asked else ""
        return (
            f"{self._rank_prefix()}{self.judge} on {self.device} ({self.dtype}): {forms}. {self.questions} questions, "
            f"{len(self.malformed)} malformed rows left out; {self.asked} prompts in {self.seconds:.1f} s{rate}; "
            f"model load {self.load_seconds:.1f} s (apart); {self._memory_text()}"
        )


def _prompts(question: NegVQAQuestion, forms: Sequence[str]) -> list[tuple[str, str]]:
    """(form, prompt) for each form a question has among FORMS."""
    asked = []
    for form in forms:
        if form == "negated":
            asked.append((form, prompt_text(question.question, question.choices)))
        elif question.original_question is not None:
            asked.append((form, prompt_text(question.original_question, question.choices)))
    return asked


def _record(
    adapter: JudgeAdapter, config_hash: str, job: Job, form: str, answer: Answer | None, error: str | None = None
) -> NegVQARecord:
    """The record of JOB's question in FORM: its ANSWER read against the form's key, or the ERROR row."""
    question: NegVQAQuestion = job.work.record
    original = form == "original"
    text = question.original_question if original else question.question
    key = question.original_answer if original else question.answer
    if text is None or key is None:  # `_prompts` asks only the forms a question has
        raise ValueError(f"question {question.question_id} has no {form} form")
    fields: dict[str, Any] = {"probabilities": None, "letter": None, "correct": None}
    if answer is not None:
        scores, reply = answer
        letter = likelier(scores)
        fields = {
            "probabilities": dict(zip(LETTERS, scores, strict=True)),
            "letter": letter,
            "correct": letter == key,
            "generated": reply,
            "generated_letter": generated_letter(reply, question.choices) if reply is not None else None,
        }
    return NegVQARecord(
        judge=adapter.spec.key,
        params=adapter.spec.params,
        question_id=question.question_id,
        form=cast(Form, form),  # one of FORMS: the engine's output names
        source=question.source,
        domain=question.domain,
        question=text,
        choices=list(question.choices),
        answer=cast(Letter, key),  # the data's reader admits A or B only
        label=question.label,
        evaluator_version=NEGVQA_VERSION,
        config_hash=config_hash,
        error=error,
        **fields,
    )


def negvqa_step(
    adapter: JudgeAdapter, config_hash: str, run: NegVQARun, *, generate: bool
) -> BatchStep[dict[str, Answer], NegVQARecord]:
    """The judge's part of the engine.

    Every needed form of the batch's questions in one call, then a record per question and form
    (the engine's output names are the forms).

    Args:
        adapter: the judge (it must read option letters).
        config_hash: the run's config hash, in every record.
        run: the run's record, counting the prompts asked.
        generate: also let the judge write a reply to each prompt.

    Returns:
        The engine's step (an item that fails gets an error row per form).
    """

    def forward(pairs: Sequence[tuple[Job, Loaded]]) -> list[dict[str, Answer]]:
        asked = [_prompts(job.work.record, job.needed) for job, _ in pairs]
        images = [entry.rgb() for (_, entry), prompts in zip(pairs, asked, strict=True) for _ in prompts]
        texts = [text for prompts in asked for _, text in prompts]
        if not texts:
            return [{} for _ in pairs]
        scores = adapter.letter_probabilities(images, texts, LETTERS)
        replies: Sequence[str | None] = (
            adapter.generate(images, texts, MAX_NEW_TOKENS) if generate else [None] * len(texts)
        )
        run.asked += len(texts)
        answers, start = [], 0
        for prompts in asked:
            end = start + len(prompts)
            chunk = zip(prompts, scores[start:end], replies[start:end], strict=True)
            answers.append({form: (tuple(score), reply) for (form, _), score, reply in chunk})
            start = end
        return answers

    def records(job: Job, outcome: dict[str, Answer] | Failed) -> list[tuple[str, NegVQARecord]]:
        forms = [form for form, _ in _prompts(job.work.record, job.needed)]
        if isinstance(outcome, Failed):
            return [(form, _record(adapter, config_hash, job, form, None, outcome.reason)) for form in forms]
        return [(form, _record(adapter, config_hash, job, form, outcome[form])) for form in forms]

    return BatchStep(forward, records, failure="judge failed")


def run_negvqa(
    data: NegVQAData,
    adapter: JudgeAdapter,
    *,
    out_path: str | Path,
    original: bool = False,
    generate: bool = False,
    limit: int | None = None,
    progress: bool = True,
    num_workers: int = 0,
) -> NegVQARun:
    """Ask ADAPTER every question of DATA into OUT_PATH, skipping those already there.

    The outputs are checked before the model loads (another version or configuration is refused);
    the model is loaded apart, so a missing weight fails before any image is read.

    Args:
        data: the NegVQA questions.
        adapter: the judge.
        out_path: the negated questions' records (JSONL).
        original: also ask the originals, into `original_path(out_path)`.
        generate: also let the judge write a reply to each.
        limit: ask the first LIMIT questions only.
        progress: show a progress bar.
        num_workers: processes that decode images while the model runs.

    Returns:
        The run's record (counts, times, memory), also written beside OUT_PATH.

    Raises:
        UserError: a judge that answers yes/no only, or an output of another version or
            configuration.
        OptionError: a negative `limit`.
        MissingWeightsError: the judge's weights are absent.
    """
    if type(adapter).letter_probabilities is JudgeAdapter.letter_probabilities:
        raise UserError(f"judge {adapter.spec.key} answers yes/no questions only: NegVQA needs an option letter")
    if limit is not None:
        limit = check("limit", limit, non_negative_int)
    questions = data.questions[:limit] if limit is not None else data.questions
    paths = {"negated": Path(out_path)} | ({"original": original_path(out_path)} if original else {})
    config_hash = negvqa_config_hash(adapter.spec, dtype=adapter.dtype_name, generate=generate)
    for path in paths.values():
        check_appendable(path, NEGVQA_VERSION, config_hash, record_type=NegVQARecord)
    run = NegVQARun(
        **NegVQARun.judge_fields(adapter),
        data=data.source,
        outputs={form: ModeCounts(path) for form, path in paths.items()},
        questions=len(questions),
        malformed=list(data.malformed),
    )
    run.load(adapter)

    started = time.perf_counter()
    result = _ask_all(questions, paths, adapter, config_hash, run, generate, progress, num_workers)
    run.finish(result, adapter, started)
    run.write(out_path)  # a rerun with nothing left keeps the record of the run that did the work
    return run


def _ask_all(
    questions: Sequence[NegVQAQuestion],
    paths: dict[str, Path],
    adapter: JudgeAdapter,
    config_hash: str,
    run: NegVQARun,
    generate: bool,
    progress: bool,
    num_workers: int,
) -> RecordRun:
    """The engine's run of every question in each form of PATHS (a form's output is named by it)."""
    return run_records(
        [Job(Work(question, question), adapter.spec.key) for question in questions],
        paths,
        negvqa_step(adapter, config_hash, run, generate=generate),
        batch_size=max(1, adapter.batch_size),
        desc=f"negvqa {adapter.spec.key}",
        progress=progress,
        num_workers=num_workers,
        error_kinds=ERROR_KINDS,
        files=NEGVQA_FILES,
    )
