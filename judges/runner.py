"""Images + prompts → a judge's result records in one or all three modes, resumable, across processes.

`judge_images` loads the judge (timed apart), then, a group of images at a time, asks every
question the requested modes need — each distinct question once per image, so ``all`` asks
objects and positive statements once for ``pos`` and ``neg`` together — and writes one record
per image and mode. The run is the engine's (`evaluator.engine`, as for `negt2ibench score`):
keys already in an output are skipped, so rerunning resumes; under `accelerate launch` /
torchrun each process writes ``OUT.rank{i}.jsonl`` and the main process merges them. This
module brings the judge's `judging_step`. The summary carries the paper's Table 8 costs and is
written beside the results as the run record (`judges.run_record.JudgeRun`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.engine import BatchStep, Failed, Job, RecordRun, run_records
from evaluator.loader import Loaded, Work
from evaluator.results import ResultRecord, is_error_row
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check, non_negative_int

from .adapters import JudgeAdapter
from .questions import MODES, Question, questions_for, wording_examples
from .registry import JUDGES_VERSION
from .run_record import JudgeRun, ModeCounts
from .sources import JudgeItem
from .verdict import RecordContext, judge_error_record, judge_record

MODE_CHOICES: tuple[str, ...] = (*MODES, "all")


def modes_of(mode: str) -> tuple[str, ...]:
    """The modes a `--mode` runs: `all` → the three modes; a single mode → itself.

    Args:
        mode: `all` or one of `MODES`.

    Returns:
        The modes.

    Raises:
        UserError: an unknown mode.
    """
    if mode == "all":
        return MODES
    if mode not in MODES:
        raise UserError(f"unknown --mode {mode!r}; choose one of {', '.join(MODE_CHOICES)}")
    return (mode,)


def mode_out_path(out: str | Path, mode: str, *, several: bool) -> Path:
    """The results file of one mode.

    Args:
        out: the run's `--out`.
        mode: the mode.
        several: whether the run has several modes.

    Returns:
        `judge.jsonl` for one mode; `judge.whole.jsonl`, `judge.pos.jsonl`, `judge.neg.jsonl` for
        several.
    """
    out = Path(out)
    return out.with_name(f"{out.stem}.{mode}{out.suffix or '.jsonl'}") if several else out


def record_context(adapter: JudgeAdapter, mode: str) -> RecordContext:
    """What every record of ADAPTER's judge in MODE carries.

    Args:
        adapter: the judge.
        mode: the mode.

    Returns:
        The evaluator (`KEY/MODE`), the judges' version and the run's config hash.
    """
    spec = adapter.spec
    return RecordContext(
        evaluator=f"{spec.key}/{mode}",
        evaluator_version=JUDGES_VERSION,
        config_hash=spec.config_hash(mode=mode, dtype=adapter.dtype_name, templates=wording_examples()),
    )


def judge_one(
    adapter: JudgeAdapter,
    image: Image.Image,
    prompt: PromptRecord,
    mode: str,
    *,
    model_key: str = "upload",
    sample_index: int = 0,
) -> ResultRecord:
    """One image's record in one mode, with the questions and rules of a run.

    As the Space's "Score an image" panel asks it. Each distinct question is asked once.

    Args:
        adapter: the loaded judge.
        image: the image.
        prompt: its prompt.
        mode: `whole`, `pos` or `neg`.
        model_key: written in the record.
        sample_index: written in the record.

    Returns:
        The image's record.

    Raises:
        UserError: an unknown mode.
    """
    if mode not in MODES:
        raise UserError(f"unknown judge mode {mode!r}; choose one of {', '.join(MODES)}")
    questions = questions_for(prompt, mode)
    texts = list(dict.fromkeys(q.text for q in questions))
    answers = dict(zip(texts, adapter.yes_probability([image] * len(texts), texts), strict=True))
    return judge_record(
        prompt,
        questions,
        [answers[q.text] for q in questions],
        context=record_context(adapter, mode),
        model_key=model_key,
        sample_index=sample_index,
    )


ERROR_KINDS = ("unknown prompt id", "bad image", "judge failed")


def judging_step(
    adapter: JudgeAdapter, contexts: dict[str, RecordContext], summary: JudgeRun
) -> BatchStep[dict[str, float], ResultRecord]:
    """The judge's part of the engine.

    Every question the image's needed modes ask, each distinct text once, in one batched call; then
    one record per needed mode (the engine's output names are the modes).

    Args:
        adapter: the loaded judge.
        contexts: each mode's record context.
        summary: the run's record, counting the images and questions judged.

    Returns:
        The engine's step (forward, records; an image that fails gets an error row per mode).
    """

    def asked(job: Job) -> dict[str, list[Question]]:
        return {mode: questions_for(job.work.record, mode) for mode in job.needed}

    def forward(pairs: Sequence[tuple[Job, Loaded]]) -> list[dict[str, float]]:
        texts = [list(dict.fromkeys(q.text for qs in asked(job).values() for q in qs)) for job, _ in pairs]
        images = [entry.rgb() for (_, entry), questions in zip(pairs, texts, strict=True) for _ in questions]
        flat = adapter.yes_probability(images, [text for questions in texts for text in questions])
        answers, start = [], 0
        for questions in texts:
            answers.append(dict(zip(questions, flat[start : start + len(questions)], strict=True)))
            start += len(questions)
        return answers

    def records(job: Job, outcome: dict[str, float] | Failed) -> list[tuple[str, ResultRecord]]:
        item = job.work.item
        if isinstance(outcome, Failed):
            return [
                (
                    mode,
                    judge_error_record(
                        item.prompt_id, job.model_key, item.sample_index, outcome.reason, context=contexts[mode]
                    ),
                )
                for mode in job.needed
            ]
        summary.images += 1
        summary.questions += len(outcome)
        return [
            (
                mode,
                judge_record(
                    job.work.record,
                    questions,
                    [outcome[q.text] for q in questions],
                    context=contexts[mode],
                    model_key=job.model_key,
                    sample_index=item.sample_index,
                ),
            )
            for mode, questions in asked(job).items()
        ]

    return BatchStep(forward, records, failure="judge failed")


def _judge_all(
    items: Sequence[JudgeItem],
    index: PromptIndex,
    adapter: JudgeAdapter,
    paths: dict[str, Path],
    summary: JudgeRun,
    progress: bool,
) -> RecordRun:
    """The engine's run of every image in each mode of PATHS, counting the questions asked in SUMMARY."""

    def count_questions(mode: str, record: ResultRecord) -> None:
        if not is_error_row(record):
            summary.modes[mode].questions += len(record.questions)

    contexts = {m: record_context(adapter, m) for m in paths}
    return run_records(
        [Job(Work.look_up(item.image, index), item.model_key) for item in items],
        paths,
        judging_step(adapter, contexts, summary),
        batch_size=max(1, adapter.batch_size),
        desc=f"judge {adapter.spec.key}",
        progress=progress,
        error_kinds=ERROR_KINDS,
        on_written=count_questions,
    )


def judge_images(
    items: Sequence[JudgeItem],
    prompts: PromptIndex | Sequence[PromptRecord],
    adapter: JudgeAdapter,
    *,
    out_path: str | Path,
    mode: str = "pos",
    limit: int | None = None,
    progress: bool = True,
) -> JudgeRun:
    """Judge every image of `items` in `mode` (``all``: the three, one file each) into `out_path`.

    Loads the adapter first (timed apart; a missing weight fails before any image is read), then
    writes one record per image and mode, skipping keys already there (the run is
    `evaluator.engine`'s, as `negt2ibench score`'s). The run's record is written beside.

    Args:
        items: the images, each with its model key.
        prompts: the prompts the images are of.
        adapter: the judge.
        out_path: the results file (`mode_out_path` gives each mode's).
        mode: `whole`, `pos`, `neg` or `all`.
        limit: judge at most this many images.
        progress: show a progress bar.

    Returns:
        The run's record (counts, times, memory).

    Raises:
        UserError: an unknown mode, or a results file that cannot be appended to.
        OptionError: a negative `limit`.
        MissingWeightsError: the judge's weights are absent.
    """
    if limit is not None:
        limit = check("limit", limit, non_negative_int)
    modes = modes_of(mode)
    items = list(items)[:limit] if limit is not None else list(items)
    index = prompts if isinstance(prompts, PromptIndex) else PromptIndex(prompts)
    paths = {m: mode_out_path(out_path, m, several=len(modes) > 1) for m in modes}
    summary = JudgeRun(
        **JudgeRun.judge_fields(adapter),
        outputs={m: ModeCounts(path) for m, path in paths.items()},
        total=len(items),
    )
    summary.load(adapter)
    started = time.perf_counter()
    run = _judge_all(items, index, adapter, paths, summary, progress)
    summary.finish(run, adapter, started)
    summary.write(out_path)
    return summary
