"""Builders for the regeneration check and the fresh draw: tiny random diffusers pipelines laid out in a
Hugging Face cache as a pinned Hub repo, and the images an honest or a cheating submitter makes with them.

- `put_tiny_model(cache, repo_id, seed)`: `tiny_sd_pipeline(seed)` saved as the cache keeps a
  downloaded snapshot, at a commit; `load_generator` then loads it offline by hub id and revision.
- `tiny_spec(repo_id, commit, key)`: the `generate --model-id REPO --revision COMMIT` spec (2 steps, 32 px).
- `honest_split`: the images `negt2ibench generate` makes (the real run, its real `params`).
- `best_of_four_split`: per sample, the brightest of 4 images from *other* seeds, recorded with the
  benchmark's seed and the honest params (the cheat's best lie).
- `other_model_split`: another tiny model's images under the first one's name, commit and params.
- `DriftedGenerator`: a generator whose latents get seeded N(0, sigma²) noise after every denoising
  step: hardware drift's stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dataset_builder.records import PromptRecord

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
DRIFT_WITHIN_BOUND = 0.5  # benchmarks/RESULTS.md: every pair stays above t up to sigma = 1.0


def put_tiny_model(cache: Path, repo_id: str, seed: int = 0, commit: str = COMMIT_A) -> str:
    """`tiny_sd_pipeline(seed)` as the Hugging Face cache CACHE keeps REPO_ID's snapshot at COMMIT."""
    from tests.helpers.generation_helpers import tiny_sd_pipeline

    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    if not snapshot.exists():
        tiny_sd_pipeline(seed).save_pretrained(snapshot)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return commit


def tiny_spec(repo_id: str, commit: str | None, key: str = "tiny_model"):
    from generation.registry import custom_spec

    return custom_spec(repo_id, key, steps=2, height=32, width=32, dtype="float32", revision=commit)


def load_tiny(spec):
    from generation.backends import load_generator

    return load_generator(spec, "cpu")


def honest_split(folder: Path, prompts: Sequence[PromptRecord], spec, generator: Any = None) -> Path:
    """The split SPEC.key of FOLDER as `negt2ibench generate` writes it (4 images per prompt)."""
    from generation.runner import generate_images
    from generation.work import plan_work

    generate_images(generator or load_tiny(spec), spec, plan_work(prompts, 4), folder, batch_size=4, progress=False)
    return folder


def _records(folder: Path, key: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    from dataset_builder.layout import split_files

    return [row for path in split_files(folder, key) for row in pq.read_table(path).to_pylist()]


def best_of_four_split(folder: Path, prompts: Sequence[PromptRecord], spec, honest: Path) -> Path:
    """Per (prompt, sample): the brightest of 4 images made with other seeds (a stand-in for "the one
    that passes"), recorded with the benchmark's seed and the honest run's params."""
    import numpy as np

    from generation.shards import ImageRecord, ShardWriter, png_bytes
    from generation.work import image_seed

    params = _records(honest, spec.key)[0]["params"]
    generator = load_tiny(spec)
    writer = ShardWriter(folder, spec.key)
    for prompt in prompts:
        for sample in range(4):
            seeds = [image_seed(prompt.prompt_id, 4 + 4 * sample + j) for j in range(4)]
            made = generator([prompt.prompt] * 4, seeds)
            best = max(made, key=lambda g: float(np.asarray(g.image).mean())).image
            writer.add(
                ImageRecord(
                    prompt.prompt_id,
                    sample,
                    image_seed(prompt.prompt_id, sample),
                    png_bytes(best),
                    spec.hub_id,
                    spec.key,
                    params,
                )  # fmt: skip
            )
    writer.flush()
    return folder


def other_model_split(folder: Path, prompts: Sequence[PromptRecord], spec, other_pipeline, commit: str) -> Path:
    """ANOTHER pipeline's images, recorded as SPEC's model at COMMIT (its name, commit and settings)."""
    from generation.backends import DiffusersGenerator

    generator = DiffusersGenerator(other_pipeline, spec)
    generator.params.update({"torch_dtype": "float32", "commit": commit})
    return honest_split(folder, prompts, spec, generator)


class DriftedGenerator:
    """A loaded `DiffusersGenerator` whose latents get N(0, SIGMA²) noise after every denoising step,
    seeded by the batch's first seed: the same image drifts the same way every time."""

    def __init__(self, inner: Any, sigma: float):
        self.inner, self.sigma, self.params = inner, sigma, inner.params

    def __call__(self, prompts: list[str], seeds: list[int]):
        import torch

        from generation.backends import GeneratedImage

        noise = torch.Generator("cpu").manual_seed(seeds[0] + 7_919)

        def drift(pipeline, step, timestep, tensors):
            latents = tensors["latents"]
            shaken = torch.randn(latents.shape, generator=noise, dtype=torch.float32)
            tensors["latents"] = latents + self.sigma * shaken.to(latents.device, latents.dtype)
            return tensors

        generators = [torch.Generator("cpu").manual_seed(seed) for seed in seeds]
        output = self.inner.pipeline(
            prompt=list(prompts),
            generator=generators,
            output_type="pil",
            callback_on_step_end=drift,
            callback_on_step_end_tensor_inputs=["latents"],
            **self.inner.call_kwargs(),
        )
        return [GeneratedImage(image=image) for image in output.images]


def with_params(folder: Path, key: str, change: dict[str, Any]) -> Path:
    """Rewrite every image's params of the split with CHANGE applied (a record made elsewhere)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dataset_builder.layout import split_files
    from generation.shards import image_features

    for path in split_files(folder, key):
        rows = pq.read_table(path).to_pylist()
        for row in rows:
            row["params"] = json.dumps({**json.loads(row["params"]), **change}, sort_keys=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=image_features().arrow_schema), path)
    return folder
