"""Overhead of the generation loop beyond the pipeline call (run by hand, not a test).

    .venv/bin/python benchmarks/generation_overhead.py [--images 48] [--batch-size 4]

Runs `generate_images` with the tiny random StableDiffusionPipeline of the tests, timing the
pipeline calls inside the loop; overhead = loop wall time − pipeline time (planning, resume scan,
PNG encoding, parquet writing, progress bar), reported per image and as a ratio of the pipeline
time. The tiny model makes the ratio a worst case; the second table gives the absolute cost of
encoding and writing one image at the real sizes (512², 1024²).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generation.backends import DiffusersGenerator  # noqa: E402
from generation.registry import ModelSpec  # noqa: E402
from generation.runner import generate_images  # noqa: E402
from generation.shards import ImageRecord, ShardWriter, png_bytes  # noqa: E402
from generation.work import plan_work  # noqa: E402
from tests.helpers.generation_helpers import make_prompt, tiny_sd_pipeline  # noqa: E402


class TimedGenerator:
    def __init__(self, inner):
        self.inner, self.params, self.seconds = inner, inner.params, 0.0

    def __call__(self, prompts, seeds):
        start = time.perf_counter()
        try:
            return self.inner(prompts, seeds)
        finally:
            self.seconds += time.perf_counter() - start


def loop_overhead(size: int, images: int, batch_size: int) -> dict:
    spec = ModelSpec(
        key="bench",
        hub_id="local/tiny",
        pipeline_class="diffusers.StableDiffusionPipeline",
        steps=2,
        height=size,
        width=size,
        dtype="float32",
    )
    generator = DiffusersGenerator(tiny_sd_pipeline(), spec)
    generator(["warm up"], [0])
    prompts = [make_prompt("color", "pos1_neg0", k, f"a photo of a red cup number {k}") for k in range(images // 2)]
    work = plan_work(prompts, 2)
    timed = TimedGenerator(generator)
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        summary = generate_images(timed, spec, work, Path(folder), batch_size=batch_size, shard_size=16, progress=True)
        total = time.perf_counter() - start
    overhead = total - timed.seconds
    return {
        "size": size,
        "images": summary.generated,
        "pipeline_ms": 1000 * timed.seconds / summary.generated,
        "overhead_ms": 1000 * overhead / summary.generated,
        "ratio": overhead / timed.seconds,
    }


def synthetic_photo(size: int, rng: np.random.Generator):
    """Smooth gradients plus mild noise: compresses like a photo, not like flat color or pure noise."""
    from PIL import Image

    y, x = np.mgrid[0:size, 0:size] / size
    base = np.stack([np.sin(6 * x + 2 * y), np.cos(5 * y - 3 * x), np.sin(4 * (x + y))], axis=-1)
    pixels = (127 + 100 * base + rng.normal(0, 6, (size, size, 3))).clip(0, 255).astype(np.uint8)
    return Image.fromarray(pixels)


def write_cost(size: int, images: int = 16) -> dict:
    rng = np.random.default_rng(0)
    frames = [synthetic_photo(size, rng) for _ in range(4)]
    with tempfile.TemporaryDirectory() as folder:
        writer = ShardWriter(Path(folder), "bench", shard_size=images)
        start = time.perf_counter()
        encoded = [png_bytes(frames[i % 4]) for i in range(images)]
        encode = time.perf_counter() - start
        start = time.perf_counter()
        for i, data in enumerate(encoded):
            writer.add(ImageRecord(f"p{i}", 0, i, data, "m", "bench", "{}"))
        writer.flush()
        write = time.perf_counter() - start
    return {
        "size": size,
        "encode_ms": 1000 * encode / images,
        "write_ms": 1000 * write / images,
        "png_kb": sum(map(len, encoded)) / images / 1024,
    }


class SleepingGenerator:
    """Stands in for a GPU pipeline: waits (GIL released, like a CUDA sync) and returns 1024² photos."""

    def __init__(self, seconds: float, size: int):
        rng = np.random.default_rng(1)
        self.frames = [synthetic_photo(size, rng) for _ in range(4)]
        self.seconds, self.params = seconds, {"backend": "sleep"}

    def __call__(self, prompts, seeds):
        from generation.backends import GeneratedImage

        time.sleep(self.seconds * len(prompts))
        return [GeneratedImage(self.frames[seed % 4]) for seed in seeds]


def overlapped_overhead(seconds_per_image: float, size: int, images: int, batch_size: int) -> dict:
    spec = ModelSpec(key="bench", hub_id="gpu/stand-in", pipeline_class="diffusers.DiffusionPipeline")
    prompts = [make_prompt("color", "pos1_neg0", k, f"prompt {k}") for k in range(images)]
    generator = SleepingGenerator(seconds_per_image, size)
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        summary = generate_images(
            generator, spec, plan_work(prompts, 1), Path(folder), batch_size=batch_size, shard_size=16, progress=False
        )
        total = time.perf_counter() - start
    pipeline = seconds_per_image * summary.generated
    return {
        "pipeline_ms": 1000 * seconds_per_image,
        "overhead_ms": 1000 * (total - pipeline) / summary.generated,
        "ratio": (total - pipeline) / pipeline,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    print("| tiny pipeline | images | pipeline ms/img | loop overhead ms/img | overhead / pipeline |")
    print("|---|---:|---:|---:|---:|")
    loop_overhead(32, 8, args.batch_size)  # warm-up: first imports (pyarrow writer, tqdm) are not per-image costs
    for size in (32, 64):
        r = loop_overhead(size, args.images, args.batch_size)
        print(f"| {r['size']}² | {r['images']} | {r['pipeline_ms']:.1f} | {r['overhead_ms']:.2f} | {r['ratio']:.1%} |")
    print()
    print("| image | PNG encode ms/img | parquet write ms/img | PNG size |")
    print("|---|---:|---:|---:|")
    for size in (512, 1024):
        r = write_cost(size)
        print(f"| {r['size']}² | {r['encode_ms']:.0f} | {r['write_ms']:.1f} | {r['png_kb']:.0f} KiB |")
    print()
    print("| stand-in GPU pipeline, 1024² images | loop overhead ms/img | overhead / pipeline |")
    print("|---|---:|---:|")
    for seconds in (0.5, 2.0):
        r = overlapped_overhead(seconds, 1024, images=32, batch_size=args.batch_size)
        print(f"| {r['pipeline_ms']:.0f} ms/img | {r['overhead_ms']:.1f} | {r['ratio']:.1%} |")


if __name__ == "__main__":
    main()
