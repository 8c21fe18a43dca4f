"""The one engine for records over images: `score`, `judge` and `ablate` (and any scorer to come) are
thin users of it. A user brings its work list and a `BatchStep` (its own forward on a batch of
images and its own records); the engine does everything else, once:

- **resume by key**: each output's finished keys are skipped (`ResultWriter` cuts a torn last line);
- **ranks**: under `accelerate launch` / torchrun each process takes its contiguous share, writes
  ``OUT.rank{i}.jsonl`` (keys merged earlier stay skipped), and the main process merges;
- **batches with per-image isolation**: images are decoded (and prepared) by the loader
  (`evaluator.loader`, in worker processes when asked); a batch whose forward fails is tried one
  image at a time, and the image that breaks it becomes an error row; a missing weight or an
  interruption stops the run;
- **the verdict/write thread**: the records and the write of batch k run in one background thread
  while batch k + 1 runs through the models, in work-list order, each record once;
- **progress**: one tqdm bar per process (the local main shows it), counts per output.

    loader workers:   decode + check + prepare (CPU)          batch k+2, k+3 …
    this thread:      step.forward (the GPU's critical path)  batch k+1
    verdict thread:   step.records, the write                 batch k

When this thread stops (an error, KeyboardInterrupt), the batches whose forwards are done are still
recorded and written before the error goes on; a failure in the verdict thread stops the loop and
nothing after it is written. A new scorer is a few lines:

    step = BatchStep(forward=lambda pairs: model(images_of(pairs)), records=my_records, failure="x failed")
    run = run_records([Job(work, model_key) for work in works], {"results": out}, step, batch_size=8, desc="x")
"""

from __future__ import annotations

import functools
import threading
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from tqdm.auto import tqdm

from dataset_builder.layout import rank_path
from evaluator.loader import Loaded, Work, batch_loader
from evaluator.resultio import RecordType, ResultWriter, merge_results, read_results
from evaluator.results import ResultRecord
from negt2ibench.core.errors import MissingWeightsError
from negt2ibench.core.launch import Launch

VERDICT_QUEUE = 2  # batches whose forwards are done, waiting for their records at most
Key = tuple[str, str, int]  # (model_key, prompt_id, sample_index)
Outcome = TypeVar("Outcome")  # what a step's forward gives for one image
R = TypeVar("R")  # the record type


@dataclass(frozen=True)
class Failed:
    """An image without a forward outcome, and the reason its error rows carry."""

    reason: str


@dataclass(frozen=True)
class Job:
    """One image of a run: its work (item and prompt, or why it has none), the model key its records
    carry, and the outputs that still lack its record (set by `run_records`)."""

    work: Work[Any]  # the engine never reads the prompt: each step knows its own kind
    model_key: str
    needed: tuple[str, ...] = ()

    @property
    def key(self) -> Key:
        return (self.model_key, self.work.item.prompt_id, self.work.item.sample_index)


@dataclass(frozen=True)
class BatchStep(Generic[Outcome, R]):
    """What a user of the engine does with a batch.

    `forward` gets the (job, loaded image) pairs of the batch's readable images and returns one
    outcome per pair, or raises (then each image is tried alone; one that still raises gets
    `Failed("{failure}: {type}: {message}")`). `records` turns one job's outcome (or its `Failed`)
    into (output name, record) pairs; it runs in the verdict thread. `prepare`, when given, makes
    the loader's per-image preparer for the jobs (the models' inputs), before workers are forked.
    """

    forward: Callable[[Sequence[tuple[Job, Loaded]]], Sequence[Outcome]]
    records: Callable[[Job, Outcome | Failed], Sequence[tuple[str, R]]]
    failure: str
    prepare: Callable[[Sequence[Job]], Any] | None = None


def consecutive(count: int, size: int) -> list[list[int]]:
    """Positions 0..count-1 in consecutive batches of `size` (the last one shorter)."""
    return [list(range(start, min(start + size, count))) for start in range(0, count, size)]


class VerdictThread:
    """Runs jobs in one background thread, in the order given, with at most `depth` waiting.

    `submit` re-raises a failed job's error in the caller (and stops later jobs from running);
    leaving the `with` block waits for every job, and re-raises the first error when the block
    itself ended normally.
    """

    def __init__(self, depth: int = VERDICT_QUEUE):
        self.depth = depth
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="negt2ibench-verdicts")
        self._pending: deque[Future] = deque()
        self._failed = threading.Event()

    def __enter__(self) -> VerdictThread:
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        try:
            if error_type is None:
                while self._pending:
                    self._pending.popleft().result()
        finally:
            self._pool.shutdown(wait=True)  # on an error: the batches already handed over are still written

    def submit(self, job: Callable[[], None]) -> None:
        while len(self._pending) >= self.depth:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(self._run, job))

    def _run(self, job: Callable[[], None]) -> None:
        if self._failed.is_set():
            return  # an earlier batch failed: nothing after it is written
        try:
            job()
        except BaseException:
            self._failed.set()
            raise


def _forward(step: BatchStep, pairs: Sequence[tuple[Job, Loaded]]) -> list:
    found = list(step.forward(pairs))
    if len(found) != len(pairs):
        raise ValueError(f"the forward returned {len(found)} outcomes for {len(pairs)} images")
    return found


def forward_each(step: BatchStep, jobs: Sequence[Job], batch: Sequence[Loaded]) -> list:
    """One outcome per image of the batch, in order: the forward's, or a `Failed` (the loader's
    problem, or the error of an image that breaks the batch and fails alone too)."""
    outcomes: dict[int, Any] = {entry.index: Failed(entry.problem) for entry in batch if entry.problem is not None}
    pairs = [(jobs[entry.index], entry) for entry in batch if entry.problem is None]
    if pairs:
        try:
            found = _forward(step, pairs)
        except (MissingWeightsError, KeyboardInterrupt):
            raise
        except Exception:  # noqa: BLE001 - isolate the image that breaks a batch, keep the rest
            found = []
            for pair in pairs:
                try:
                    found.append(_forward(step, [pair])[0])
                except (MissingWeightsError, KeyboardInterrupt):
                    raise
                except Exception as error:  # noqa: BLE001
                    found.append(Failed(f"{step.failure}: {type(error).__name__}: {error}"))
        outcomes.update(zip((entry.index for _, entry in pairs), found, strict=True))
    return [outcomes[entry.index] for entry in batch]


def run_batches(
    jobs: Sequence[Job],
    batches: Sequence[Sequence[int]],
    step: BatchStep,
    *,
    sink: Callable[[list[tuple[str, Any]]], None],
    on_batch: Callable[[int], None] | None = None,
    num_workers: int = 0,
) -> None:
    """Run `step` over `jobs` in `batches` (lists of positions in it): `sink` gets each batch's
    (output, record) pairs, in order, from the verdict thread, and `on_batch` the batch's size once
    they are in. `num_workers` loader processes decode the images (0: in this process)."""
    if not batches:
        return
    preparer = step.prepare(jobs) if step.prepare is not None else None  # loads what it needs, before forking
    loader = batch_loader([job.work for job in jobs], batches, preparer=preparer, num_workers=num_workers)

    def write(batch: list[Loaded], outcomes: list) -> None:
        records = [
            pair
            for entry, outcome in zip(batch, outcomes, strict=True)
            for pair in step.records(jobs[entry.index], outcome)
        ]
        sink(records)  # the batch's records are made before any is written
        if on_batch is not None:
            on_batch(len(batch))

    try:
        with VerdictThread() as thread:  # started after the workers were forked
            for batch in loader:
                outcomes = forward_each(step, jobs, batch)
                thread.submit(functools.partial(write, batch, outcomes))
    finally:
        loader.close()  # shuts the workers down now, not when the traceback lets go of them


# -- record files, resume, ranks ---------------------------------------------------------------------


class RecordWriter(Protocol):
    done: set  # the keys already in the file

    def write(self, record: Any) -> bool: ...  # False when the key is already there


@dataclass(frozen=True)
class RecordFiles:
    """How a record type's files are appended to, read for their keys, and merged across ranks."""

    writer: Callable[[Path], AbstractContextManager[RecordWriter]]
    keys: Callable[[Path], frozenset]
    merge: Callable[[list[Path], Path], object]

    @classmethod
    def for_record_type(cls, record_type: RecordType) -> RecordFiles:
        """The result files of RECORD_TYPE, through `evaluator.resultio` (the one owner of result files).

        Args:
            record_type: a pydantic record with a `key` (`ResultRecord`, `GenEvalRecord`, `NegVQARecord`, ...).

        Returns:
            Files appended by `ResultWriter`, whose keys are read without the writer's lock (every
            rank reads the merged file at once; a torn last line is left out) and whose rank files
            are merged by `merge_results`, each for RECORD_TYPE.
        """
        return cls(
            functools.partial(ResultWriter, record_type=record_type),
            functools.partial(_record_keys, record_type=record_type),
            functools.partial(_merge_record_files, record_type=record_type),
        )


def _record_keys(path: Path, *, record_type: RecordType) -> frozenset:
    if not path.exists():
        return frozenset()
    return frozenset(record.key for record in read_results(path, strict=False, record_type=record_type))


def _merge_record_files(inputs: list[Path], out: Path, *, record_type: RecordType) -> object:
    return merge_results(inputs, out, record_type=record_type)


RESULT_FILES = RecordFiles.for_record_type(ResultRecord)


def error_kind(message: str, kinds: Sequence[str]) -> str:
    """The kind of an error row (the first of KINDS its reason starts with), else "other"."""
    return next((kind for kind in kinds if message.startswith(kind)), "other")


@dataclass
class OutputCounts:
    """What a run did to one output: rows already there, rows written, and of those the errors (by kind)."""

    path: Path  # the file this process wrote (its rank file under a launcher)
    already_done: int = 0
    written: int = 0
    errors: int = 0
    passed: int = 0
    error_reasons: Counter = field(default_factory=Counter)


@dataclass
class RecordRun:
    """What `run_records` did: counts per output, the images run through the step (those some output
    lacked), and this process's place in the launcher's world."""

    outputs: dict[str, OutputCounts]
    rank: int = 0
    world: int = 1
    images: int = 0

    @property
    def error_reasons(self) -> Counter:
        return sum((counts.error_reasons for counts in self.outputs.values()), Counter())


def _pending_jobs(jobs: Sequence[Job], names: Sequence[str], done: Mapping[str, set], run: RecordRun) -> list[Job]:
    """The jobs some output of NAMES lacks, each with the outputs it is `needed` for; RUN counts the rest."""
    pending = []
    for job in jobs:
        needed = tuple(name for name in names if job.key not in done[name])
        for name in names:
            run.outputs[name].already_done += name not in needed
        if needed:
            pending.append(replace(job, needed=needed))
    return pending


def _record_sink(
    writers: Mapping[str, RecordWriter],
    run: RecordRun,
    error_kinds: Sequence[str],
    on_written: Callable[[str, Any], None] | None,
) -> Callable[[list[tuple[str, Any]]], None]:
    """What writes a job's (output name, record) pairs, counting each record written in RUN."""

    def sink(pairs: list[tuple[str, Any]]) -> None:
        for name, record in pairs:
            if not writers[name].write(record):
                continue
            counts = run.outputs[name]
            counts.written += 1
            if record.error is not None:  # an error row, whatever its text (`results.is_error_row`)
                counts.errors += 1
                counts.error_reasons[error_kind(record.error, error_kinds)] += 1
            else:
                counts.passed += int(record.passed)
            if on_written is not None:
                on_written(name, record)

    return sink


def run_records(
    jobs: Sequence[Job],
    outputs: Mapping[str, str | Path],
    step: BatchStep,
    *,
    batch_size: int,
    desc: str,
    progress: bool = True,
    num_workers: int = 0,
    error_kinds: Sequence[str] = (),
    on_written: Callable[[str, Any], None] | None = None,
    launch: Launch | None = None,
    files: RecordFiles = RESULT_FILES,
) -> RecordRun:
    """Every job's records into `outputs` (name → file), resuming by key, across the launcher's ranks.

    Each job is run for the outputs that lack its key (`job.needed`); a job no output needs is
    skipped. `on_written(name, record)` sees each record written (in the verdict thread).
    `launch`: this process's place (default `Launch.detect()`; `Launch()` keeps a run to one process).
    """
    launch = launch or Launch.detect()
    targets = {name: Path(path) for name, path in outputs.items()}
    ranked = launch.world_size > 1
    skip = {name: files.keys(path) for name, path in targets.items()} if ranked else {}  # merged earlier
    paths = {name: rank_path(path, launch.rank) if ranked else path for name, path in targets.items()}
    mine = launch.share(jobs) if ranked else list(jobs)
    run = RecordRun({name: OutputCounts(path) for name, path in paths.items()}, launch.rank, launch.world_size)
    with ExitStack() as stack:
        writers = {name: stack.enter_context(files.writer(path)) for name, path in paths.items()}
        done = {name: set(writer.done) | set(skip.get(name, ())) for name, writer in writers.items()}
        pending = _pending_jobs(mine, list(paths), done, run)
        run.images = len(pending)
        sink = _record_sink(writers, run, error_kinds, on_written)
        with tqdm(
            total=len(mine),
            initial=len(mine) - len(pending),
            unit="img",
            desc=desc,
            disable=not (progress and launch.is_local_main),
            position=launch.rank,
            dynamic_ncols=True,
        ) as bar:
            batches = consecutive(len(pending), batch_size)
            run_batches(pending, batches, step, sink=sink, on_batch=bar.update, num_workers=num_workers)
    if ranked:

        def merge() -> None:
            for out in targets.values():
                inputs = ([out] if out.exists() else []) + [rank_path(out, rank) for rank in range(launch.world_size)]
                files.merge([path for path in inputs if path.exists()], out)

        launch.on_main(merge)
    return run
