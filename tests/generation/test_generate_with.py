"""`generation.generate_with`: any function (prompts, seeds) -> PIL images fills an image split."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from dataset_builder.layout import split_files
from generation import generate_with
from generation.backends import GeneratedImage
from generation.work import image_seed
from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.launch import Launch
from tests.helpers.generation_helpers import three_prompts, write_prompts_dataset


class SeededModel:
    """A stand-in for a model no library supports: an 8x8 image whose colour is its seed's bytes."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, prompts, seeds):
        self.calls.append(list(prompts))
        return [Image.new("RGB", (8, 8), tuple(seed.to_bytes(4, "big")[1:])) for seed in seeds]


def rows(folder, key):
    return {
        (row["prompt_id"], row["sample_index"]): row
        for path in split_files(folder, key)
        for row in pq.read_table(path).to_pylist()
    }


def test_a_callable_fills_a_split_with_seeded_images_and_resumes(tmp_path):
    prompts = three_prompts()
    folder = write_prompts_dataset(prompts, tmp_path / "data")
    model = SeededModel()
    summary = generate_with(
        model, key="my_model", out=folder, samples=2, batch_size=4, model_id="lab/my-model", progress=False
    )
    assert (summary.generated, summary.skipped, summary.rank) == (6, 0, 0)
    assert [len(call) for call in model.calls] == [4, 2]
    assert model.calls[0][:2] == ["a photo of a red cup", "a photo of a red cup"]  # prompt-major, two samples
    assert summary.completeness.complete and summary.completeness.images == 6
    assert summary.card.startswith("dataset card refreshed")
    assert "images/my_model-*.parquet" in (folder / "README.md").read_text()

    written = rows(folder, "my_model")
    assert set(written) == {(p.prompt_id, i) for p in prompts for i in range(2)}
    for (prompt_id, index), row in written.items():
        seed = image_seed(prompt_id, index)
        assert row["seed"] == seed and row["model_id"] == "lab/my-model" and row["model_key"] == "my_model"
        pixel = np.asarray(Image.open(io.BytesIO(row["image"]["bytes"])))[0, 0]
        assert tuple(pixel) == tuple(seed.to_bytes(4, "big")[1:])
        params = json.loads(row["params"])
        assert params["backend"] == "callable" and params["callable"].endswith("SeededModel")
        assert row["nsfw_flagged"] is False

    again = generate_with(model, key="my_model", out=folder, samples=2, progress=False)
    assert (again.generated, again.skipped, len(model.calls)) == (0, 6, 2)  # resumed: the model is not called


def test_settings_are_recorded_and_a_resume_with_other_settings_is_refused(tmp_path):
    folder = write_prompts_dataset(three_prompts(), tmp_path / "data")
    generate_with(SeededModel(), key="m", out=folder, samples=1, settings={"steps": 30}, progress=False, merge=False)
    assert {json.loads(row["params"])["settings"]["steps"] for row in rows(folder, "m").values()} == {30}
    with pytest.raises(UserError, match="was made with other settings"):
        generate_with(SeededModel(), key="m", out=folder, samples=1, settings={"steps": 50}, progress=False)


def test_two_simulated_processes_share_the_work(tmp_path):
    folder = write_prompts_dataset(three_prompts(), tmp_path / "data")
    shares = [
        generate_with(SeededModel(), key="m", out=folder, samples=2, launch=Launch(rank, 2), progress=False)
        for rank in (0, 1)
    ]
    assert [(s.planned, s.generated) for s in shares] == [(3, 3), (3, 3)]
    assert {path.name.split("-")[1] for path in split_files(folder, "m")} == {"r000", "r001"}
    assert len(rows(folder, "m")) == 6


def test_bad_functions_and_arguments_are_clear_errors(tmp_path):
    folder = write_prompts_dataset(three_prompts(), tmp_path / "data")
    with pytest.raises(UserError, match="returned a ndarray as image 0; return one PIL image per prompt"):
        generate_with(lambda prompts, seeds: [np.zeros((8, 8, 3))] * len(prompts), key="m", out=folder, progress=False)
    with pytest.raises(UserError, match="returned 1 images for 2 prompts"):
        generate_with(lambda p, s: [Image.new("RGB", (8, 8))], key="m", out=folder, batch_size=2, progress=False)
    with pytest.raises(UsageError, match="model key 'My Model' is not a valid split name"):
        generate_with(SeededModel(), key="My Model", out=folder)
    with pytest.raises(UsageError, match="samples must be a positive integer, got 0"):
        generate_with(SeededModel(), key="m", out=folder, samples=0)
    with pytest.raises(UserError, match="needs a callable"):
        generate_with("not a function", key="m", out=folder)
    assert not split_files(folder, "m")


def test_a_generated_image_can_be_flagged(tmp_path):
    folder = write_prompts_dataset(three_prompts()[:1], tmp_path / "data")

    def censoring(prompts, seeds):
        return [GeneratedImage(Image.new("RGB", (8, 8), (9, 9, 9)), nsfw_flagged=True) for _ in prompts]

    summary = generate_with(censoring, key="m", out=folder, samples=1, progress=False, merge=False)
    assert summary.nsfw_flagged == 1 and summary.completeness is None
    assert [row["nsfw_flagged"] for row in rows(folder, "m").values()] == [True]
