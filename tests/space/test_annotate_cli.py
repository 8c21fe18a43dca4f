"""`negt2ibench serve`'s Annotate and judge options (argument handling; nothing is served)."""

from __future__ import annotations

import pytest

from negt2ibench.cli import main


def test_missing_sample_and_unknown_judge_are_one_line_errors(tmp_path, capsys):
    assert main(["serve", "--annotation-sample", str(tmp_path / "none.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"error: no annotation sample at {tmp_path / 'none.jsonl'}: draw one with `negt2ibench annotation-sample`\n"
    )
    assert main(["serve", "--judge", "qwen3_vl_8"]) == 1
    assert capsys.readouterr().err.startswith("error: unknown judge 'qwen3_vl_8'. Did you mean: qwen3_vl_8b")


def test_judge_mode_choices_and_help(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--judge", "qwen3_vl_8b", "--judge-mode", "all"])
    assert exited.value.code == 2
    assert "argument --judge-mode: invalid choice: 'all'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--annotation-sample FILE", "--annotation-images DATASET", "--judge KEY", "--judge-mode"):
        assert option in text
    assert "$NEGT2I_ANNOTATION_SAMPLE" in text and "$NEGT2I_JUDGE" in text
