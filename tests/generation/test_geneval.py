"""`generate --benchmark geneval`: GenEval's layout (README; diffusers_generate.py:118-146) or a geneval_KEY
split, written by the same generation run as the benchmark's (seeds, resume, settings check), from a
tiny local diffusers pipeline, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataset_builder.layout import split_files
from evaluator.geneval.prompts import load_geneval_prompts
from evaluator.geneval.sources import resolve_geneval_source
from generation.geneval_layout import existing_samples, plan_geneval_work
from generation.shards import read_keys
from generation.work import image_seed
from negt2ibench.cli import main
from tests.helpers.generation_helpers import TINY_SIZE, tiny_sd_pipeline

# A tiny diffusion pipeline built once (about 3 s here) and four runs of `generate --benchmark geneval`.
pytestmark = pytest.mark.slow

PROMPTS = load_geneval_prompts()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-sd")
    tiny_sd_pipeline().save_pretrained(folder)
    return folder


def argv(pipeline: Path, out: Path, *extra: str) -> list[str]:
    return [
        "generate", "--benchmark", "geneval", "--model-id", str(pipeline), "--key", "tiny", "--steps", "2",
        "--resolution", str(TINY_SIZE), "--out", str(out), "--num-images", "2", "--limit", "3", "--quiet", *extra,
    ]  # fmt: skip


def test_genevals_layout_is_written_resumed_and_read_back(pipeline, tmp_path, capsys):
    out = tmp_path / "geneval"
    assert main(argv(pipeline, out)) == 0
    assert "GenEval layout" in capsys.readouterr().out
    for prompt in PROMPTS[:3]:
        folder = out / f"{prompt.index:05d}"
        # json.dump(metadata, fp) (diffusers_generate.py:127-128): one object, no newline
        assert (folder / "metadata.jsonl").read_text() == json.dumps(dict(prompt.metadata))
        assert sorted(p.name for p in (folder / "samples").iterdir()) == ["0000.png", "0001.png"]
    stamps = {path: path.stat().st_mtime_ns for path in out.rglob("*.png")}
    assert main(argv(pipeline, out)) == 0  # resume: nothing new
    assert "0 generated, 6 already done" in capsys.readouterr().err
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*.png")} == stamps
    source = resolve_geneval_source(out, PROMPTS)
    assert [(w.item.prompt_id, w.item.sample_index) for w in source.work] == sorted(existing_samples(out))
    assert all(w.prompt.metadata == PROMPTS[int(w.item.prompt_id[-5:])].metadata for w in source.work)
    assert source.skipped == ["generation.json"]


def test_seeds_come_from_the_geneval_prompt_id_and_images_repeat(pipeline, tmp_path):
    work = plan_geneval_work(PROMPTS[:2], 2)
    assert [(w.prompt_id, w.sample_index, w.seed) for w in work][:2] == [
        ("geneval_00000", 0, image_seed("geneval_00000", 0)),
        ("geneval_00000", 1, image_seed("geneval_00000", 1)),
    ]
    assert work[0].prompt == "a photo of a bench"
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(argv(pipeline, one, "--batch-size", "2")) == 0
    assert main(argv(pipeline, two, "--batch-size", "2")) == 0
    for path in one.rglob("*.png"):  # same seeds, same batches: the same pixels (test_generation covers others)
        assert path.read_bytes() == (two / path.relative_to(one)).read_bytes()


def test_other_settings_on_resume_and_wrong_options_are_refused(pipeline, tmp_path, capsys):
    out = tmp_path / "geneval"
    assert main(argv(pipeline, out, "--limit", "1")) == 0
    changed = [arg if arg != "2" else "3" for arg in argv(pipeline, out, "--limit", "1")]  # --steps 3
    assert main(changed) == 1
    assert "generated with other settings" in capsys.readouterr().err
    assert main(argv(pipeline, out, "--categories", "color")) == 2
    assert "GenEval has --metadata" in capsys.readouterr().err


def test_the_dataset_layout_writes_a_geneval_split(pipeline, tmp_path, capsys):
    data = tmp_path / "data"
    assert main(argv(pipeline, data, "--layout", "dataset")) == 0
    assert "split geneval_tiny: 6 images" in capsys.readouterr().out
    [shard] = split_files(data, "geneval_tiny")
    assert sorted(read_keys(shard)) == [(f"geneval_{i:05d}", s) for i in range(3) for s in range(2)]
    source = resolve_geneval_source(data, PROMPTS)
    assert source.layout == "dataset" and source.model_key == "geneval_tiny" and len(source.work) == 6
    assert all(w.prompt is not None for w in source.work)
