"""Images decoded, checked and (on the CPU) preprocessed for the models in worker processes.

`batch_loader` is a `torch.utils.data.DataLoader` over the scoring loop's work list, one image at
a time in the order of the loop's batches, regrouped into those batches (`BatchLoader`), so the
models see the same batches whatever the number of workers, and the batches come back in order.
Each image comes back as a `Loaded`: the 8-bit RGB image (`evaluator.images.load_image`) and, on
the CPU, the models' inputs (`evaluator.models.inputs.InputPreparer`); or the reason it cannot be
scored, which becomes its error row (a corrupt, truncated, tiny or too large image, an unknown
prompt id). With `num_workers=0` the same code runs in this process: that is the sequential path.

Workers are forked (Linux): they inherit the work list, whose image fetchers need not pickle,
and the preparer. Under `accelerate launch` / `torchrun` every rank builds its own loader, so
each rank has its own workers; `default_num_workers` shares this machine's CPUs among its ranks.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, get_worker_info

from evaluator.images import ImageError, load_image
from evaluator.models.inputs import Frame, InputPreparer, PreparedImage
from evaluator.sources import ImageItemLike as ImageItemLike
from evaluator.sources import Work
from negt2ibench.core.launch import local_world_size
from negt2ibench.core.options import check, non_negative_int

MAX_DEFAULT_WORKERS = 8  # decoding a 1024² PNG takes ~50 ms: 8 workers feed ≥ 100 images/s
PREFETCH_BATCHES = 2  # batches the workers keep ready ahead of the models, between them
# Workers run at a lower priority than the process that drives the models: where the CPUs are
# short, the scheduler gives them to the forwards (the critical path) and the workers take what is
# left; with CPUs to spare the niceness changes nothing.
WORKER_NICENESS = 10


@dataclass(frozen=True)
class Loaded:
    """One image as the loader hands it over: decoded, or the reason it cannot be scored.

    From a worker the pixels come as a uint8 H×W×3 tensor, which travels through shared memory
    (a pickled image would be copied through a pipe and unpickled by the process that runs the
    models); `rgb()` makes the PIL image of either form.
    """

    index: int  # position in the work list
    image: Image.Image | None = None
    prepared: PreparedImage | None = None  # the models' inputs, when made in the loader
    problem: str | None = None  # the error row's reason
    pixels: torch.Tensor | None = None  # the image, from a worker

    def frame(self) -> Frame:
        """The image as it came: decoded here, or the worker's pixels (no conversion)."""
        if self.image is not None:
            return self.image
        if self.pixels is None:
            raise ValueError(f"item {self.index} has no image: {self.problem}")
        return self.pixels

    def rgb(self) -> Image.Image:
        """The 8-bit RGB image (the same pixels whichever process decoded it)."""
        if self.image is not None:
            return self.image
        if self.pixels is None:
            raise ValueError(f"item {self.index} has no image: {self.problem}")
        return Image.fromarray(self.pixels.numpy())


class WorkDataset(Dataset):
    """The work list as a map-style dataset: item i decoded, checked and prepared (in a worker)."""

    def __init__(self, work: Sequence[Work], preparer: InputPreparer | None = None):
        self.work = work
        self.preparer = preparer

    def __len__(self) -> int:
        return len(self.work)

    def __getitem__(self, index: int) -> Loaded:
        work = self.work[index]
        if work.prompt is None:
            return Loaded(index, problem=work.problem or f"unknown prompt id {work.item.prompt_id!r}")
        try:
            image = load_image(work.item.fetch())
        except (ImageError, OSError) as error:
            return Loaded(index, problem=f"bad image: {error}")
        prepared = None
        if self.preparer is not None:
            try:
                prepared = self.preparer(image, work.prompt.category)
            except Exception:  # noqa: BLE001 - made again by perception, where a failure becomes the image's error row
                prepared = None
        if get_worker_info() is not None:  # in a worker: send the pixels through shared memory
            return Loaded(index, pixels=torch.from_numpy(np.array(image)), prepared=prepared)
        return Loaded(index, image=image, prepared=prepared)


def _lower_priority(worker_id: int) -> None:
    with contextlib.suppress(OSError):  # not allowed here (some sandboxes): run at the parent's priority
        os.nice(WORKER_NICENESS)


def _as_is(entry: Loaded) -> Loaded:
    return entry  # no collation: the perception takes images and inputs one by one


def can_fork() -> bool:
    """Whether loader workers can be forked (Linux; elsewhere forking a process with loaded models
    is unsafe and the work list's fetchers would have to pickle)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, e.g. a container's or a scheduler's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_num_workers() -> int:
    """Loader workers per process when none are asked for: this machine's CPUs shared among the
    processes a launcher started on it, at most 8; 0 below 2 CPUs (a worker would only take turns
    with the models on the one CPU) and where workers cannot be forked."""
    if not can_fork():
        return 0
    per_process = available_cpus() // max(local_world_size(), 1)
    return 0 if per_process < 2 else min(per_process, MAX_DEFAULT_WORKERS)


def resolve_num_workers(num_workers: int | None) -> int:
    """`num_workers` checked (an integer ≥ 0), or the default for None. Asked for where workers
    cannot be forked, it falls back to 0 with a warning."""
    if num_workers is None:
        return default_num_workers()
    num_workers = check("num_workers", num_workers, non_negative_int)
    if num_workers and not can_fork():
        warnings.warn(
            f"num_workers={num_workers}: loader workers are forked, which {sys.platform} does not allow "
            "safely; images are decoded in this process",
            RuntimeWarning,
            stacklevel=3,
        )
        return 0
    return num_workers


class BatchLoader:
    """The work list's images, decoded by a per-image `DataLoader`, regrouped into the loop's batches.

    Workers take images, not batches, so the images of one batch are decoded side by side: the
    models wait for the first batch as long as one worker takes for its share of it, not for the
    whole batch (what a worker per batch would cost at the start of every run and of every batch
    that outruns the workers). The images come back in the sampler's order, which is the batches'
    order, so regrouping by the batches' sizes gives the same batches as the sequential path.
    """

    def __init__(self, loader: DataLoader, sizes: Sequence[int]):
        self._loader = loader
        self._sizes = list(sizes)
        self._items: Iterator[Loaded] | None = None

    def __iter__(self) -> Iterator[list[Loaded]]:
        self._items = iter(self._loader)
        try:
            for size in self._sizes:
                yield [next(self._items) for _ in range(size)]
        finally:
            self.close()

    def close(self) -> None:
        """Shuts the workers down now (dropping the loader's iterator does), not when a traceback
        lets go of them."""
        self._items = None


def batch_loader(
    work: Sequence[Work],
    batches: Sequence[Sequence[int]],
    *,
    preparer: InputPreparer | None = None,
    num_workers: int = 0,
) -> BatchLoader:
    """Batches of `Loaded`, in the order of `batches` (lists of positions in `work`).

    With workers, they keep about `PREFETCH_BATCHES` batches of images ready between them.
    """
    dataset = WorkDataset(work, preparer)
    order = [index for batch in batches for index in batch]
    workers = min(num_workers, len(order))
    options: dict = {}
    if workers > 0:
        largest = max(len(batch) for batch in batches)
        options = {
            "num_workers": workers,
            "prefetch_factor": max(2, math.ceil(PREFETCH_BATCHES * largest / workers)),
            "multiprocessing_context": "fork",
            "persistent_workers": False,
            "worker_init_fn": _lower_priority,
        }
    # batch_size=None: collate_fn gets each item alone, which torch's annotation (a list) does not allow for.
    loader = DataLoader(dataset, sampler=order, batch_size=None, collate_fn=_as_is, **options)  # type: ignore[arg-type]
    return BatchLoader(loader, [len(batch) for batch in batches])
