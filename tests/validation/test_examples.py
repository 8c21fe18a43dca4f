"""`negt2ibench examples`: the files it writes are what the real code writes, labelled as examples,
and the shipped result files are what the real pipeline writes on the example pictures."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from evaluator.geneval.records import read_geneval_records
from evaluator.resultio import read_results
from negt2ibench.cli import main
from validation.annotations import read_annotations
from validation.examples import ANNOTATORS, DATA, EXAMPLE_KEY, EXAMPLE_PRESETS, PER_CATEGORY, draw_picture
from validation.sample import read_sample


def test_examples_writes_every_file_from_the_real_code(tmp_path, capsys):
    out = tmp_path / "examples"
    assert main(["examples", "--out", str(out)]) == 0
    assert "README.md" in capsys.readouterr().out
    pictures = sorted(path.stem.removesuffix("_0") for path in (out / "pictures").glob("*.png"))
    assert len(pictures) == 48  # one per category × setting
    [shard] = (out / "dataset" / "images").glob(f"{EXAMPLE_KEY}-*.parquet")
    assert sorted(pq.read_table(shard, columns=["prompt_id"]).column("prompt_id").to_pylist()) == pictures
    for preset in EXAMPLE_PRESETS:
        records = read_results(out / "results" / f"{preset}.jsonl")
        assert sorted(r.prompt_id for r in records) == pictures
        assert {(r.model_key, r.evaluator, r.error) for r in records} == {(EXAMPLE_KEY, f"negt2ibench/{preset}", None)}
    sample = read_sample(out / "sample.jsonl")
    assert len(sample) == 6 * PER_CATEGORY and {item.prompt_id for item in sample} <= set(pictures)
    annotations = read_annotations(out / "annotations.jsonl")
    assert {(a.prompt_id, a.annotator) for a in annotations} == {(i.prompt_id, n) for i in sample for n in ANNOTATORS}
    lines = read_geneval_records(out / "geneval" / "results.jsonl")
    assert len(lines) == 12 and all(os.path.isfile(out / line.filename) for line in lines)  # paths inside DIR
    readme = (out / "README.md").read_text()
    assert "Nothing here is a model's output" in readme and "negt2ibench report" in readme


def test_examples_refuses_a_folder_that_holds_something(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["examples", "--out", str(tmp_path)]) == 1
    assert "is not empty" in capsys.readouterr().err and (tmp_path / "keep.txt").read_text() == "mine"


def test_the_pictures_say_they_are_synthetic_and_are_the_same_each_time():
    one, two = draw_picture("color_pos1_neg0_000", ["laptop"]), draw_picture("color_pos1_neg0_000", ["laptop"])
    assert one.tobytes() == two.tobytes()
    top = one.crop((0, 0, one.width, 16)).convert("RGB")
    colours = {colour for _, colour in top.getcolors(10_000)}
    assert (255, 255, 255) in colours and any(r > 150 and g < 60 for r, g, _ in colours)  # red text on white


@pytest.mark.slow  # the tiny models on 48 pictures under three presets, then GenEval's 12
def test_the_shipped_results_are_what_the_pipeline_writes(tmp_path):
    """Regenerated as `tests/helpers/examples_data.py` made them: the same verdicts (the floats may
    differ in their last bits on another CPU's kernels, as for tests/data/frozen_records)."""
    from tests.helpers.examples_data import regenerate

    regenerate(tmp_path)

    def verdicts(path):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return [(r["prompt_id"], r["passed"], [s["satisfied"] for s in r["statements"]]) for r in rows]

    for preset in EXAMPLE_PRESETS:
        assert verdicts(tmp_path / "results" / f"{preset}.jsonl") == verdicts(DATA / "results" / f"{preset}.jsonl")
    made = read_geneval_records(tmp_path / "geneval_results.jsonl")
    shipped = read_geneval_records(DATA / "geneval_results.jsonl")
    assert [(r.filename, r.correct) for r in made] == [(r.filename, r.correct) for r in shipped]
