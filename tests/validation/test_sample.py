"""`annotation-sample` (stratified, seeded) and the assignment of images to annotators."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dataset_builder.vocabulary import CATEGORIES
from negt2ibench.cli import main
from tests.helpers.space_helpers import write_images_dataset
from tests.helpers.validation_helpers import annotation, corpus, prompts_round_robin
from validation.assignment import Progress, next_image
from validation.sample import SETTING_ORDER, SampleItem, allocate, read_sample, stratified_sample


def candidates(splits=("a_model", "b_model", "c_model"), samples=4) -> list[SampleItem]:
    return [
        SampleItem(
            prompt_id=p.prompt_id,
            model_key=split,
            sample_index=s,
            category=p.category,
            setting=p.setting,
        )
        for p in corpus().values()
        for split in splits
        for s in range(samples)
    ]


def test_full_sample_is_even_over_categories_settings_and_splits():
    sample = stratified_sample(candidates(), per_category=100, seed=0)
    assert len(sample) == 600 and len({i.image_key for i in sample}) == 600
    assert Counter(i.category for i in sample) == dict.fromkeys(CATEGORIES, 100)
    assert Counter(i.setting for i in sample) == dict.fromkeys(SETTING_ORDER, 75)
    assert Counter(i.model_key for i in sample) == {"a_model": 200, "b_model": 200, "c_model": 200}
    per_cell = Counter((i.category, i.setting) for i in sample)
    assert set(per_cell.values()) == {12, 13}
    # within a (category, setting) cell, distinct prompts
    assert len({(i.category, i.setting, i.prompt_id) for i in sample}) == 600
    # mixed order, not category blocks
    assert len({i.category for i in sample[:12]}) > 1


def test_sample_is_seeded():
    items = candidates(splits=("a_model", "b_model"), samples=2)
    first = stratified_sample(items, per_category=20, seed=3)
    assert first == stratified_sample(list(reversed(items)), per_category=20, seed=3)
    assert first != stratified_sample(items, per_category=20, seed=4)


def test_short_cells_are_filled_from_other_splits_and_settings():
    # Only one image in every (color, setting) cell of split b, none of a: all 8 from b, the rest short.
    items = [
        i for i in candidates(splits=("b_model",), samples=1) if i.category == "color" and i.prompt_id[-3:] == "000"
    ]
    assert len(items) == 8
    assert len(stratified_sample(items, per_category=20, seed=0)) == 8


def test_allocate_respects_capacities():
    import random

    assert allocate(10, {"a": 2, "b": 100, "c": 100}, random.Random(0), {}) == {"a": 2, "b": 4, "c": 4}
    assert allocate(5, {"a": 1, "b": 1}, random.Random(0), {}) == {"a": 1, "b": 1}
    # the remainder goes to the bin with the least so far
    assert allocate(3, {"a": 9, "b": 9}, random.Random(0), {"a": 5, "b": 0}) == {"a": 1, "b": 2}


def test_cli_writes_the_sample_from_a_dataset_folder(tmp_path, capsys):
    prompts = prompts_round_robin(96)  # 2 prompts per (category, setting)
    dataset = write_images_dataset(tmp_path / "data", prompts, "sd_1_5", samples=2)
    write_images_dataset(dataset, prompts, "flux_2_dev", samples=2)
    out = tmp_path / "sample.jsonl"
    args = ["annotation-sample", "--images", str(dataset), "--splits", "sd_1_5", "flux_2_dev", "--out", str(out)]
    assert main([*args, "--per-category", "16", "--seed", "1"]) == 0
    sample = read_sample(out)
    assert len(sample) == 96
    assert Counter(i.model_key for i in sample) == {"sd_1_5": 48, "flux_2_dev": 48}
    assert Counter(i.setting for i in sample) == dict.fromkeys(SETTING_ORDER, 12)
    line = json.loads(out.read_text().splitlines()[0])
    assert set(line) == {"prompt_id", "model_key", "sample_index", "category", "setting", "dataset", "shard", "row"}
    item = sample[0]
    assert item.shard == f"images/{item.model_key}-00000-of-00001.parquet"
    import pyarrow.parquet as pq

    row = pq.read_table(dataset / item.shard, columns=["prompt_id", "sample_index"]).slice(item.row, 1).to_pylist()[0]
    assert (row["prompt_id"], row["sample_index"]) == (item.prompt_id, item.sample_index)
    printed = capsys.readouterr().out
    assert "wrote 96 images" in printed and "by split: flux_2_dev 48, sd_1_5 48" in printed
    # An existing sample is not replaced by accident; an unknown split is named.
    assert main([*args, "--per-category", "16"]) == 1
    assert "pass --overwrite" in capsys.readouterr().err
    unknown = ["annotation-sample", "--images", str(dataset), "--splits", "sdxl", "--out", str(tmp_path / "x.jsonl")]
    assert main(unknown) == 1
    assert "no split sdxl (splits there: flux_2_dev, sd_1_5)" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ assignment


def sample_of(n: int) -> list[SampleItem]:
    return [
        SampleItem(prompt_id=p.prompt_id, model_key="m", sample_index=0, category=p.category, setting=p.setting)
        for p in prompts_round_robin(n)
    ]


def test_assignment_resumes_and_gives_each_image_to_three_people():
    sample = sample_of(4)
    prompts = [corpus()[i.prompt_id] for i in sample]
    stored = [annotation(prompts[0], name, True) for name in ("ann", "bob", "cat")]  # image 0 complete
    stored += [annotation(prompts[1], "ann", True), annotation(prompts[2], "bob", True)]
    # ann did 0 and 1: resumes on 2
    ann = next_image(sample=sample, annotations=stored, annotator="ann")
    assert ann.position == 2 and ann.item == sample[2]
    assert ann.history == (sample[0].image_key, sample[1].image_key)
    assert ann.progress == Progress(done=2, left=2, complete=1, total=4)
    # a newcomer skips the complete image 0
    dan = next_image(sample=sample, annotations=stored, annotator="dan")
    assert dan.position == 1 and dan.progress == Progress(done=0, left=3, complete=1, total=4)
    # images someone else holds open count towards the three
    reserved = {sample[1].image_key: {"eve", "fay"}}
    assert next_image(sample=sample, annotations=stored, annotator="dan", reserved=reserved).position == 2
    # nothing left
    everything = [annotation(p, name, True) for p in prompts for name in ("ann", "bob", "cat")]
    done = next_image(sample=sample, annotations=everything, annotator="ann")
    assert done.item is None and done.position is None and done.progress == Progress(4, 0, 4, 4)
    assert next_image(sample=sample, annotations=everything, annotator="dan").item is None


@pytest.mark.parametrize("per_image", [1, 2])
def test_assignment_per_image(per_image):
    sample = sample_of(2)
    prompt = corpus()[sample[0].prompt_id]
    stored = [annotation(prompt, "ann", True)]
    expected = 0 if per_image == 2 else 1
    assert next_image(sample=sample, annotations=stored, annotator="bob", per_image=per_image).position == expected
