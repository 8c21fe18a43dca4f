"""`negt2ibench build / validate / push`: summaries, exit codes and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dataset_builder import hub
from dataset_builder.corpus import build_corpus
from dataset_builder.hub import write_prompt_files
from negt2ibench.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "negt2ibench"
    assert main(["build", "--out", str(out)]) == 0
    return out


def test_build_prints_a_summary(tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["build", "--out", str(out), "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "color          100   100   100   100   100   100   100   100    800" in printed
    assert "4800 prompts in 2400 matched groups, corpus version 2, seed 3" in printed
    assert str(out) in printed
    assert (out / "prompts" / "test-00000-of-00001.parquet").is_file()


@pytest.mark.slow
def test_non_empty_output_needs_overwrite(built, capsys):
    before = (built / "prompts.jsonl").read_bytes()
    assert main(["build", "--out", str(built), "--seed", "4"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "--overwrite" in error and "Traceback" not in error
    assert (built / "prompts.jsonl").read_bytes() == before
    assert main(["build", "--out", str(built), "--overwrite"]) == 0  # same default seed: same folder
    assert (built / "prompts.jsonl").read_bytes() == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (["build", "--seed", "abc"], "the seed must be an integer, got 'abc'"),
        (["build", "--seed", "1.5"], "the seed must be an integer"),
        (["build", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["push", "--dry-run"], "--repo-id"),
    ],
)
def test_bad_options_exit_non_zero_without_traceback(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_unwritable_output(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert main(["build", "--out", str(blocker / "ds")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: cannot write to") and error.count("\n") == 1


def test_interrupted_build_leaves_nothing(tmp_path, monkeypatch, capsys):
    def interrupted(records, folder):
        write_prompt_files(records[:100], folder)
        raise KeyboardInterrupt

    monkeypatch.setattr(hub, "write_prompt_files", interrupted)
    assert main(["build", "--out", str(tmp_path / "ds")]) == 130
    assert list(tmp_path.iterdir()) == []


def test_validate_says_ok_exactly_when_the_checks_find_nothing(tmp_path, monkeypatch, capsys):
    # fast, beside the full folder's slow test: the command's verdict follows the checks' findings (the
    # checks themselves are tested in test_validate): none is OK with exit 0, one is INVALID with exit 1
    from dataset_builder import validate
    from dataset_builder.validate import Violation

    records = build_corpus()[:24]
    found: list[Violation] = []
    monkeypatch.setattr(validate, "validate_folder", lambda root: (records, found))
    assert main(["validate", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert f"OK: {tmp_path} holds 24 valid prompts" in printed and "INVALID" not in printed
    found.append(Violation(records[0].prompt_id, "a fault"))
    assert main(["validate", str(tmp_path)]) == 1
    printed = capsys.readouterr().out
    assert f"{records[0].prompt_id}: a fault" in printed and f"INVALID: 1 violations in {tmp_path}" in printed
    assert "OK:" not in printed


@pytest.mark.slow
def test_validate_ok(built, capsys):
    assert main(["validate", str(built)]) == 0
    printed = capsys.readouterr().out
    assert "OK:" in printed and "(corpus version 2)" in printed
    assert (
        "shared object draws (prompt k of a setting names the same objects in every category listed): "
        "color, material: 800/800; directional, proximity, comparative, depth: 800/800"
    ) in printed


@pytest.mark.slow
def test_validate_lists_violations_by_prompt_id(tmp_path, capsys):
    records = build_corpus()
    broken = list(records)
    broken[0] = broken[0].model_copy(update={"prompt": broken[0].prompt.replace("an orange", "a orange")})
    broken[7] = broken[7].model_copy(update={"group_id": "color_load9_007"})
    out = tmp_path / "ds"
    hub.write_dataset_folder(records, out)
    write_prompt_files(broken, out)
    assert main(["validate", str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"{broken[0].prompt_id}: " in printed and f"{broken[7].prompt_id}: group_id" in printed
    assert "INVALID:" in printed


def test_validate_missing_folder(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nothing")]) == 1
    assert "negt2ibench build" in capsys.readouterr().err


def test_push_dry_run(built, capsys, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert main(["push", "--repo-id", "org/NegT2IBench", "--dir", str(built), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "would upload 4 files to https://huggingface.co/datasets/org/NegT2IBench" in printed
    assert "prompts/test-00000-of-00001.parquet" in printed


def test_push_without_token(built, capsys, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    assert main(["push", "--repo-id", "org/NegT2IBench", "--dir", str(built)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: no Hugging Face token") and error.count("\n") == 1


def test_push_unknown_image_split(built, capsys):
    assert main(["push", "--repo-id", "org/x", "--dir", str(built), "--images", "sd_1_5", "--dry-run"]) == 1
    assert "no image split sd_1_5" in capsys.readouterr().err


def test_help_texts(capsys):
    for command in ("build", "validate", "push"):
        with pytest.raises(SystemExit) as exited:
            main([command, "--help"])
        assert exited.value.code == 0
    printed = capsys.readouterr().out
    assert "--overwrite" in printed and "--dry-run" in printed and "byte-identical" in printed


@pytest.mark.slow
def test_console_script_end_to_end(tmp_path):
    """What `make run` does, through the real entry point in a fresh process."""
    out = tmp_path / "negt2ibench"
    for argv in (["build", "--out", str(out), "--overwrite"], ["validate", str(out)]):
        done = subprocess.run(
            [sys.executable, "-m", "negt2ibench", *argv], cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    assert "OK:" in done.stdout
