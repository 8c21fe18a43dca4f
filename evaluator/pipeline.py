"""Images + prompt records → result records, streamed to JSONL, resumable, across processes.

`score_image` scores one image (the Space and `explain` call it). `score_images` scores a
whole source (`evaluator.sources`: a folder of `{prompt_id}_{sample_index}.png`, an `images`
dataset split of a local dataset folder or a Hub repo, or a single image file with a prompt id).
The run itself is the engine's (`evaluator.engine`: resume by key, ranks and their
merge, batches with per-image isolation, the verdict/write thread, progress); this module brings
the scorer's `scoring_step` (perception's forward, then the verdicts). Bad
images and unknown prompt ids become error rows and the run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_builder.layout import rank_path
from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import EvaluatorConfig
from evaluator.engine import BatchStep, Failed, Job, RecordRun, run_batches, run_records
from evaluator.images import ImageSource, load_image
from evaluator.loader import Loaded, Work, resolve_num_workers
from evaluator.models.inputs import InputPreparer
from evaluator.observation import ImageObservation
from evaluator.perception_types import Perception, StreamingPerception
from evaluator.results import ResultRecord, scored_now
from evaluator.sources import ImageItem, resolve_source
from evaluator.verdict import decide_statements, error_record
from negt2ibench.core.names import check_split_name
from negt2ibench.core.options import check, non_negative_int, positive_int

RESULTS = "results"  # the one output of a scoring run (and of a GenEval run)


@dataclass
class ScoreSummary:
    out_path: Path
    total: int = 0  # images in the source (after --limit)
    already_done: int = 0  # skipped because the output had them
    scored: int = 0  # new rows without error
    errors: int = 0  # new error rows
    passed: int = 0  # new rows that passed
    seconds: float = 0.0
    error_reasons: dict[str, int] = field(default_factory=dict)
    rank: int = 0  # this process, under a launcher
    world: int = 1  # processes in the run; each wrote its share to rank_path(out_path, rank)
    skipped_files: list[str] = field(default_factory=list)  # files of a folder source not named as images

    @classmethod
    def of_run(
        cls, run: RecordRun, *, out_path: Path, total: int, started: float, output: str = RESULTS
    ) -> ScoreSummary:
        """What `run_records` did to `output`, as a summary; `started` is the run's `time.perf_counter()`."""
        counts = run.outputs[output]
        return cls(
            out_path=out_path,
            total=total,
            already_done=counts.already_done,
            scored=counts.written - counts.errors,
            errors=counts.errors,
            passed=counts.passed,
            seconds=time.perf_counter() - started,
            error_reasons=dict(counts.error_reasons),
            rank=run.rank,
            world=run.world,
        )

    def skipped_line(self, show: int = 5) -> str:
        """The files of a folder source that were not scored, or "" when none were skipped."""
        if not self.skipped_files:
            return ""
        names = ", ".join(self.skipped_files[:show]) + (" ..." if len(self.skipped_files) > show else "")
        return (
            f"skipped {len(self.skipped_files)} file(s) not named {{prompt_id}}_{{sample_index}}.png "
            f"(or .jpg, .webp, .bmp, .tiff): {names}"
        )

    def line(self) -> str:
        rate = f", {self.seconds / max(self.scored + self.errors, 1):.2f} s/image" if self.scored + self.errors else ""
        where = str(self.out_path)
        if self.world > 1:
            where = f"{rank_path(self.out_path, self.rank).name}, merged into {self.out_path}"
        prefix = f"[rank {self.rank}/{self.world}] " if self.world > 1 else ""
        return (
            f"{prefix}{self.scored + self.errors} new rows "
            f"({self.scored} scored, {self.passed} passed, {self.errors} errors), "
            f"{self.already_done} already done, {self.total} in source{rate} → {where}"
        )


# -- scoring ---------------------------------------------------------------------------------


def score_image(
    image: ImageSource,
    prompt: PromptRecord,
    perception: Perception,
    *,
    config: EvaluatorConfig,
    model_key: str = "upload",
    sample_index: int = 0,
) -> tuple[ResultRecord, ImageObservation]:
    """Score one image (raises `ImageError` for an image that cannot be scored)."""
    rgb = load_image(image)
    observation = perception.observe([rgb], [prompt])[0]
    record = decide_statements(prompt, observation, model_key=model_key, sample_index=sample_index, config=config)
    record.scored_at = scored_now()
    return record, observation


ERROR_KINDS = ("unknown prompt id", "bad image", "perception failed", "verdict failed")


def scoring_step(perception: Perception, config: EvaluatorConfig) -> BatchStep[ImageObservation, ResultRecord]:
    """The scorer's part of the engine: perception's forward on a batch, then each image's verdict.

    A `StreamingPerception` (`ModelPerception`) gets the loader's inputs and computes only the
    masks a rule reads; any other `Perception` (a test double) gets the images and prompts alone."""
    streaming = perception if isinstance(perception, StreamingPerception) else None

    def prepare(jobs: Sequence[Job]) -> InputPreparer | None:
        categories = {job.work.prompt.category for job in jobs if job.work.prompt is not None}
        return streaming.worker_preparer(categories) if streaming is not None else None

    def forward(pairs: Sequence[tuple[Job, Loaded]]) -> list[ImageObservation]:
        prompts = [job.work.record for job, _ in pairs]
        if streaming is not None:  # the workers' pixels as they came, their inputs, only the masks a rule reads
            frames = [entry.frame() for _, entry in pairs]
            return streaming.observe(frames, prompts, prepared=[entry.prepared for _, entry in pairs], masks="rules")
        return perception.observe([entry.rgb() for _, entry in pairs], prompts)

    def records(job: Job, outcome: ImageObservation | Failed) -> list[tuple[str, ResultRecord]]:
        item = job.work.item
        if isinstance(outcome, Failed):
            record = error_record(item.prompt_id, job.model_key, item.sample_index, outcome.reason, config)
            record.scored_at = scored_now()
            return [(RESULTS, record)]
        try:
            record = decide_statements(
                job.work.record, outcome, model_key=job.model_key, sample_index=item.sample_index, config=config
            )
        except ValueError as error:  # an observation the rules cannot judge: record it, go on
            record = error_record(item.prompt_id, job.model_key, item.sample_index, f"verdict failed: {error}", config)
        record.scored_at = scored_now()  # here, not in the verdict: the rules stay free of the clock
        return [(RESULTS, record)]

    return BatchStep(forward, records, failure="perception failed", prepare=prepare if streaming is not None else None)


def score_batches(
    work: Sequence[Work],
    batches: Sequence[Sequence[int]],
    perception: Perception,
    *,
    config: EvaluatorConfig,
    model_key: str,
    on_record: Callable[[ResultRecord], None],
    on_batch: Callable[[int], None] | None = None,
    num_workers: int | None = None,
) -> None:
    """Score `work` in `batches` (lists of positions in it) through the engine, without files:
    `on_record` gets every record, in order, from the verdict thread (`Evaluator.score_many`).

    `num_workers`: loader processes that decode (and on the CPU preprocess) the images; None
    takes `evaluator.loader.default_num_workers()`, 0 decodes here."""

    def sink(pairs: list[tuple[str, ResultRecord]]) -> None:
        for _, record in pairs:
            on_record(record)

    jobs = [Job(entry, model_key) for entry in work]
    step = scoring_step(perception, config)
    run_batches(jobs, batches, step, sink=sink, on_batch=on_batch, num_workers=resolve_num_workers(num_workers))


def score_images(
    source: str | Path | Sequence[ImageItem],
    prompts: PromptIndex | Iterable[PromptRecord],
    perception: Perception,
    *,
    out_path: str | Path,
    config: EvaluatorConfig,
    model_key: str | None = None,
    batch_size: int = 8,
    limit: int | None = None,
    split: str | None = None,
    prompt_id: str | None = None,
    progress: bool = True,
    num_workers: int | None = None,
) -> ScoreSummary:
    """Score every image of `source` into `out_path` (JSONL), skipping keys already there.

    Images are decoded (and on the CPU preprocessed) by `num_workers` loader processes (None: from
    the CPU count, `evaluator.loader.default_num_workers`; 0: in this process) while the models
    run here, and the verdicts and the write of each batch overlap the next batch's forwards
    (`evaluator.engine`); the file is the same, byte for byte, with any number of workers.
    Under a launcher (`negt2ibench.core.launch.Launch`) each process scores its contiguous share into
    `rank_path(out_path, rank)` with its own workers, and the main process merges them into `out_path`.
    """
    batch_size = check("batch_size", batch_size, positive_int)
    num_workers = resolve_num_workers(num_workers)
    if limit is not None:
        limit = check("limit", limit, non_negative_int)
    if isinstance(source, (str, Path)):
        items, default_key = resolve_source(source, split=split, prompt_id=prompt_id)
    else:
        items, default_key = list(source), "upload"
    model_key = check_split_name(model_key or default_key, what="model key")
    items = items[:limit] if limit is not None else items
    index = prompts if isinstance(prompts, PromptIndex) else PromptIndex(prompts)
    out = Path(out_path)
    started = time.perf_counter()
    run = run_records(
        [Job(Work.look_up(item, index), model_key) for item in items],
        {RESULTS: out},
        scoring_step(perception, config),
        batch_size=batch_size,
        desc=f"score {model_key}",
        progress=progress,
        num_workers=num_workers,
        error_kinds=ERROR_KINDS,
    )
    return ScoreSummary.of_run(run, out_path=out, total=len(items), started=started)
