"""`negt2ibench score`, `explain` and `download-models` through the real CLI entry point."""

from __future__ import annotations

import json

import pytest
from PIL import Image

import evaluator.perception as perception_module
from evaluator.config import PRESETS
from evaluator.pipeline import score_image
from evaluator.resultio import read_results
from negt2ibench.cli import main
from tests.helpers.perception_helpers import make_prompt, random_image, replace_model_perception, tiny_perception
from tests.helpers.space_helpers import result_line

PROMPTS = [
    make_prompt("color", ["tv remote", "cup"], "color_pos1_neg0_000"),
    make_prompt("proximity", ["car", "bus"], "proximity_pos1_neg0_000"),
]


@pytest.fixture
def workspace(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(prompt.model_dump_json() + "\n" for prompt in PROMPTS))
    folder = tmp_path / "my_model"
    folder.mkdir()
    for number, prompt in enumerate(PROMPTS):
        random_image(number, (96, 72)).save(folder / f"{prompt.prompt_id}_0.png")
    return tmp_path, prompts, folder


@pytest.fixture
def tiny_models_in_cli(monkeypatch):
    """The CLI builds ModelPerception(config, device=..., ...): hand it the tiny models instead."""
    made = []

    def factory(config, device="auto", batch_size=8, dtype=None, weights_dir=None):
        made.append((config.name, device, batch_size))
        return tiny_perception(config, batch_size=batch_size)

    replace_model_perception(monkeypatch, factory)
    return made


@pytest.mark.parametrize("command", ["score", "explain", "download-models"])
def test_help_texts(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--preset" in text and len(text) > 400


def test_explain_needs_one_way_to_name_its_prompt(capsys):
    # without --prompt-id, --prompt-json or --prompt there is nothing to explain: argparse says so
    with pytest.raises(SystemExit) as exit_info:
        main(["explain", "cup.png"])
    assert exit_info.value.code == 2
    assert "one of the arguments --prompt-id --prompt-json --prompt is required" in capsys.readouterr().err


@pytest.mark.slow
def test_score_writes_records_and_resumes(workspace, tiny_models_in_cli, capsys):
    tmp_path, prompts, folder = workspace
    out = tmp_path / "results.jsonl"
    argv = [
        "score",
        "--images",
        str(folder),
        "--prompts",
        str(prompts),
        "--out",
        str(out),
        "--device",
        "cpu",
        "--batch-size",
        "2",
        "--no-progress",
        "--preset",
        "no_sam",
    ]
    assert main(argv) == 0
    assert "2 new rows" in capsys.readouterr().out
    records = read_results(out)
    assert {record.key for record in records} == {("my_model", p.prompt_id, 0) for p in PROMPTS}
    assert tiny_models_in_cli[0] == ("no_sam", "cpu", 2)
    assert main(argv) == 0
    assert "0 new rows" in (text := capsys.readouterr().out) and "2 already done" in text
    assert len(read_results(out)) == 2


def test_score_offline_without_weights_exits_2_with_one_line(workspace, monkeypatch, capsys):
    tmp_path, prompts, folder = workspace
    monkeypatch.setenv("RF_HOME", str(tmp_path / "no_weights"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = main(
        [
            "score",
            "--images",
            str(folder),
            "--prompts",
            str(prompts),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--device",
            "cpu",
            "--no-progress",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model weights for RFDETRSegXLarge") and "negt2ibench download-models" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "r.jsonl").exists() or read_results(tmp_path / "r.jsonl") == []


def test_score_bad_arguments_are_one_line_errors(workspace, capsys):
    tmp_path, prompts, folder = workspace
    with pytest.raises(SystemExit) as exited:  # a usage error, as every command's: exit 2
        main(["score", "--images", str(folder), "--out", str(tmp_path / "r.jsonl"), "--batch-size", "0"])
    assert exited.value.code == 2
    assert "argument --batch-size: must be a positive integer, got '0'" in capsys.readouterr().err
    assert main(["score", "--images", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.jsonl")]) == 1
    assert "no such image" in capsys.readouterr().err


@pytest.mark.slow
def test_explain_prints_the_table_and_writes_the_annotated_png(workspace, tiny_models_in_cli, capsys):
    tmp_path, prompts, folder = workspace
    prompt_json = tmp_path / "prompt.json"
    prompt_json.write_text(PROMPTS[1].model_dump_json())
    image = folder / f"{PROMPTS[1].prompt_id}_0.png"
    out = tmp_path / "why.png"
    assert (
        main(["explain", str(image), "--prompt-json", str(prompt_json), "--out", str(out), "--json", "--device", "cpu"])
        == 0
    )
    text = capsys.readouterr().out
    assert "statement" in text and "verdict" in text and PROMPTS[1].prompt in text
    # The same image scored directly by the pipeline: the CLI prints and writes that verdict.
    expected, _ = score_image(image, PROMPTS[1], tiny_perception(), config=PRESETS["current"])
    record = json.loads(text.strip().splitlines()[-1])
    assert record == json.loads(expected.model_dump_json())
    lines = text.splitlines()
    assert ("image PASSED" in lines, "image FAILED" in lines) == (expected.passed, not expected.passed)
    annotated = Image.open(out)
    assert annotated.size == (96, 72) and annotated.mode == "RGB"

    assert main(["explain", str(image), "--prompt-id", PROMPTS[0].prompt_id, "--prompts", str(prompts)]) == 0
    assert (folder / f"{PROMPTS[1].prompt_id}_0_explained.png").is_file()


def test_explain_input_errors(workspace, tiny_models_in_cli, capsys):
    tmp_path, prompts, folder = workspace
    image = folder / f"{PROMPTS[0].prompt_id}_0.png"
    assert main(["explain", str(image), "--prompt-id", "color_pos1_neg0_099", "--prompts", str(prompts)]) == 1
    assert "unknown prompt id" in capsys.readouterr().err
    tiny = tmp_path / "tiny.png"
    Image.new("RGB", (10, 10)).save(tiny)
    assert main(["explain", str(tiny), "--prompt-id", PROMPTS[0].prompt_id, "--prompts", str(prompts)]) == 1
    assert "too small" in capsys.readouterr().err
    assert main(["explain", str(image), "--prompt-json", str(tmp_path / "none.json")]) == 1
    assert "no prompt JSON" in capsys.readouterr().err


def test_download_models_offline_fails_with_one_line(tmp_path, capsys):
    assert main(["download-models", "--dir", str(tmp_path / "w")]) == 1  # HF_HUB_OFFLINE is set in the tests
    err = capsys.readouterr().err
    assert err.startswith("error: HF_HUB_OFFLINE is set, so nothing can be downloaded") and "Traceback" not in err
    assert "needs internet access" in err and err.rstrip().endswith("--weights-dir DIR") and err.count("\n") == 1
    assert not (tmp_path / "w").exists()  # refused before anything was written


def test_download_models_without_a_connection_says_so_in_one_whole_line(tmp_path, monkeypatch, capsys):
    import rfdetr.assets.model_weights as rf_weights
    import urllib3.exceptions

    def unreachable(path, **kwargs):  # what requests raises on a machine without internet access
        cause = urllib3.exceptions.NameResolutionError("storage.googleapis.com", None, "Name or service not known")
        raise ConnectionError("HTTPSConnectionPool(host='storage.googleapis.com', port=443): Max retries (") from cause

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(rf_weights, "download_pretrain_weights", unreachable)
    monkeypatch.setattr("evaluator.models.weights._remote_size", lambda url: None)
    assert main(["download-models", "--dir", str(tmp_path / "w")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: could not download rf-detr-seg-xlarge.pt: no connection to storage.googleapis.com.")
    assert "Max retries (" not in err and "needs internet access" in err and err.count("\n") == 1


@pytest.mark.slow
def test_explain_parses_prompt_text(workspace, tiny_models_in_cli, capsys):
    tmp_path, prompts, folder = workspace
    image = folder / f"{PROMPTS[1].prompt_id}_0.png"
    out = tmp_path / "text.png"
    assert (
        main(
            [
                "explain",
                str(image),
                "--prompt",
                "a photo of a car and a bus, where the car is not near the bus",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "negated" in text and "is not near the bus" in text and out.is_file()
    assert main(["explain", str(image), "--prompt", "hello world"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot parse the prompt") and err.count("\n") == 1
    # The text of a benchmark prompt is that prompt (`negt2ibench.api.resolve_prompt`), as in the API and the Space.
    from dataset_builder.grammar import parse_prompt

    text = "a photo of a car and a bus, where the car is near the bus"
    known = parse_prompt(text).model_copy(update={"prompt_id": "proximity_pos1_neg0_042"})
    (tmp_path / "known.jsonl").write_text(known.model_dump_json() + "\n")
    typed = ["--prompt", text.replace(" ", "  "), "--prompts", str(tmp_path / "known.jsonl")]
    assert main(["explain", str(image), *typed, "--out", str(out)]) == 0
    assert f"prompt (proximity_pos1_neg0_042): {text}" in capsys.readouterr().out


@pytest.fixture
def no_models(monkeypatch):
    """Fails the test if `score` builds the models: the checks below must come first."""

    def factory(*args, **kwargs):
        raise AssertionError("the models were loaded before --out was checked")

    monkeypatch.setattr(perception_module, "ModelPerception", factory)


def test_a_bad_out_is_refused_before_any_model_loads(workspace, no_models, capsys):
    tmp_path, prompts, folder = workspace
    argv = ["score", "--images", str(folder), "--prompts", str(prompts), "--device", "cpu", "--no-progress", "--out"]
    assert main([*argv, str(tmp_path)]) == 1
    assert (
        capsys.readouterr().err
        == f"error: --out {tmp_path} is a folder; give the results file to write, e.g. {tmp_path / 'results.jsonl'}\n"
    )

    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text('{"prompt_id": 1}\n{}\n')
    assert main([*argv, str(malformed)]) == 1
    assert capsys.readouterr().err.startswith(f"error: {malformed}:1: not a result record (")

    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(result_line(PROMPTS[0], 0, "my_model", passed=True, config_hash="0123abcd")) + "\n")
    assert main([*argv, str(other)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out {other} holds results of evaluator") and "config 0123abcd, but this run" in err


@pytest.mark.slow
def test_score_names_the_files_of_a_folder_it_skips(workspace, tiny_models_in_cli, capsys):
    tmp_path, prompts, folder = workspace
    (folder / "notes.txt").write_text("x")
    random_image(5).save(folder / f"{PROMPTS[0].prompt_id}.png")  # no sample index
    (folder / ".DS_Store").write_text("x")  # hidden: not worth naming
    random_image(6).save(folder / "color_pos0_neg1_999_0.png")  # an image of no benchmark prompt: an error row
    argv = ["score", "--images", str(folder), "--prompts", str(prompts), "--out", str(tmp_path / "r.jsonl")]
    assert main([*argv, "--device", "cpu", "--no-progress", "--preset", "no_sam"]) == 0
    out = capsys.readouterr().out
    expected = (
        "skipped 2 file(s) not named {prompt_id}_{sample_index}.png (or .jpg, .webp, .bmp, .tiff): "
        f"{PROMPTS[0].prompt_id}.png (no sample index), notes.txt"
    )
    assert expected in out and "3 new rows (2 scored" in out and "unknown prompt id ×1" in out


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["c2", "c4"])
def test_score_with_a_mask_rcnn_preset(preset, workspace, tiny_models_in_cli, capsys):
    from evaluator.config import PRESETS

    tmp_path, prompts, folder = workspace
    out = tmp_path / f"{preset}.jsonl"
    argv = ["score", "--images", str(folder), "--prompts", str(prompts), "--out", str(out)]
    assert main(argv + ["--device", "cpu", "--no-progress", "--preset", preset]) == 0
    assert "2 new rows (2 scored" in capsys.readouterr().out
    records = read_results(out)
    assert tiny_models_in_cli[0] == (preset, "cpu", 8)
    assert {r.config_hash for r in records} == {PRESETS[preset].config_hash}
    assert {r.evaluator for r in records} == {f"negt2ibench/{preset}"}
    assert all(r.error is None for r in records)
    present = [o for r in records for o in r.objects if o.present]
    assert present and all(o.box is not None for o in present)  # the tiny Mask R-CNN sees cups, cars, buses


def test_download_models_for_a_mask_rcnn_preset(tmp_path, monkeypatch, capsys):
    import huggingface_hub
    import torch

    fetched = []

    def fake_snapshot_download(repo_id, dry_run=False, **kwargs):
        if dry_run:  # the listing with sizes, before the download
            return []
        fetched.append(repo_id)
        return "/hub"

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)

    def fake_download(url, dst, hash_prefix=None, progress=True):
        fetched.append((url, hash_prefix))
        with open(dst, "wb") as handle:
            handle.write(b"weights")

    monkeypatch.setattr(torch.hub, "download_url_to_file", fake_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # a machine with internet access (the transfers are fakes)
    assert main(["download-models", "--preset", "c4", "--dir", str(tmp_path / "w")]) == 0
    printed = capsys.readouterr().out
    assert fetched == [
        ("https://download.pytorch.org/models/maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth", "73cbd019"),
        "google/siglip2-so400m-patch14-384",
        "depth-anything/Depth-Anything-V2-Large-hf",
    ]  # c4 uses no SAM and no RF-DETR
    weights = tmp_path / "w" / "torch" / "hub" / "checkpoints" / "maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth"
    assert weights.read_bytes() == b"weights"
    assert f"Mask R-CNN (MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1): size unknown\n  → {weights}" in printed
    assert f"export TORCH_HOME={tmp_path / 'w' / 'torch'}" in printed and "RF_HOME" not in printed
