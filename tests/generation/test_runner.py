"""Generation: registry, seeds, shards, resume, rank sharding, merge, OOM, NSFW flag, load_dataset."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dataset_builder.layout import split_files
from generation.backends import DiffusersGenerator
from generation.merge import merge_split, refresh_card
from generation.registry import REGISTRY, ModelSpec, get_spec, registry_lines
from generation.runner import generate_images
from generation.shards import drop_duplicates, existing_keys, image_features
from generation.work import image_seed, plan_work, select_prompts
from negt2ibench.core.errors import UserError
from negt2ibench.core.launch import Launch, contiguous_share
from negt2ibench.core.registry import import_target
from tests.helpers.generation_helpers import (
    TINY_SIZE,
    three_prompts,
    tiny_sd_pipeline,
    write_prompts_dataset,
    write_prompts_jsonl,
)

TINY = ModelSpec(
    key="tiny",
    hub_id="local/tiny-sd",
    pipeline_class="diffusers.StableDiffusionPipeline",
    steps=2,
    height=TINY_SIZE,
    width=TINY_SIZE,
    guidance=7.5,
    dtype="float32",
)


@pytest.fixture(scope="module")
def generator() -> DiffusersGenerator:
    return DiffusersGenerator(tiny_sd_pipeline(), TINY)


def read_split(dataset_dir: Path, key: str) -> dict[tuple[str, int], dict]:
    import pyarrow.parquet as pq

    rows = {}
    for path in split_files(dataset_dir, key):
        for row in pq.read_table(path).to_pylist():
            assert (row["prompt_id"], row["sample_index"]) not in rows, "duplicate image"
            rows[(row["prompt_id"], row["sample_index"])] = row
    return rows


def pixels(row: dict) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(row["image"]["bytes"])))


def assert_same_up_to_rounding(first: np.ndarray, second: np.ndarray) -> None:
    """Same seed, other batch composition: CPU matmuls sum in another order for another batch
    shape, so a value may round to the next level (measured: 1 of 3072 values, by 1). Bit
    equality is only promised for the same batch composition."""
    difference = np.abs(first.astype(int) - second.astype(int))
    assert first.shape == second.shape and difference.max() <= 2, difference.max()
    assert np.mean(difference == 0) >= 0.99, np.mean(difference == 0)


class FailAfter:
    """Wraps a generator and raises once it has produced `limit` images (a crash mid-run)."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit, self.made = inner, limit, 0
        self.params = inner.params

    def __call__(self, prompts, seeds):
        if self.made + len(prompts) > self.limit:
            raise RuntimeError("injected failure")
        self.made += len(prompts)
        return self.inner(prompts, seeds)


# --------------------------------------------------------------------------- registry


@pytest.mark.slow
def test_registry_entries_name_installed_classes():
    assert {
        "sd_1_5",
        "sd_1_5_negationclip",
        "sd_3_5_large",
        "flux_2_dev",
        "flux_2_klein_9b",
        "z_image_turbo",
        "hunyuanimage_2_1",
        "janus_pro_7b",
        "blip3o_next",
    } <= set(REGISTRY)
    for key, spec in REGISTRY.items():
        assert spec.key == key and key.replace("_", "").isalnum() and key == key.lower()
        if spec.backend == "unsupported":
            assert "import-images" in spec.note
            continue
        assert isinstance(import_target(spec.pipeline_class), type), spec.pipeline_class
        for class_path, _, _ in spec.component_overrides.values():
            assert isinstance(import_target(class_path), type), class_path
        if spec.backend == "diffusers":  # the arguments DiffusersGenerator passes exist on that pipeline
            import inspect

            accepted = inspect.signature(import_target(spec.pipeline_class).__call__).parameters
            call = DiffusersGenerator(None, spec).call_kwargs()
            assert {"prompt", "generator", "output_type", *call} <= set(accepted), key
    table18 = {"flux_2_klein_9b": 4, "hunyuanimage_2_1": 8, "z_image_turbo": 9, "flux_2_dev": 28, "sd_3_5_large": 28}
    assert {key: REGISTRY[key].steps for key in table18} == table18
    assert REGISTRY["sd_1_5"].height == 512 and REGISTRY["flux_2_dev"].quantization == "bnb_4bit"


def test_registry_listing_and_unknown_key():
    lines = registry_lines()
    assert len(lines) == len(REGISTRY) + 1
    assert any(
        line.startswith("z_image_turbo") and "Tongyi-MAI/Z-Image-Turbo" in line and " 9 " in line for line in lines
    )
    with pytest.raises(UserError, match="unknown model key 'sdxl'.*--model-id"):
        get_spec("sdxl")


# --------------------------------------------------------------------------- seeds and work planning


def test_seed_depends_only_on_prompt_and_sample():
    seeds = {image_seed(f"color_pos1_neg0_{k:03d}", i) for k in range(100) for i in range(4)}
    assert len(seeds) == 400 and all(0 <= s < 2**31 for s in seeds)
    # sha256("color_pos1_neg0_000:0")[:4], big-endian, top bit cleared: stable across processes and runs
    import hashlib

    digest = hashlib.sha256(b"color_pos1_neg0_000:0").digest()
    assert image_seed("color_pos1_neg0_000", 0) == int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def test_selection_and_plan():
    prompts = three_prompts()
    assert [p.prompt_id for p in select_prompts(prompts, categories=["color"])] == [
        "color_pos1_neg0_000",
        "color_pos0_neg1_000",
    ]
    assert len(select_prompts(prompts, settings=["pos1_neg0"], limit=1)) == 1
    with pytest.raises(UserError, match="unknown category colour"):
        select_prompts(prompts, categories=["colour"])
    work = plan_work(prompts, 2)
    assert [(w.prompt_id, w.sample_index) for w in work[:3]] == [
        ("color_pos1_neg0_000", 0),
        ("color_pos1_neg0_000", 1),
        ("color_pos0_neg1_000", 0),
    ]


def test_rank_slices_partition_the_work_contiguously():
    items = list(range(11))
    for world in (1, 2, 3, 4):
        parts = [contiguous_share(items, r, world) for r in range(world)]
        assert sum(parts, []) == items
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_accelerate_single_process_takes_everything():
    rank = Launch.detect()
    assert (rank.rank, rank.world_size) == (0, 1)
    assert rank.share(list(range(7))) == list(range(7))


def test_launcher_world_size_that_accelerate_does_not_see_is_refused(monkeypatch):
    Launch.detect()  # the process's (single) state exists
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(UserError, match="launched as 2 processes but accelerate sees 1"):
        Launch.detect()


# --------------------------------------------------------------------------- generation


@pytest.mark.slow
def test_generate_writes_loadable_split_with_identical_pixels_per_seed(generator, tmp_path):
    prompts = three_prompts()
    work = plan_work(prompts, 2)
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write_prompts_dataset(prompts, first)
    summary = generate_images(generator, TINY, work, first, batch_size=4, shard_size=4, progress=False)
    assert (summary.generated, summary.skipped, len(summary.shards)) == (6, 0, 2)
    generate_images(generator, TINY, work, second, batch_size=4, shard_size=100, progress=False)
    generate_images(generator, TINY, work, third, batch_size=1, shard_size=100, progress=False)

    rows_a, rows_b, rows_c = read_split(first, "tiny"), read_split(second, "tiny"), read_split(third, "tiny")
    assert set(rows_a) == set(rows_b) == set(rows_c) == {(p.prompt_id, i) for p in prompts for i in range(2)}
    for key, row in rows_a.items():
        assert row["seed"] == image_seed(*key) == rows_b[key]["seed"] == rows_c[key]["seed"]
        assert pixels(row).shape == (TINY_SIZE, TINY_SIZE, 3)
        np.testing.assert_array_equal(pixels(row), pixels(rows_b[key]))  # same seed, same batches: identical
        assert_same_up_to_rounding(pixels(row), pixels(rows_c[key]))  # same seed, other batch size
        params = json.loads(row["params"])
        assert params["steps"] == 2 and params["seed_rule"] and "diffusers" in params["versions"]
        assert row["model_id"] == "local/tiny-sd" and row["model_key"] == "tiny" and row["nsfw_flagged"] is False
    assert not np.array_equal(pixels(rows_a[("color_pos1_neg0_000", 0)]), pixels(rows_a[("color_pos1_neg0_000", 1)]))

    # The dataset card gains the split, and `load_dataset(DIR, "images", split=KEY)` decodes it.
    print(refresh_card(first))
    assert "images/tiny-*.parquet" in (first / "README.md").read_text()
    from datasets import load_dataset

    split = load_dataset(str(first), "images", split="tiny", cache_dir=str(tmp_path / "cache"))
    assert len(split) == 6 and split.features == image_features()
    assert isinstance(split[0]["image"], Image.Image) and split[0]["image"].size == (TINY_SIZE, TINY_SIZE)


@pytest.mark.slow
def test_resume_after_interruption_loses_and_duplicates_nothing(generator, tmp_path):
    work = plan_work(three_prompts(), 2)
    with pytest.raises(RuntimeError, match="injected"):
        generate_images(FailAfter(generator, 3), TINY, work, tmp_path, batch_size=1, shard_size=2, progress=False)
    assert len(existing_keys(tmp_path, "tiny")) == 3  # 2 in a full shard, 1 flushed on the way out
    # A hard kill mid-write leaves only a hidden temp file: ignored by resume and by the split's glob.
    (tmp_path / "images" / ".tiny-r000-00002.parquet.999.tmp").write_bytes(b"partial")

    summary = generate_images(generator, TINY, work, tmp_path, batch_size=2, shard_size=2, progress=False)
    assert (summary.skipped, summary.generated) == (3, 3)
    rows = read_split(tmp_path, "tiny")  # asserts no duplicates
    assert len(rows) == 6

    again = generate_images(generator, TINY, work, tmp_path, batch_size=2, progress=False)
    assert (again.generated, again.skipped, again.shards) == (0, 6, [])

    reference = tmp_path / "reference"  # one uninterrupted run (in other batches: equal up to rounding)
    generate_images(generator, TINY, work, reference, batch_size=6, progress=False)
    expected = read_split(reference, "tiny")
    assert set(expected) == set(rows)
    for key, row in expected.items():
        assert_same_up_to_rounding(pixels(row), pixels(rows[key]))


def test_two_ranks_write_their_own_shards_and_merge_is_complete(generator, tmp_path):
    prompts = three_prompts()
    work = plan_work(prompts, 2)
    write_prompts_jsonl(prompts, tmp_path)
    results = [
        generate_images(generator, TINY, work, tmp_path, rank=Launch(rank, 2), batch_size=2, progress=False)
        for rank in (0, 1)
    ]
    assert [r.planned for r in results] == [3, 3]
    assert {p.name.split("-")[1] for p in split_files(tmp_path, "tiny")} == {"r000", "r001"}
    report = merge_split(tmp_path, "tiny", prompts, 2)
    assert report.complete and report.images == 6
    incomplete = merge_split(tmp_path, "tiny", prompts, 3)
    assert not incomplete.complete and incomplete.missing == [(p.prompt_id, 2) for p in prompts]
    assert any("missing 3 images" in line for line in incomplete.summary_lines())


@pytest.mark.slow
def test_merge_finds_and_drops_duplicates(generator, tmp_path):
    prompts = three_prompts()[:1]
    generate_images(generator, TINY, plan_work(prompts, 2), tmp_path, progress=False)
    [shard] = split_files(tmp_path, "tiny")
    shutil.copy(shard, shard.with_name("tiny-r001-00000.parquet"))  # e.g. two runs on one folder at once
    report = merge_split(tmp_path, "tiny", prompts, 2)
    assert not report.complete and report.duplicates == {(prompts[0].prompt_id, 0): 1, (prompts[0].prompt_id, 1): 1}
    assert drop_duplicates(tmp_path, "tiny") == 2
    assert merge_split(tmp_path, "tiny", prompts, 2).complete
    assert len(split_files(tmp_path, "tiny")) == 1


@pytest.mark.slow
def test_out_of_memory_halves_the_batch_then_gives_a_clear_error(generator, tmp_path):
    import torch

    calls = []

    class SmallMemory:
        params = generator.params

        def __call__(self, prompts, seeds):
            calls.append(len(prompts))
            if len(prompts) > 1:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return generator(prompts, seeds)

    work = plan_work(three_prompts(), 1)
    summary = generate_images(SmallMemory(), TINY, work, tmp_path, batch_size=4, progress=False)
    assert summary.generated == 3 and summary.batch_size == 1 and calls == [3, 2, 1, 1, 1]

    class NoMemory:
        params = generator.params

        def __call__(self, prompts, seeds):
            raise torch.OutOfMemoryError("CUDA out of memory.")

    with pytest.raises(UserError, match="out of memory .* even with batch size 1"):
        generate_images(NoMemory(), TINY, work, tmp_path / "other", batch_size=2, progress=False)


def test_black_safety_checker_images_are_flagged(tmp_path):
    from generation.backends import is_black

    assert is_black(Image.new("RGB", (4, 4))) and not is_black(Image.new("RGB", (4, 4), (0, 0, 1)))

    class BlackOutput:  # what a pipeline returns when its safety checker blanks every image
        def __init__(self, n):
            self.images = [Image.new("RGB", (8, 8))] * n
            self.nsfw_content_detected = None

    class CensoringPipeline:
        def __call__(self, prompt, generator, output_type, **kwargs):
            assert len(generator) == len(prompt) and kwargs["num_inference_steps"] == 2
            return BlackOutput(len(prompt))

    censored = DiffusersGenerator(CensoringPipeline(), TINY)
    summary = generate_images(censored, TINY, plan_work(three_prompts(), 1), tmp_path, progress=False)
    assert summary.nsfw_flagged == 3
    assert all(row["nsfw_flagged"] for row in read_split(tmp_path, "tiny").values())


@pytest.mark.slow
def test_janus_image_mode_is_seeded_per_image_and_loads_from_a_folder(tmp_path):
    from generation.backends import JanusGenerator, load_generator
    from tests.helpers.generation_helpers import JANUS_IMAGE_SIZE, tiny_janus

    model, processor = tiny_janus()
    janus = JanusGenerator(model, processor, "cpu")
    pair = janus(["a photo of a red cup", "a photo of a glass cup"], [11, 12])
    alone = janus(["a photo of a glass cup"], [12])
    assert pair[0].image.size == (JANUS_IMAGE_SIZE, JANUS_IMAGE_SIZE) and pair[0].image.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(pair[1].image), np.asarray(alone[0].image))
    assert not np.array_equal(np.asarray(pair[0].image), np.asarray(janus(["a photo of a red cup"], [13])[0].image))

    folder = tmp_path / "tiny-janus"
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    spec = ModelSpec(
        key="janus_tiny",
        hub_id=str(folder),
        pipeline_class="transformers.JanusForConditionalGeneration",
        backend="janus",
        dtype="float32",
    )
    loaded = load_generator(spec, "cpu")
    again = loaded(["a photo of a glass cup"], [12])
    np.testing.assert_array_equal(np.asarray(again[0].image), np.asarray(alone[0].image))
    summary = generate_images(loaded, spec, plan_work(three_prompts()[:1], 2), tmp_path / "data", progress=False)
    assert summary.generated == 2
    assert (
        json.loads(read_split(tmp_path / "data", "janus_tiny")[("color_pos1_neg0_000", 0)]["params"])["generation_mode"]
        == "image"
    )


def test_resuming_with_other_settings_is_refused(generator, tmp_path):
    from dataclasses import replace

    work = plan_work(three_prompts()[:1], 1)
    generate_images(generator, TINY, work, tmp_path, progress=False)
    more_steps = replace(TINY, steps=3)
    with pytest.raises(UserError, match="made with other settings .*steps: 2 there, 3 now"):
        generate_images(
            DiffusersGenerator(generator.pipeline, more_steps),
            more_steps,
            plan_work(three_prompts(), 1),
            tmp_path,
            progress=False,
        )
    assert len(existing_keys(tmp_path, "tiny")) == 1
