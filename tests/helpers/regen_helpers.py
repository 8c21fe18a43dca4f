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
- `cache_models`: the model resolver of these tests (`leaderboard.checks.model_source.ModelResolver`): a
  repo in this session's Hugging Face cache is public at its cached commit, any other is not public.
- `PixelPerception`: the rectangle double whose objects are found only where the pixel at their box's
  centre is bright, so a verdict turns on one pixel (what the region measure cannot see).
- `edited_split`: another split's images, each edited by a function, with their records unchanged (a
  cheat's images recorded as the model's own).
- `regen_world`, `stored`, `verify`: ten prompts and model A's honest images; a submission of a
  split, with the results its scoring gives; `verify-job` on it (the real steps and loader, a
  perception double as the scorer).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_builder.records import PromptIndex, PromptRecord

if TYPE_CHECKING:
    from leaderboard.store.sqlite_store import Entry, SQLiteStore

REPO_A = "test-regen/tiny-a"
SECRET = b"regeneration test secret"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
# benchmarks/RESULTS.md, *Regeneration calibration*: every same-seed pair stays within t up to
# injected drift sigma = 0.1; at 0.3 every pair is beyond it (latent noise at every step is no hardware drift).
DRIFT_WITHIN_BOUND = 0.1


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


def object_centres(prompt: PromptRecord, width: int, height: int) -> list[tuple[int, int]]:
    """The centre pixel of each object's box as `RectanglePerception` lays them out (equal columns)."""
    column = width // max(len(prompt.objects), 1)
    return [(index * column + column // 6 + column // 3, height // 2) for index in range(len(prompt.objects))]


def _pixel_perception():
    from evaluator.observation import ObjectObservation
    from tests.helpers.space_helpers import RectanglePerception

    class PixelPerception(RectanglePerception):
        """`RectanglePerception` whose object is absent unless the pixel at its box's centre is bright (grey >= 128)."""

        def observe(self, images, prompts):
            import numpy as np

            observations = super().observe(images, prompts)
            for image, prompt, observation in zip(images, prompts, observations, strict=True):
                grey = np.asarray(image.convert("L"))
                for name, (x, y) in zip(prompt.objects, object_centres(prompt, *image.size), strict=True):
                    if grey[y, x] < 128:
                        observation.objects[name] = ObjectObservation(name=name, present=False)
            return observations

    return PixelPerception


def pixel_perception():
    """A `PixelPerception` (module docstring)."""
    return _pixel_perception()()


def light_absent_objects(prompt: PromptRecord, image):
    """IMAGE with the centre pixel of each object `PixelPerception` would not find set to white: one pixel
    per object, each turning a missing object (and its statements) into a found one."""
    from PIL import Image

    edited = image.convert("RGB").copy()
    for x, y in object_centres(prompt, *edited.size):
        if Image.Image.getpixel(edited.convert("L"), (x, y)) < 128:
            edited.putpixel((x, y), (255, 255, 255))
    return edited


def edited_split(folder: Path, source: Path, key: str, edit) -> Path:
    """The split KEY of SOURCE with each image replaced by `edit(prompt_id, sample_index, image)`, every
    record (seed, model, params) kept: a cheat's images, recorded as the model's own."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from dataset_builder.layout import split_files
    from generation.shards import image_features

    for path in split_files(source, key):
        rows = pq.read_table(path).to_pylist()
        for row in rows:
            image = Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB")
            buffer = io.BytesIO()
            edit(row["prompt_id"], int(row["sample_index"]), image).save(buffer, format="PNG")
            row["image"] = {"bytes": buffer.getvalue(), "path": None}
        target = folder / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=image_features().arrow_schema), target)
    return folder


def cache_models(repo_id: str, commit: str | None):
    """A repo in this session's Hugging Face cache is public (at the recorded commit when cached, else its
    cached main); any other is not public (as the Hub answers for a private or missing repo)."""
    from leaderboard.checks.model_source import ModelNotPublic, ModelUnreachable, hub_model

    try:
        return hub_model(repo_id, commit)  # offline in the tests: the cache answers
    except ModelUnreachable:
        raise ModelNotPublic(
            f"{repo_id} is not a public model on the Hub (it does not exist, or it is private)"
        ) from None


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


# -- entries verified with them (the perception double as the scorer) -------------------------------


def regen_world(root: Path) -> dict[str, Any]:
    """Ten prompts (40 images: every one regenerated, at most 2 may not be the model's own), model A
    in this session's Hugging Face cache at a commit, and the honest images as ROOT/images/org/honest."""
    from dataset_builder.loading import load_prompts

    put_tiny_model(Path(os.environ["HF_HUB_CACHE"]), REPO_A, seed=0, commit=COMMIT_A)
    prompts = load_prompts(None)[::480][:10]
    spec = tiny_spec(REPO_A, COMMIT_A)
    honest_split(root / "images" / "org" / "honest", prompts, spec)
    return {"root": root, "prompts": prompts, "spec": spec, "images": root / "images"}


def scored_results(folder: Path, prompts, key: str, perception: Any = None) -> list:
    """The results `negt2ibench score` would write for the split (a perception double as the scorer)."""
    from leaderboard.store.image_sources import ParquetImages
    from negt2ibench.api import Evaluator
    from tests.helpers.space_helpers import RectanglePerception

    evaluator = Evaluator("current", prompts=PromptIndex(prompts), perception=perception or RectanglePerception())
    keys = [(p.prompt_id, s) for p in prompts for s in range(4)]
    found = dict(ParquetImages.from_folder(folder, key).images(keys))
    by_id = {p.prompt_id: p for p in prompts}
    return evaluator.score_many(
        [found[k] for k in keys],
        [by_id[k[0]] for k in keys],
        model_key=key,
        sample_indices=[k[1] for k in keys],
        progress=False,
        num_workers=0,
    )


def stored(world, tmp_path, name: str, perception: Any = None) -> tuple[SQLiteStore, Entry]:
    """The submission of the images ROOT/org/NAME with the results their scoring gives."""
    from evaluator.config import PRESETS
    from leaderboard.store.sqlite_store import Entry, SQLiteStore

    results = scored_results(world["images"] / "org" / name, world["prompts"], world["spec"].key, perception)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = Entry(
        model_name=name,
        model_key=name,
        submitter=f"{name}-account",
        images_repo=f"org/{name}",
        images_revision="main",
        config_hash=PRESETS["current"].config_hash,
    )
    return store, store.add_submission(entry, results)


def verify(world, tmp_path, store: SQLiteStore, entry: Entry, mode: str = "spot", **context) -> Entry:
    """`verify-job` on the entry: the real steps, the perception double as the scorer; what it said on `said`."""
    from leaderboard.checks.check_setup import SpotCheckSetup
    from leaderboard.checks.full_rescore_run import local_images
    from leaderboard.cli import generator_loader
    from leaderboard.jobs.verify_job import VerifyContext, verify_entry
    from negt2ibench.api import Evaluator
    from tests.helpers.space_helpers import RectanglePerception

    perception = context.pop("perception", None) or RectanglePerception()
    evaluator = Evaluator("current", prompts=PromptIndex(world["prompts"]), perception=perception)

    def score(images, prompts, model_key, sample_indices):
        return evaluator.score_many(
            images, prompts, model_key=model_key, sample_indices=sample_indices, progress=False, num_workers=0
        )

    setup = SpotCheckSetup(PromptIndex(world["prompts"]), score, local_images(world["images"]), secret=SECRET)
    said: list[str] = context.pop("said", [])
    loader = context.pop("load", generator_loader("cpu", False))
    context.setdefault("resolve_model", cache_models)
    run = VerifyContext(store, setup, tmp_path / "work", say=said.append, load_generator=loader, **context)
    return verify_entry(run, entry.submission_id, mode)


def submit_and_verify(world, tmp_path, name: str, **context) -> Entry:
    store, entry = stored(world, tmp_path, name, context.get("perception"))
    return verify(world, tmp_path, store, entry, **context)
