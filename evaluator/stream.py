"""The scoring loop: the loader's batches in order, the models' forwards in this process, and the
rules, verdicts and the sink (the JSONL write) of batch k in a background thread while batch k + 1
runs through the models.

    loader workers:   decode + check + preprocess (CPU)      batch k+2, k+3 …
    this thread:      forwards (the GPU's critical path)      batch k+1
    verdict thread:   rules, verdicts, on_record (the write)  batch k

One verdict thread takes the batches in the order they were handed over, so the records reach
`on_record` exactly in work-list order, each once, as in the sequential loop. When this thread
stops (an error, KeyboardInterrupt), the batches whose forwards are done are still judged and
written before the error goes on; a failure in the verdict thread stops the loop and nothing
after it is written. Records are the same, byte for byte, with any number of workers: the
batches, the images, the models' inputs and the order are.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from evaluator.config import EvaluatorConfig
from evaluator.loader import Loaded, Work, batch_loader, resolve_num_workers
from evaluator.observation import ImageObservation
from evaluator.perception import Perception
from evaluator.results import ResultRecord
from evaluator.verdict import error_record, judge
from negt2ibench.errors import MissingWeightsError

VERDICT_QUEUE = 2  # batches whose forwards are done, waiting for their verdicts at most


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
            self._pool.shutdown(wait=True)  # on an error: the batches already handed over are still judged

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


def _observe(
    perception: Perception, work: Sequence[Work], entries: Sequence[Loaded], streaming: bool
) -> list[ImageObservation]:
    prompts = [work[entry.index].prompt for entry in entries]
    if streaming:  # a ModelPerception: the workers' pixels as they came, their inputs, only the masks a rule reads
        frames = [entry.image if entry.image is not None else entry.pixels for entry in entries]
        found = perception.observe(frames, prompts, prepared=[entry.prepared for entry in entries], masks="rules")
    else:  # any object with observe(images, prompts), e.g. a test double
        found = perception.observe([entry.rgb() for entry in entries], prompts)
    if len(found) != len(entries):
        raise ValueError(f"perception returned {len(found)} observations for {len(entries)} images")
    return found


def observe_batch(
    perception: Perception, work: Sequence[Work], batch: Sequence[Loaded], *, streaming: bool
) -> list[ImageObservation | str | None]:
    """What perception saw in each loaded image of a batch (None where the loader already gave a
    problem). When the batch fails, each image is tried alone: the one that breaks it gets its
    error text ("perception failed: ..."), the others their observations."""
    ready = [entry for entry in batch if entry.problem is None]
    try:
        found: list[ImageObservation | str] = list(_observe(perception, work, ready, streaming)) if ready else []
    except (MissingWeightsError, KeyboardInterrupt):
        raise
    except Exception:  # noqa: BLE001 - isolate the image that breaks a batch, keep the rest
        found = []
        for entry in ready:
            try:
                found.append(_observe(perception, work, [entry], streaming)[0])
            except (MissingWeightsError, KeyboardInterrupt):
                raise
            except Exception as error:  # noqa: BLE001
                found.append(f"perception failed: {type(error).__name__}: {error}")
    by_index = dict(zip((entry.index for entry in ready), found, strict=True))
    return [by_index.get(entry.index) for entry in batch]


def batch_records(
    work: Sequence[Work],
    batch: Sequence[Loaded],
    seen: Sequence[ImageObservation | str | None],
    *,
    config: EvaluatorConfig,
    model_key: str,
) -> list[ResultRecord]:
    """One record per image of the batch, in order: its verdict, or its error row."""
    records = []
    for entry, observation in zip(batch, seen, strict=True):
        item, prompt = work[entry.index].item, work[entry.index].prompt
        problem = entry.problem if entry.problem is not None else observation if isinstance(observation, str) else None
        if problem is None and prompt is not None and observation is not None:
            try:
                records.append(
                    judge(prompt, observation, model_key=model_key, sample_index=item.sample_index, config=config)
                )
                continue
            except ValueError as error:  # an observation the rules cannot judge: record it, go on
                problem = f"verdict failed: {error}"
        records.append(error_record(item.prompt_id, model_key, item.sample_index, problem or "not scored", config))
    return records


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
    """Score `work` in `batches` (lists of positions in it): `on_record` gets every record, in
    order, from the verdict thread, and `on_batch` the size of each batch once its records are in.

    `num_workers`: loader processes that decode (and on the CPU preprocess) the images; None
    takes `evaluator.loader.default_num_workers()`, 0 decodes here.
    """
    if not batches:
        return
    workers = resolve_num_workers(num_workers)
    make_preparer = getattr(perception, "worker_preparer", None)
    streaming = callable(make_preparer)
    categories = {entry.prompt.category for entry in work if entry.prompt is not None}
    preparer = make_preparer(categories) if streaming else None  # loads the models it needs, before forking
    loader = batch_loader(work, batches, preparer=preparer, num_workers=workers)

    def verdicts(batch: list[Loaded], seen: list[ImageObservation | str | None]) -> None:
        for record in batch_records(work, batch, seen, config=config, model_key=model_key):
            on_record(record)
        if on_batch is not None:
            on_batch(len(batch))

    try:
        with VerdictThread() as thread:  # started after the workers were forked
            for batch in loader:
                seen = observe_batch(perception, work, batch, streaming=streaming)
                thread.submit(lambda batch=batch, seen=seen: verdicts(batch, seen))
    finally:
        loader.close()  # shuts the workers down now, not when the traceback lets go of them
