"""`negt2ibench judge` through the real CLI: --list, offline missing weights, a tiny model end to end, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

import judges.transformers_judge as transformers_judge
from dataset_builder.grammar import parse_prompt
from evaluator.resultio import read_results
from negt2ibench.cli import main
from tests.helpers.judge_helpers import tiny_qwen3_vl

REPO = Path(__file__).resolve().parents[2]
PROMPT = parse_prompt("a photo of a red cup and a non-blue bowl").model_copy(
    update={"prompt_id": "color_pos1_neg1_000", "group_id": "color_load2_000"}
)


@pytest.fixture
def workspace(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(PROMPT.model_dump_json() + "\n")
    folder = tmp_path / "sd_1_5"
    folder.mkdir()
    for sample in range(2):
        Image.new("RGB", (48, 40), (200, 20 * sample, 20)).save(folder / f"{PROMPT.prompt_id}_{sample}.png")
    return tmp_path, prompts, folder


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "negt2ibench", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_list_shows_every_judge_without_importing_a_model_library():
    code = (
        "import sys; from negt2ibench.cli import main; main(['judge', '--list']); "
        "print('imported:', sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "| key | hub id | params | family | adapter | note |"
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:-1]]
    rows = {row[0]: row[1:3] for row in cells}
    assert rows == {
        "qwen3_vl_8b": ["Qwen/Qwen3-VL-8B-Instruct", "8B"],
        "qwen3_vl_32b": ["Qwen/Qwen3-VL-32B-Instruct", "32B"],
        "qwen2_5_vl_7b": ["Qwen/Qwen2.5-VL-7B-Instruct", "7B"],
        "internvl3_8b": ["OpenGVLab/InternVL3-8B-hf", "8B"],
        "internvl3_5_8b": ["OpenGVLab/InternVL3_5-8B-HF", "8B"],
        "internvl3_5_38b": ["OpenGVLab/InternVL3_5-38B-HF", "38B"],
        "vqascore": ["zhiqiulin/clip-flant5-xxl", "11B"],
    }
    assert lines[-1] == "imported: []"


def test_help_explains_modes_and_wording(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["judge", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for phrase in ("Is the cup not red?", "judge.whole.jsonl", "Answer yes or no.", "--batch-size", "--download"):
        assert phrase in text


@pytest.mark.slow
def test_offline_without_weights_exits_2_with_one_line(workspace):
    tmp_path, prompts, folder = workspace
    out = tmp_path / "judge.jsonl"
    completed = run_cli(
        "judge",
        "--model",
        "qwen3_vl_8b",
        "--images",
        str(folder),
        "--prompts",
        str(prompts),
        "--out",
        str(out),
        "--device",
        "cpu",
        env={"HF_HUB_CACHE": str(tmp_path / "empty-cache")},
    )
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("error: model weights for Qwen/Qwen3-VL-8B-Instruct are not on this machine")
    assert "--download" in lines[0] and "`hf download Qwen/Qwen3-VL-8B-Instruct`" in lines[0]
    assert not out.exists()  # nothing written before the model is there


@pytest.fixture
def tiny_model_in_cli(monkeypatch):
    """The CLI loads weights through load_pretrained: hand it the tiny Qwen3-VL instead (which stands in
    for the weights the CLI first looks for on disk)."""
    loaded = []

    def fake_load(spec, *, dtype, device, download=False):
        loaded.append((spec.hub_id, str(dtype), str(device)))
        return tiny_qwen3_vl()

    monkeypatch.setattr(transformers_judge, "load_pretrained", fake_load)
    monkeypatch.setattr(transformers_judge, "require_weights", lambda spec, download=False: None)
    return loaded


def test_judge_all_modes_with_a_tiny_model_then_resume(workspace, tiny_model_in_cli, capsys):
    tmp_path, prompts, folder = workspace
    argv = ["judge", "--model", "qwen3_vl_8b", "--mode", "all", "--images", str(folder), "--prompts", str(prompts)]
    argv += ["--out", str(tmp_path / "judge.jsonl"), "--device", "cpu", "--batch-size", "3", "--no-progress", "--json"]
    assert main(argv) == 0
    output = capsys.readouterr().out.splitlines()
    assert tiny_model_in_cli == [("Qwen/Qwen3-VL-8B-Instruct", "torch.float32", "cpu")]
    summary = json.loads(output[-1])
    assert (summary["images_judged"], summary["questions_asked"]) == (2, 12)  # 1 + 4 + 1 per image
    assert summary["modes"]["pos"]["questions_per_image"] == 4.0
    assert summary["memory_kind"] == "rss" and summary["dtype"] == "float32"
    for mode, count in (("whole", 1), ("pos", 4), ("neg", 4)):
        records = read_results(tmp_path / f"judge.{mode}.jsonl")
        assert [r.key for r in records] == [("sd_1_5", PROMPT.prompt_id, 0), ("sd_1_5", PROMPT.prompt_id, 1)]
        assert all(r.evaluator == f"qwen3_vl_8b/{mode}" and len(r.questions) == count for r in records)
        assert all(0.0 < q.p_yes < 1.0 for r in records for q in r.questions)
    pos = read_results(tmp_path / "judge.pos.jsonl")[0]
    assert pos.questions[3].question == "Is the bowl blue?"
    assert pos.questions[3].p_satisfied == pytest.approx(1.0 - pos.questions[3].p_yes)

    assert main(argv) == 0  # rerun: everything is there
    rerun = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert rerun["images_judged"] == 0 and rerun["modes"]["neg"]["already_done"] == 2
    assert len(read_results(tmp_path / "judge.neg.jsonl")) == 2


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["judge", "--images", "x", "--out", "y"], 2, "choose a judge: --model KEY"),
        (["judge", "--model", "qwen3_vl_8b"], 2, "judge needs --images and --out"),
        (["judge", "--model", "qwen3_vl_8b", "--key", "k", "--images", "x", "--out", "y"], 2, "--key goes with"),
        (["judge", "--model", "qwen3vl", "--images", "x", "--out", "y"], 1, "Did you mean: qwen3_vl_8b"),
        (["judge", "--model", "qwen3_vl_8b", "--images", "nowhere", "--out", "y"], 1, "no such image, folder"),
    ],
)
def test_usage_and_input_errors_are_one_line(argv, code, message, capsys):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_vqascore_without_t2v_metrics_is_one_clear_line(workspace, monkeypatch, capsys):
    tmp_path, prompts, folder = workspace
    monkeypatch.setitem(sys.modules, "t2v_metrics", None)  # import fails as if not installed
    argv = ["judge", "--model", "vqascore", "--images", str(folder), "--prompts", str(prompts)]
    assert main([*argv, "--out", str(tmp_path / "v.jsonl"), "--device", "cpu"]) == 2  # docs/cli.md: a missing library
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: VQAScore needs the optional package t2v-metrics: `pip install t2v-metrics` "
        "(best in a separate environment: it pins its own torch and transformers)"
    )


@pytest.mark.slow
@pytest.mark.timeout(1200)  # two torchrun launches (LAUNCH_TIMEOUT_S each in tests/helpers/launch_helpers)
def test_torchrun_two_cpu_processes_split_merge_and_resume(workspace):
    """A real two-process run (gloo on CPU) of a tiny Qwen2-VL saved to a folder, through --model-id."""
    from tests.helpers.judge_helpers import tiny_qwen2_vl
    from tests.helpers.launch_helpers import torchrun

    tmp_path, prompts, folder = workspace
    for sample in range(2, 4):  # four images: two per process
        Image.new("RGB", (48, 40), (20, 20 * sample, 200)).save(folder / f"{PROMPT.prompt_id}_{sample}.png")
    model, processor = tiny_qwen2_vl()
    model.save_pretrained(tmp_path / "tiny-vlm")
    processor.save_pretrained(tmp_path / "tiny-vlm")
    out = tmp_path / "judge.jsonl"
    argv = ["-m", "negt2ibench", "judge", "--model-id", str(tmp_path / "tiny-vlm"), "--key", "tiny", "--mode", "all"]
    argv += ["--images", str(folder), "--prompts", str(prompts), "--out", str(out), "--device", "cpu", "--no-progress"]

    first = torchrun(*argv)

    assert "[rank 0/2]" in first and "[rank 1/2]" in first, first[-3000:]
    for mode in ("whole", "pos", "neg"):
        merged = tmp_path / f"judge.{mode}.jsonl"
        assert [len(read_results(tmp_path / f"judge.{mode}.rank{rank}.jsonl")) for rank in (0, 1)] == [2, 2]
        records = read_results(merged)
        assert sorted(r.sample_index for r in records) == [0, 1, 2, 3]
        assert {r.evaluator for r in records} == {f"tiny/{mode}"}

    second = torchrun(*argv)  # everything merged: nothing new on either rank

    assert second.count("0 of 4 images judged") == 2 and "2 already done" in second, second[-3000:]
    assert all(len(read_results(tmp_path / f"judge.{mode}.jsonl")) == 4 for mode in ("whole", "pos", "neg"))


def test_download_is_passed_to_the_adapter_only_when_asked():
    import argparse

    from judges.cli import download_options

    assert download_options(argparse.Namespace(download=True)) == {"download": True}
    assert download_options(argparse.Namespace(download=False)) == {}
