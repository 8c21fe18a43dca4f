"""Generate one image split: plan (prompt, sample) work, split it by rank, batch, write shards.

The seed of each image depends only on (prompt_id, sample_index), so an image is the same
whatever the batch size, the rank that made it, or the run that resumed it (on one device type).
Models sit behind a small `ImageGenerator` interface: diffusers pipelines and transformers'
Janus are the two real ones; tests pass a tiny pipeline through the same diffusers adapter.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dataset_builder.records import PromptRecord
from negt2ibench.errors import MissingWeightsError, UserError

from .registry import ModelSpec, import_object
from .shards import ImageKey, ImageRecord, ShardWriter, existing_keys, png_bytes

SEED_RULE = "int.from_bytes(sha256(f'{prompt_id}:{sample_index}')[:4], 'big') & 0x7fffffff"


def image_seed(prompt_id: str, sample_index: int) -> int:
    """A stable 31-bit seed from (prompt_id, sample_index): no dependence on order or rank."""
    digest = hashlib.sha256(f"{prompt_id}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class WorkItem:
    """One image to make."""

    prompt_id: str
    sample_index: int
    prompt: str
    seed: int

    @property
    def key(self) -> ImageKey:
        return (self.prompt_id, self.sample_index)


def select_prompts(
    prompts: Sequence[PromptRecord],
    categories: Iterable[str] | None = None,
    settings: Iterable[str] | None = None,
    limit: int | None = None,
) -> list[PromptRecord]:
    """Prompts of the chosen categories and settings, in corpus order, the first LIMIT of them."""
    wanted_categories = set(categories) if categories else None
    wanted_settings = set(settings) if settings else None
    known_categories = {p.category for p in prompts}
    known_settings = {p.setting for p in prompts}
    for name, wanted, known in (
        ("category", wanted_categories, known_categories),
        ("setting", wanted_settings, known_settings),
    ):
        unknown = sorted((wanted or set()) - known)
        if unknown:
            raise UserError(f"unknown {name} {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if limit is not None and limit < 1:
        raise UserError("--limit must be at least 1")
    chosen = [
        p
        for p in prompts
        if (wanted_categories is None or p.category in wanted_categories)
        and (wanted_settings is None or p.setting in wanted_settings)
    ]
    return chosen[:limit] if limit is not None else chosen


def plan_work(prompts: Sequence[PromptRecord], num_images: int) -> list[WorkItem]:
    """Every (prompt, sample) pair, prompt-major: the order ranks split and resume in."""
    if num_images < 1:
        raise UserError("--num-images must be at least 1")
    return [
        WorkItem(p.prompt_id, index, p.prompt, image_seed(p.prompt_id, index))
        for p in prompts
        for index in range(num_images)
    ]


def rank_slice(items: Sequence[Any], rank: int, world_size: int) -> list[Any]:
    """Contiguous chunk of one rank, the same chunks as accelerate's `split_between_processes`."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world of {world_size}")
    per_rank, extras = divmod(len(items), world_size)
    start = rank * per_rank + min(rank, extras)
    end = start + per_rank + (1 if rank < extras else 0)
    return list(items[start:end])


@dataclass(frozen=True)
class RankInfo:
    """Which process this is. `from_accelerate()` reads `accelerate launch`'s state."""

    rank: int = 0
    world_size: int = 1
    state: Any = None  # accelerate PartialState when launched by accelerate

    @classmethod
    def from_accelerate(cls, cpu: bool | None = None) -> RankInfo:
        """The process's rank under `accelerate launch` / torchrun (one process: rank 0 of 1).

        `cpu` (default: no CUDA here) lets several CPU processes form a gloo group; accelerate
        otherwise ignores the launcher's WORLD_SIZE on CPU and every process would be rank 0.
        """
        import os

        import torch
        from accelerate import PartialState

        if cpu is None:
            cpu = not torch.cuda.is_available()
        state = PartialState(cpu=cpu)
        launched = int(os.environ.get("WORLD_SIZE", "1") or 1)
        if launched != state.num_processes:
            raise UserError(
                f"launched as {launched} processes but accelerate sees {state.num_processes}: every process "
                f"would make the same images. Use `accelerate launch` with a matching config"
            )
        return cls(rank=state.process_index, world_size=state.num_processes, state=state)

    def split(self, items: Sequence[Any]) -> list[Any]:
        if self.state is not None:
            with self.state.split_between_processes(list(items)) as mine:
                return list(mine)
        return rank_slice(items, self.rank, self.world_size)

    def wait_for_everyone(self) -> None:
        if self.state is not None:
            self.state.wait_for_everyone()

    @property
    def is_main(self) -> bool:
        return self.rank == 0


@dataclass(frozen=True)
class GeneratedImage:
    image: Any  # PIL.Image.Image
    nsfw_flagged: bool = False


class ImageGenerator(Protocol):
    """A loaded model: prompts and per-image seeds in, one image per prompt out."""

    params: dict[str, Any]

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]: ...


def is_black(image) -> bool:
    """Safety checkers replace flagged images with black ones."""
    return not np.asarray(image).any()


class DiffusersGenerator:
    """Any diffusers text-to-image pipeline; one CPU `torch.Generator` per image for the seed."""

    def __init__(self, pipeline, spec: ModelSpec):
        self.pipeline = pipeline
        self.spec = spec
        self.params = {"backend": "diffusers", "pipeline": type(pipeline).__name__}

    def call_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.spec.steps is not None:
            kwargs["num_inference_steps"] = self.spec.steps
        if self.spec.height is not None and self.spec.width is not None:
            kwargs["height"], kwargs["width"] = self.spec.height, self.spec.width
        if self.spec.guidance is not None:
            kwargs[self.spec.guidance_argument] = self.spec.guidance
        return kwargs

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]:
        import torch

        # CPU generators: the initial noise is the same on every device type and batch size.
        generators = [torch.Generator("cpu").manual_seed(seed) for seed in seeds]
        output = self.pipeline(prompt=list(prompts), generator=generators, output_type="pil", **self.call_kwargs())
        flags = getattr(output, "nsfw_content_detected", None) or [False] * len(output.images)
        return [
            GeneratedImage(image=image, nsfw_flagged=bool(flag) or is_black(image))
            for image, flag in zip(output.images, flags, strict=False)
        ]


class JanusGenerator:
    """transformers' Janus-Pro in image mode; one image per call so each has its own seed."""

    def __init__(self, model, processor, device: str):
        self.model = model
        self.processor = processor
        self.device = device
        self.params = {"backend": "transformers", "model": type(model).__name__, "generation_mode": "image"}

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]:
        import torch
        from PIL import Image

        results = []
        for prompt, seed in zip(prompts, seeds, strict=False):
            torch.manual_seed(seed)
            inputs = self.processor(text=[prompt], generation_mode="image", return_tensors="pt").to(self.device)
            tokens = self.model.generate(**inputs, generation_mode="image", do_sample=True, use_cache=True)
            decoded = self.model.decode_image_tokens(tokens)  # (1, H, W, C), normalized
            # transformers 5.24's post_process_multimodal_output(generation_mode="image") fails on its own
            # return_tensors="PIL.Image.Image"; un-normalize to uint8 tensors and convert here instead.
            pixels = self.processor.image_processor.postprocess(list(decoded.float().cpu()), return_tensors="pt")
            array = pixels["pixel_values"][0].permute(1, 2, 0).numpy()
            image = Image.fromarray(array)
            results.append(GeneratedImage(image=image, nsfw_flagged=is_black(image)))
        return results


def resolve_device(requested: str | None, rank: RankInfo) -> str:
    import torch

    own_device = str(rank.state.device) if rank.state is not None else "cpu"
    if requested == "cuda" and own_device.startswith("cuda"):
        return own_device  # under a launcher, plain "cuda" means this process's GPU, not GPU 0 for all
    if requested and requested != "auto":
        return requested
    if own_device != "cpu":
        return own_device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _torch_dtype(name: str, device: str):
    import torch

    if device == "cpu":
        return torch.float32  # half precision on CPU is slow or unsupported
    return getattr(torch, name)


def _missing_weights(spec: ModelSpec, error: Exception) -> MissingWeightsError:
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return MissingWeightsError(
        f"{spec.key} ({spec.hub_id})",
        first_line[:300],
        how_to_get=(
            f"Download it once with internet access (`hf download {spec.hub_id}`; gated models need "
            f"`hf auth login` and accepting the licence on the Hub), or pass a local folder with --model-id."
        ),
    )


def _loading_errors() -> tuple[type[BaseException], ...]:
    from huggingface_hub.errors import HfHubHTTPError

    return (OSError, HfHubHTTPError)


def load_generator(spec: ModelSpec, device: str) -> ImageGenerator:
    """Load the model of SPEC onto DEVICE; weights missing offline -> MissingWeightsError (exit 2)."""
    if spec.backend == "unsupported":
        raise UserError(
            f"{spec.key} ({spec.display_name or spec.hub_id}) is not supported by diffusers or transformers: "
            f"generate its images with the authors' code as {{prompt_id}}_{{sample_index}}.png, then run "
            f"`negt2ibench import-images --key {spec.key} --dir FOLDER --out DIR --model-id {spec.hub_id}`"
        )
    dtype = _torch_dtype(spec.dtype, device)
    try:
        if spec.backend == "janus":
            from transformers import JanusForConditionalGeneration, JanusProcessor

            model = JanusForConditionalGeneration.from_pretrained(spec.hub_id, dtype=dtype).to(device)
            processor = JanusProcessor.from_pretrained(spec.hub_id)
            generator: ImageGenerator = JanusGenerator(model, processor, device)
            generator.params["torch_dtype"] = str(dtype).removeprefix("torch.")
            return generator
        pipeline_class = import_object(spec.pipeline_class)
        kwargs: dict[str, Any] = {"dtype": dtype}  # diffusers 0.42 and transformers 5 both take `dtype`
        for name, (class_path, repo, subfolder) in spec.component_overrides.items():
            component_kwargs: dict[str, Any] = {"dtype": dtype}
            if subfolder:
                component_kwargs["subfolder"] = subfolder
            kwargs[name] = import_object(class_path).from_pretrained(repo, **component_kwargs)
        if spec.quantization == "bnb_4bit":
            kwargs["quantization_config"] = _bnb_4bit_config(spec, dtype)
        pipeline = pipeline_class.from_pretrained(spec.hub_id, **kwargs)
    except _loading_errors() as error:
        raise _missing_weights(spec, error) from None
    pipeline.to(device)
    pipeline.set_progress_bar_config(disable=True)
    generator = DiffusersGenerator(pipeline, spec)
    generator.params["torch_dtype"] = str(dtype).removeprefix("torch.")
    return generator


def _bnb_4bit_config(spec: ModelSpec, dtype):
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise UserError(f"{spec.key} is loaded in 4 bit: `pip install bitsandbytes` (needs a CUDA GPU)") from None
    from diffusers import PipelineQuantizationConfig

    return PipelineQuantizationConfig(
        quant_backend="bitsandbytes_4bit",
        quant_kwargs={"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": dtype},
        components_to_quantize=list(spec.quantized_components),
    )


def library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version()}
    for package in ("torch", "diffusers", "transformers", "accelerate", "negt2ibench"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    return versions


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


class _BackgroundEncoder:
    """PNG-encodes images in worker threads and hands the records to the writer in order."""

    def __init__(self, writer: ShardWriter, spec: ModelSpec, params: str, workers: int):
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


def check_same_settings(dataset_dir: Path, spec: ModelSpec) -> None:
    """Resuming into a split made with other settings would mix two experiments in one split: refuse."""
    from .shards import read_params

    wanted = spec.settings()
    for params in read_params(dataset_dir, spec.key):
        differing = sorted(name for name, value in wanted.items() if params.get(name, "(absent)") != value)
        if differing:
            shown = ", ".join(
                f"{name}: {params.get(name, '(absent)')!r} there, {wanted[name]!r} now" for name in differing
            )
            raise UserError(
                f"split {spec.key!r} in {dataset_dir} was made with other settings ({shown}); "
                f"write to another --out or split name, or move its shards away"
            )


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


def generate_images(
    generator: ImageGenerator,
    spec: ModelSpec,
    work: Sequence[WorkItem],
    dataset_dir: Path,
    rank: RankInfo = RankInfo(),
    batch_size: int = 1,
    shard_size: int = 128,
    device: str = "cpu",
    progress: bool = True,
    encode_workers: int = 2,
) -> RunSummary:
    """Make this rank's share of WORK that is not on disk yet, and write it in shards.

    The full work list is split by rank first and filtered by what exists second, so every
    rank computes its share alone (no coordination) and a resumed run never duplicates.
    An out-of-memory error halves the batch and retries; at batch size 1 it is a clear error.
    PNG encoding runs in background threads (zlib releases the GIL), overlapping the next
    pipeline call: at 1024² it costs about as much as a few-step pipeline call itself.
    """
    from tqdm.auto import tqdm

    if batch_size < 1:
        raise UserError("--batch-size must be at least 1")
    mine = rank.split(work)
    check_same_settings(dataset_dir, spec)
    done = existing_keys(dataset_dir, spec.key)
    todo = [item for item in mine if item.key not in done]
    summary = RunSummary(
        key=spec.key, rank=rank.rank, planned=len(mine), skipped=len(mine) - len(todo), batch_size=batch_size
    )
    params = json.dumps(run_params(spec, generator, device), sort_keys=True)
    writer = ShardWriter(dataset_dir, spec.key, rank=rank.rank, shard_size=shard_size)
    started = time.perf_counter()
    bar = tqdm(total=len(todo), unit="img", desc=f"{spec.key} r{rank.rank}", disable=not progress, file=sys.stderr)
    position = 0
    encoder = _BackgroundEncoder(writer, spec, params, workers=encode_workers)
    try:
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
                raise RuntimeError(f"the model returned {len(images)} images for {len(batch)} prompts")
            for item, generated in zip(batch, images, strict=False):
                encoder.submit(item, generated)
                summary.nsfw_flagged += int(generated.nsfw_flagged)
            encoder.drain(keep=2 * summary.batch_size)  # bounded memory; the rest encodes during the next call
            summary.generated += len(batch)
            position += len(batch)
            bar.update(len(batch))
    finally:
        # Whatever stopped the loop, finished images reach disk (KeyboardInterrupt included).
        encoder.close()
        writer.flush()
        bar.close()
        summary.seconds = time.perf_counter() - started
        summary.shards = list(writer.written)
    return summary
