"""Generate one image split: plan (prompt, sample) work, share it among processes, batch, write shards.

`generate_images` runs any `ImageGenerator` (`generation.backends`) over a work list: each process
takes its contiguous share (`negt2ibench.core.launch.Launch`), skips what is on disk, and writes its own
shards, so an interrupted run resumes and several processes never duplicate an image.
`generate_with` does the same for any function `(prompts, seeds) -> PIL images`.
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from negt2ibench.core.errors import UserError
from negt2ibench.core.launch import Launch
from negt2ibench.core.options import check, positive_int
from negt2ibench.core.versions import library_versions

from .backends import CallableGenerator, GeneratedImage, ImageGenerator
from .registry import ModelSpec, validate_key
from .shards import CompletenessReport, ImageKey, ImageRecord, ShardWriter, existing_keys, png_bytes
from .work import SEED_RULE, WorkItem, plan_work, prompts_for


def resolve_device(requested: str | None, launch: Launch) -> str:
    """`negt2ibench.core.launch.select_device` as the string the generators take ("cuda:1", "cpu")."""
    return str(launch.device(requested or "auto"))


def run_params(spec: ModelSpec, generator: ImageGenerator, device: str) -> dict[str, Any]:
    """The `params` JSON stored with every image of this run."""
    return {
        **spec.settings(),
        **generator.params,
        "device_type": device.split(":")[0],
        "seed_rule": SEED_RULE,
        "versions": library_versions(),
    }


def _is_out_of_memory(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in str(error).lower()


def _free_accelerator_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class ImageWriter(Protocol):
    """Where one rank's images go, one record at a time (`ShardWriter`, `GenEvalFolderWriter`)."""

    written: list[Path]

    def add(self, record: ImageRecord) -> object: ...

    def flush(self) -> object: ...


class ImageStore(Protocol):
    """A layout images are written in: what is there, whether a resume may add to it, its writer."""

    def check_settings(self, spec: ModelSpec) -> None: ...

    def done(self) -> set[ImageKey]: ...

    def writer(self, rank: int) -> ImageWriter: ...


class _BackgroundEncoder:
    """PNG-encodes images in worker threads and hands the records to the writer in order."""

    def __init__(self, writer: ImageWriter, spec: ModelSpec, params: str, workers: int):
        from concurrent.futures import ThreadPoolExecutor

        self.writer, self.spec, self.params = writer, spec, params
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="png")
        self.pending: deque[Future] = deque()

    def _record(self, item: WorkItem, generated: GeneratedImage) -> ImageRecord:
        return ImageRecord(
            prompt_id=item.prompt_id,
            sample_index=item.sample_index,
            seed=item.seed,
            png=png_bytes(generated.image),
            model_id=self.spec.hub_id,
            model_key=self.spec.key,
            params=self.params,
            nsfw_flagged=generated.nsfw_flagged,
        )

    def submit(self, item: WorkItem, generated: GeneratedImage) -> None:
        self.pending.append(self.pool.submit(self._record, item, generated))

    def drain(self, keep: int = 0) -> None:
        """Write finished records in order; wait while more than `keep` are outstanding."""
        while self.pending and (self.pending[0].done() or len(self.pending) > keep):
            self.writer.add(self.pending.popleft().result())

    def close(self) -> None:
        try:
            self.drain(keep=0)
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)


def check_same_settings(dataset_dir: Path, spec: ModelSpec, key: str | None = None) -> None:
    """Resuming into a split made with other settings would mix two experiments in one split: refuse."""
    from .shards import read_params

    wanted = spec.settings()
    for params in read_params(dataset_dir, key or spec.key):
        differing = sorted(name for name, value in wanted.items() if params.get(name, "(absent)") != value)
        if differing:
            shown = ", ".join(
                f"{name}: {params.get(name, '(absent)')!r} there, {wanted[name]!r} now" for name in differing
            )
            raise UserError(
                f"split {key or spec.key!r} in {dataset_dir} was made with other settings ({shown}); "
                f"write to another --out or split name, or move its shards away"
            )


@dataclass(frozen=True)
class ShardStore:
    """The image split KEY of a dataset folder: parquet shards (`generation.shards`)."""

    dataset_dir: Path
    key: str
    shard_size: int = 128

    def check_settings(self, spec: ModelSpec) -> None:
        check_same_settings(self.dataset_dir, spec, self.key)

    def done(self) -> set[ImageKey]:
        return existing_keys(self.dataset_dir, self.key)

    def writer(self, rank: int) -> ShardWriter:
        return ShardWriter(self.dataset_dir, self.key, rank=rank, shard_size=self.shard_size)


@dataclass
class RunSummary:
    key: str
    rank: int
    planned: int  # images of this rank's share
    skipped: int  # already on disk
    generated: int = 0
    nsfw_flagged: int = 0
    batch_size: int = 1
    seconds: float = 0.0
    shards: list[Path] = field(default_factory=list)
    completeness: CompletenessReport | None = None  # `generate_with`, main process: the split after the merge
    card: str = ""  # `generate_with`, main process: what happened to the dataset card


def generate_images(
    generator: ImageGenerator,
    spec: ModelSpec,
    work: Sequence[WorkItem],
    dataset_dir: Path,
    rank: Launch | None = None,
    batch_size: int = 1,
    shard_size: int = 128,
    device: str = "cpu",
    progress: bool = True,
    encode_workers: int = 2,
    store: ImageStore | None = None,
) -> RunSummary:
    """Make this rank's share of WORK that is not on disk yet, and write it in shards (or in the
    layout of STORE: GenEval's folders, `generation.geneval_layout`).

    The full work list is split by rank first and filtered by what exists second, so every
    rank computes its share alone (no coordination) and a resumed run never duplicates.
    An out-of-memory error halves the batch and retries; at batch size 1 it is a clear error.
    PNG encoding runs in background threads (zlib releases the GIL), overlapping the next
    pipeline call: at 1024² it costs about as much as a few-step pipeline call itself.
    """
    from tqdm.auto import tqdm

    batch_size = check("batch_size", batch_size, positive_int)
    rank = rank or Launch()  # alone: the whole work list
    mine = rank.share(work)
    store = store or ShardStore(Path(dataset_dir), spec.key, shard_size)
    store.check_settings(spec)
    done = store.done()
    todo = [item for item in mine if item.key not in done]
    summary = RunSummary(
        key=spec.key, rank=rank.rank, planned=len(mine), skipped=len(mine) - len(todo), batch_size=batch_size
    )
    params = json.dumps(run_params(spec, generator, device), sort_keys=True)
    writer = store.writer(rank.rank)
    started = time.perf_counter()
    bar = tqdm(total=len(todo), unit="img", desc=f"{spec.key} r{rank.rank}", disable=not progress, file=sys.stderr)
    encoder = _BackgroundEncoder(writer, spec, params, workers=encode_workers)
    try:
        _generate_batches(generator, spec, todo, encoder, summary, bar, device)
    finally:
        # Whatever stopped the loop, finished images reach disk (KeyboardInterrupt included).
        encoder.close()
        writer.flush()
        bar.close()
        summary.seconds = time.perf_counter() - started
        summary.shards = list(writer.written)
    return summary


def _generate_batches(
    generator: ImageGenerator,
    spec: ModelSpec,
    todo: Sequence[WorkItem],
    encoder: _BackgroundEncoder,
    summary: RunSummary,
    bar: Any,
    device: str,
) -> None:
    """Generate TODO batch by batch into ENCODER, counting in SUMMARY; out of memory halves the batch."""
    position = 0
    while position < len(todo):
        batch = todo[position : position + summary.batch_size]
        try:
            images = generator([item.prompt for item in batch], [item.seed for item in batch])
        except Exception as error:  # noqa: BLE001 - only out-of-memory is handled here
            if not _is_out_of_memory(error):
                raise
            _free_accelerator_memory()
            if summary.batch_size == 1:
                raise UserError(
                    f"out of memory on {device} even with batch size 1 for {spec.key}: free the GPU, "
                    f"use a larger one, or a quantized model. Finished images are kept; rerun to resume"
                ) from None
            summary.batch_size = max(1, summary.batch_size // 2)
            bar.write(f"out of memory: retrying with batch size {summary.batch_size}")
            continue
        if len(images) != len(batch):
            raise UserError(f"the model returned {len(images)} images for {len(batch)} prompts")
        for item, generated in zip(batch, images, strict=False):
            encoder.submit(item, generated)
            summary.nsfw_flagged += int(generated.nsfw_flagged)
        encoder.drain(keep=2 * summary.batch_size)  # bounded memory; the rest encodes during the next call
        summary.generated += len(batch)
        position += len(batch)
        bar.update(len(batch))


def generate_with(
    function: Callable[[list[str], list[int]], Sequence[Any]],
    *,
    key: str,
    out: str | Path,
    prompts: Sequence[PromptRecord] | None = None,
    samples: int = SAMPLES_PER_PROMPT,
    batch_size: int = 1,
    model_id: str | None = None,
    settings: dict[str, Any] | None = None,
    shard_size: int = 128,
    launch: Launch | None = None,
    merge: bool = True,
    progress: bool = True,
) -> RunSummary:
    """Fill the image split KEY of the dataset folder OUT with images made by any function.

    For a model that diffusers and transformers do not support: no folder of PNGs, no import step.
    The run is the one `negt2ibench generate` makes: each image's seed comes from (prompt_id,
    sample_index), finished shards are kept and a rerun resumes, several processes (`accelerate
    launch`) share the work, and the main process checks the split and refreshes the card.

    Args:
        function: `function(prompts, seeds) -> images`: the prompt texts of one batch and one seed per
            image; returns one PIL image per prompt, in order (or a `backends.GeneratedImage` to flag
            an image as NSFW). Seed your model with each image's seed for reproducible images.
        key: the split name ([a-z0-9_]+), e.g. "blip3o_next".
        out: the dataset folder; images go to `out/images/{key}-r{rank}-{n}.parquet`.
        prompts: the prompts to draw; default: OUT's prompts if it is a built dataset, else the corpus.
        samples: images per prompt (the paper: 4).
        batch_size: prompts per call of FUNCTION.
        model_id: recorded as each image's `model_id` (default: KEY).
        settings: JSON-ready settings of the model (steps, resolution, ...), recorded in each image's
            `params`; resuming with other settings is refused.
        shard_size: images per parquet shard.
        launch: this process in its launcher's world (default: `Launch.detect()`).
        merge: check completeness and refresh the card on the main process at the end.
        progress: show a progress bar.

    Returns:
        This process's `RunSummary`; on the main process with `merge`, `completeness` and `card` too.

    Example:
        >>> from PIL import Image
        >>> def solid(prompts, seeds):
        ...     return [Image.new("RGB", (64, 64), (seed % 256, 0, 0)) for seed in seeds]
        >>> summary = generate_with(solid, key="solid", out="build/negt2ibench", samples=1)  # doctest: +SKIP
    """
    key = validate_key(key)
    samples = check("samples", samples, positive_int)
    _check_json_ready(settings)
    out = Path(out)
    prompts = list(prompts) if prompts is not None else prompts_for(out)
    launch = launch or Launch.detect()
    spec = _callable_spec(key, model_id, settings)
    return _generate_and_finish(function, spec, prompts, samples, out, launch, batch_size, shard_size, merge, progress)


def _check_json_ready(settings: dict[str, Any] | None) -> None:
    """Refuse SETTINGS that cannot be recorded in each image's `params` JSON."""
    try:
        json.dumps(settings or {})
    except TypeError as error:
        raise UserError(f"settings must be JSON-ready (numbers, strings, lists, dicts): {error}") from None


def _callable_spec(key: str, model_id: str | None, settings: dict[str, Any] | None) -> ModelSpec:
    """The `ModelSpec` of a model outside the registry: its split KEY, hub id and SETTINGS."""
    name = model_id or key
    spec = ModelSpec(key=key, hub_id=name, pipeline_class="", backend="callable", display_name=name)
    if settings:
        spec = ModelSpec(**{**spec.__dict__, "extra_settings": dict(settings)})
    return spec


def _generate_and_finish(
    function: Callable[[list[str], list[int]], Sequence[Any]],
    spec: ModelSpec,
    prompts: Sequence[PromptRecord],
    samples: int,
    out: Path,
    launch: Launch,
    batch_size: int,
    shard_size: int,
    merge: bool,
    progress: bool,
) -> RunSummary:
    """`generate_images` with FUNCTION, then (with MERGE) the split's completeness and card."""
    summary = generate_images(
        CallableGenerator(function),
        spec,
        plan_work(prompts, samples),
        out,
        rank=launch,
        batch_size=batch_size,
        shard_size=shard_size,
        device="unknown",
        progress=progress,
    )
    if merge:
        from .merge import finish_split

        finished = finish_split(out, spec.key, prompts, samples, launch)
        if finished is not None:
            summary.completeness, summary.card = finished
    return summary
