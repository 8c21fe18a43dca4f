"""`negt2ibench geneval score` end to end on tiny random models, offline: GenEval's layout and a dataset
folder's geneval_* split, resume, error rows, a file GenEval's summary_scores.py reads unchanged, both
presets, missing weights (exit 2, one line), and a real two-process torchrun on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_builder.layout import rank_path
from evaluator.geneval import PRESETS
from evaluator.geneval.perception import GenEvalPerception
from evaluator.geneval.prompts import load_geneval_prompts
from evaluator.geneval.records import read_geneval_records
from generation.shards import ImageRecord, ShardWriter, png_bytes
from negt2ibench.cli import main
from negt2ibench.core.errors import UserError
from negt2ibench.geneval_api import GenEvalEvaluator
from tests.helpers.geneval_helpers import save_tiny_models, summary_scores_reference, tiny_clip, write_geneval_folder
from tests.helpers.perception_helpers import random_image, tiny_detector

PROMPTS = load_geneval_prompts()
CHOSEN = [PROMPTS[i] for i in (0, 85, 190, 270, 390, 460)]  # one prompt of each task
GENEVAL_FIELDS = ["filename", "tag", "prompt", "correct", "reason", "metadata", "details"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> tuple[Path, Path]:
    return save_tiny_models(tmp_path_factory.mktemp("tiny-geneval"))


def tiny_options(models) -> list[str]:
    detector, clip = models
    return ["--options", f"model={detector}", f"clip_model={clip}", "--device", "cpu", "--no-progress"]


def geneval_folder(root: Path) -> Path:
    write_geneval_folder(root, CHOSEN, samples=2)
    (root / "00000" / "samples" / "0002.png").write_bytes(b"not an image")  # an error row
    (root / "00007" / "samples").mkdir(parents=True)  # a prompt folder whose metadata is unreadable
    (root / "00007" / "metadata.jsonl").write_text("{not json")
    random_image(70).save(root / "00007" / "samples" / "0000.png")
    (root / "00000" / "samples" / "0000.png.bak").write_bytes(b"")  # GenEval's re.match takes it; we do not
    (root / "notes.txt").write_text("not a prompt folder")
    return root


@pytest.mark.slow
def test_geneval_layout_end_to_end_resumes_and_writes_what_summary_scores_reads(models, tmp_path, capsys):
    images = geneval_folder(tmp_path / "geneval_images")
    out = tmp_path / "results.jsonl"
    argv = ["geneval", "score", "--images", str(images), "--out", str(out), "--batch-size", "3", *tiny_options(models)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "14 new rows (12 scored" in printed and "2 errors" in printed and "not GenEval's mmdet checkpoint" in printed
    assert "notes.txt" in printed  # skipped, and said so
    lines = out.read_text().splitlines()
    records = read_geneval_records(out)
    assert list(json.loads(lines[0]))[:7] == GENEVAL_FIELDS  # GenEval's fields first, in its order
    assert [(r.prompt_id, r.sample_index) for r in records][:3] == [
        ("geneval_00000", 0),
        ("geneval_00000", 1),
        ("geneval_00000", 2),
    ]
    assert records[0].filename == os.path.join(str(images), "00000", "samples", "0000.png")
    assert records[0].metadata == json.dumps(dict(PROMPTS[0].metadata))  # as evaluate_images.py:253
    errors = {r.prompt_id: r for r in records if r.error}
    assert errors["geneval_00000"].correct is None and errors["geneval_00000"].reason.startswith("error: bad image")
    assert errors["geneval_00007"].error.startswith("bad metadata")
    detector, clip = models
    config = PRESETS["geneval"].with_options({"model": str(detector), "clip_model": str(clip)})
    assert {(r.preset, r.config_hash, r.evaluator_version) for r in records} == {
        ("geneval", config.config_hash, "geneval-1.0.0")
    }

    reference = summary_scores_reference(out.read_text())  # GenEval's own formulas read the file unchanged
    assert reference["images"] == 14 and set(reference["tasks"]) >= {p.tag for p in CHOSEN}

    assert main(argv) == 0  # resume: nothing left to do
    assert "0 new rows" in capsys.readouterr().out and out.read_text().splitlines() == lines


@pytest.mark.slow
def test_a_dataset_folders_geneval_split_is_scored_with_its_prompt_ids(models, tmp_path, capsys):
    data = tmp_path / "data"
    writer = ShardWriter(data, "geneval_tiny")
    for prompt_id, sample in (("geneval_00000", 0), ("geneval_00085", 0), ("geneval_99999", 0)):
        png = png_bytes(random_image(hash(prompt_id) % 1000))
        writer.add(ImageRecord(prompt_id, sample, 0, png, "tiny", "tiny", "{}"))
    writer.flush()
    out = tmp_path / "r.jsonl"
    assert main(["geneval", "score", "--images", str(data), "--out", str(out), *tiny_options(models)]) == 0
    records = read_geneval_records(out)
    assert [r.model_key for r in records] == ["geneval_tiny"] * 3
    unknown = next(r for r in records if r.prompt_id == "geneval_99999")
    assert unknown.error.startswith("unknown GenEval prompt 'geneval_99999'")
    assert main(["geneval", "score", "--images", str(data), "--split", "tiny", "--out", str(out)]) == 1
    assert "geneval_*" in capsys.readouterr().err


def test_the_rfdetr_preset_scores_through_the_api(tmp_path):
    images = write_geneval_folder(tmp_path / "imgs", CHOSEN[:2], samples=1)
    config = PRESETS["geneval_rfdetr"].replace(detector_resolution=96)
    perception = GenEvalPerception.from_models(config, detector=tiny_detector(), clip=tiny_clip())
    evaluator = GenEvalEvaluator(config, perception=perception)
    summary = evaluator.score_source(images, out=tmp_path / "r.jsonl", progress=False, num_workers=0)
    assert (summary.scored, summary.errors) == (2, 0)
    records = read_geneval_records(tmp_path / "r.jsonl")
    assert {r.preset for r in records} == {"geneval_rfdetr"} and records[0].detector == "RF-DETR Seg XL"
    by_text = {r.prompt: (r.tag, json.loads(r.metadata)) for r in records}  # each record names its prompt
    assert by_text == {p.prompt: (p.tag, json.loads(p.metadata_json)) for p in CHOSEN[:2]}
    one = evaluator.score(images / "00000" / "samples" / "0000.png", 0)
    assert (one.correct, one.reason) == (records[0].correct, records[0].reason)  # scores: float noise of batching
    assert json.loads(one.details).keys() == json.loads(records[0].details).keys()
    with pytest.raises(UserError, match="unknown GenEval prompt"):  # the CLI's one-line error, exit 1
        evaluator.score(random_image(0), 553)


def test_without_weights_offline_it_exits_2_with_one_line(tmp_path, capsys):
    images = write_geneval_folder(tmp_path / "imgs", CHOSEN[:1], samples=1)
    for preset in ("geneval", "geneval_rfdetr"):
        argv = ["geneval", "score", "--images", str(images), "--out", str(tmp_path / f"{preset}.jsonl")]
        assert main([*argv, "--preset", preset, "--device", "cpu"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: model weights for ") and err.count("\n") == 1
        assert f"download-models --preset {preset}" in err and "Traceback" not in err
        assert not (tmp_path / f"{preset}.jsonl").exists()


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["--options", "nope=1"], 2, "unknown GenEval option 'nope'"),
        (["--options", "threshold"], 2, "KEY=VALUE"),
        (["--preset", "mmdet"], 2, "invalid choice"),
        (["--batch-size", "0"], 2, "positive integer"),
    ],
)
def test_bad_options_are_usage_errors(extra, code, message, tmp_path, capsys):
    images = write_geneval_folder(tmp_path / "imgs", CHOSEN[:1], samples=1)
    try:
        result = main(["geneval", "score", "--images", str(images), "--out", str(tmp_path / "r.jsonl"), *extra])
    except SystemExit as exited:
        result = exited.code
    assert result == code and message in capsys.readouterr().err


def test_bad_sources_and_outputs_are_one_line(tmp_path, capsys):
    images = write_geneval_folder(tmp_path / "imgs", CHOSEN[:1], samples=1)
    (tmp_path / "empty").mkdir()
    for argv in (
        ["--images", str(tmp_path / "empty"), "--out", str(tmp_path / "r.jsonl")],
        ["--images", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.jsonl")],
        ["--images", str(images), "--out", str(tmp_path)],  # a folder
    ):
        assert main(["geneval", "score", *argv]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1


# -- two processes -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_torchrun_two_cpu_processes_split_merge_and_match_one_process(models, tmp_path):
    from tests.helpers.launch_helpers import process_env, run_checked, torchrun

    images = write_geneval_folder(tmp_path / "imgs", CHOSEN, samples=1)
    detector, clip = models
    options = ["--options", f"model={detector}", f"clip_model={clip}", "--device", "cpu", "--no-progress"]
    out = tmp_path / "two" / "results.jsonl"
    argv = ["-m", "negt2ibench", "geneval", "score", "--images", str(images), "--out", str(out), "--batch-size", "2"]
    output = torchrun(*argv, *options, "--num-workers", "0")
    assert "[rank 0/2]" in output and "[rank 1/2]" in output
    merged = read_geneval_records(out)
    assert [r.key for r in merged] == sorted(r.key for r in merged) and len(merged) == 6
    shares = [read_geneval_records(rank_path(out, rank)) for rank in (0, 1)]
    assert [len(share) for share in shares] == [3, 3]

    single = tmp_path / "one" / "results.jsonl"
    one = [sys.executable, "-m", "negt2ibench", "geneval", "score", "--images", str(images), "--out", str(single)]
    run_checked([*one, *options, "--num-workers", "0"], process_env())

    def verdicts(records):
        return {r.key: (r.correct, r.reason, sorted(json.loads(r.details))) for r in records}

    assert verdicts(merged) == verdicts(read_geneval_records(single))
    again = torchrun(*argv, *options, "--num-workers", "0")
    assert again.count("0 new rows") == 2


def test_the_console_script_help_lists_geneval():
    done = subprocess.run(
        [sys.executable, "-m", "negt2ibench", "geneval", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "score" in done.stdout and "summary" in done.stdout
