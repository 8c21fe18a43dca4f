"""Every command's documented failure modes give docs/cli.md's exit code, in one `error:` line.

docs/cli.md, "Exit codes": 1 bad input (a missing file or folder, a malformed line, an unknown
prompt id, a failed check); 2 a usage error, missing model weights (the message names the
command that fetches them), or a missing optional library (the message says what to install).
Each command of the CLI has its cases below (`test_every_command_has_its_failure_modes` keeps it
so); usage errors of the shared option validators are in test_cli_exit_codes.py too. Without
weights the commands look on disk only: nothing here touches the network (HF_HUB_OFFLINE, empty
caches in tmp_path).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from negt2ibench.cli import build_parser, main

BAD_INPUT, USAGE, NO_WEIGHTS, NO_LIBRARY = "bad input", "usage", "missing weights", "missing library"
CODE = {BAD_INPUT: 1, USAGE: 2, NO_WEIGHTS: 2, NO_LIBRARY: 2}
WEIGHTS = "error: model weights for "
# Without torch (CI's run on Python 3.10) these commands stop at the missing library before
# they look for weights: their missing-weights case is the missing-library line, exit code 2 still.
WITHOUT_TORCH = importlib.util.find_spec("torch") is None
TORCH_BEFORE_WEIGHTS = {"score", "explain", "selftest", "geneval", "reward"}
NEEDS_TORCH = "needs torch, which is not installed: pip install 'negt2ibench[models]'"

# (command, kind, argv, what the line says); {ex} is the examples folder, {tmp} a scratch folder.
CASES = [
    ("build", USAGE, ["build", "--out", "{tmp}/b", "--seed", "x"], "--seed"),
    ("build", BAD_INPUT, ["build", "--out", "{ex}/README.md"], "error: "),
    ("validate", BAD_INPUT, ["validate", "{tmp}/nowhere"], "error: "),
    ("push", USAGE, ["push", "--repo-id", "no-slash", "--dry-run"], "ORG/NAME"),
    ("generate", NO_WEIGHTS, ["generate", "--model", "sd_1_5", "--out", "{tmp}/d"], "--download"),
    ("generate", USAGE, ["generate", "--model", "sd_2_1", "--out", "{tmp}/d"], "unknown model key"),
    ("import-images", BAD_INPUT, ["import-images", "--key", "k", "--dir", "{tmp}/none", "--out", "{tmp}/d"], "error: "),
    ("merge-images", BAD_INPUT, ["merge-images", "--key", "k", "--dir", "{tmp}/none"], "error: "),
    ("score", NO_WEIGHTS, ["score", "--images", "{ex}/dataset", "--out", "{tmp}/r.jsonl"], "download-models"),
    ("score", BAD_INPUT, ["score", "--images", "{tmp}/none", "--out", "{tmp}/r.jsonl"], "no such image"),
    (
        "score",
        BAD_INPUT,
        ["score", "--images", "{ex}/pictures", "--split", "sd_1_5", "--out", "{tmp}/r.jsonl"],
        "--split sd_1_5 names nothing there",
    ),
    (
        "explain",
        NO_WEIGHTS,
        ["explain", "{ex}/pictures/color_pos0_neg1_000_0.png", "--prompt-id", "color_pos0_neg1_000"],
        "download-models",
    ),
    (
        "explain",
        BAD_INPUT,
        ["explain", "{ex}/pictures/color_pos0_neg1_000_0.png", "--prompt-id", "nope_000"],
        "error: ",
    ),
    ("download-models", NO_WEIGHTS, ["download-models", "--check-only", "--dir", "{tmp}/w"], "missing "),
    ("download-models", BAD_INPUT, ["download-models", "--dir", "{tmp}/w"], "needs internet access"),
    ("selftest", NO_WEIGHTS, ["selftest", "--weights-dir", "{tmp}/w"], "download-models --dir"),
    ("report", BAD_INPUT, ["report", "{tmp}/none.jsonl", "--out", "{tmp}/r"], "error: "),
    (
        "report",
        BAD_INPUT,
        ["report", "{ex}/results/current.jsonl", "{ex}/results/no_sam.jsonl", "--out", "{tmp}/r"],
        "different evaluator configurations",
    ),
    (
        "geneval",
        NO_WEIGHTS,
        ["geneval", "score", "--images", "{ex}/geneval/images", "--out", "{tmp}/g.jsonl"],
        "download-models --preset geneval",
    ),
    ("geneval", BAD_INPUT, ["geneval", "summary", "{tmp}/none.jsonl"], "error: "),
    ("reward", NO_WEIGHTS, ["reward", "serve", "--device", "cpu", "--weights-dir", "{tmp}/w"], "download-models"),
    ("reward", USAGE, ["reward", "serve", "--device", "cuda:0"], "--device is auto, cpu or cuda"),
    (
        "annotation-sample",
        BAD_INPUT,
        ["annotation-sample", "--images", "{tmp}/none", "--out", "{tmp}/s.jsonl"],
        "error: ",
    ),
    ("annotations", BAD_INPUT, ["annotations", "import", "{tmp}/none.jsonl", "--home", "{tmp}/h"], "error: "),
    (
        "agree",
        BAD_INPUT,
        ["agree", "--annotations", "{tmp}/none.jsonl", "--results", "{ex}/results/current.jsonl", "--out", "{tmp}/a"],
        "error: ",
    ),
    (
        "ablate",
        NO_WEIGHTS,
        [
            "ablate",
            "--images",
            "{ex}/dataset",
            "--annotations",
            "{ex}/annotations.jsonl",
            "--out",
            "{tmp}/ab",
            "--configs",
            "c1",
        ],
        "download-models --preset c1",
    ),
    (
        "ablate",
        BAD_INPUT,
        ["ablate", "--images", "{ex}/dataset", "--annotations", "{tmp}/none.jsonl", "--out", "{tmp}/ab"],
        "error: ",
    ),
    (
        "judge",
        NO_WEIGHTS,
        ["judge", "--model", "qwen3_vl_8b", "--images", "{ex}/pictures", "--out", "{tmp}/j.jsonl"],
        "--download",
    ),
    (
        "judge",
        NO_LIBRARY,
        ["judge", "--model", "vqascore", "--images", "{ex}/pictures", "--out", "{tmp}/j.jsonl"],
        "pip install t2v-metrics",
    ),
    ("judge", USAGE, ["judge", "--images", "x", "--out", "y"], "choose a judge"),
    ("serve", USAGE, ["serve", "--port", "0"], "error: "),
    ("serve", USAGE, ["serve", "--host", "999.1.1.1"], "--host: must be an IP address or a host name"),
    ("deploy-space", USAGE, ["deploy-space", "--repo-id", "no-slash", "--dry-run"], "ORG/NAME"),
    ("leaderboard", USAGE, ["leaderboard", "verify", "--limit", "0"], "error: "),
    ("leaderboard", BAD_INPUT, ["leaderboard", "verify-job", "--entry", "0123abcd", "--home", "{tmp}/h"], "no such"),
    ("jobs", USAGE, ["jobs", "status"], "error: "),
    ("jobs", BAD_INPUT, ["jobs", "status", "68a1b2c3"], "hf auth login"),
    (
        "score",
        BAD_INPUT,
        ["score", "--images", "org/x", "--out", "{tmp}/r.jsonl", "--hf-job", "l4x1", "--push-to", "me/out"],
        "hf auth login",
    ),
    ("examples", BAD_INPUT, ["examples", "--out", "{ex}"], "is not empty"),
    ("eval-results", BAD_INPUT, ["eval-results", "{tmp}/none.jsonl", "--dataset-id", "ORG/X"], "no such result file"),
    ("eval-results", USAGE, ["eval-results", "{ex}/results/current.jsonl", "--dataset-id", "noslash"], "ORG/NAME"),
    (
        "eval-results",
        BAD_INPUT,
        ["eval-results", "{ex}/results/current.jsonl", "--dataset-id", "ORG/X"],
        "a Hub score needs every image",
    ),
    ("negvqa", BAD_INPUT, ["negvqa", "summary", "{tmp}/none.jsonl"], "no such result file"),
    ("negvqa", BAD_INPUT, ["negvqa", "--judge", "nope", "--data", "x", "--out", "{tmp}/n.jsonl"], "unknown judge"),
    (
        "negvqa",
        NO_WEIGHTS,
        ["negvqa", "--judge", "qwen3_vl_8b", "--data", "{tmp}/none.jsonl", "--out", "{tmp}/n.jsonl"],
        "--download",
    ),
]


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exit-codes") / "examples"
    assert main(["examples", "--out", str(folder)]) == 0
    return folder


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No weights anywhere this process looks, and no network."""
    import huggingface_hub.constants as constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("RF_HOME", str(tmp_path / "rf"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("NEGT2I_HOME", str(tmp_path / "home"))
    monkeypatch.setitem(sys.modules, "t2v_metrics", None)  # not installed here, or made so


@pytest.mark.parametrize(("command", "kind", "argv", "said"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_documented_failure_has_its_exit_code_and_one_line(
    command, kind, argv, said, examples, offline, tmp_path, capsys
):
    filled = [part.format(ex=examples, tmp=tmp_path) for part in argv]
    if WITHOUT_TORCH and kind == NO_WEIGHTS and command in TORCH_BEFORE_WEIGHTS:
        kind, said = NO_LIBRARY, NEEDS_TORCH
    try:
        code = main(filled)
    except SystemExit as exited:  # argparse's own usage errors
        code = exited.code
    out, err = capsys.readouterr()
    if kind == NO_WEIGHTS and command == "download-models":  # --check-only lists each missing model on stdout
        assert code == 2 and said in out and "Traceback" not in err
        return
    assert code == CODE[kind], err
    assert "Traceback" not in err and said in err
    lines = err.strip().splitlines()
    if kind == USAGE and lines[0].startswith("usage:"):
        lines = [line for line in lines if line.startswith("negt2ibench") and ": error: " in line]  # after usage
    assert len(lines) == 1, err
    if kind == NO_WEIGHTS:
        assert lines[0].startswith(WEIGHTS), err


def test_every_command_has_its_failure_modes():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(commands) == {case[0] for case in CASES}
