"""The same mistake gets the same exit code from every command (docs/cli.md, "Exit codes").

0 done; 1 bad input (a missing file or folder, an unknown prompt id) or a failed check; 2 a usage
error (a wrong, missing or conflicting option, argparse's own errors included), missing model
weights, or a missing optional library (the message names its extra). Errors are one line
`error: ...` (argparse's usage errors: its usage line, then the error).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Collection

import pytest
from PIL import Image

from negt2ibench.cli import main


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `negt2ibench ARGV`, whether main returns the code or argparse exits."""
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "color_pos1_neg0_000_0.png"
    Image.new("RGB", (64, 64), (200, 10, 10)).save(path)
    return path


USAGE_MISTAKES = {
    "a batch size of 0": [
        (["score", "--images", "{image}", "--out", "{tmp}/r.jsonl", "--batch-size", "0"], "must be a positive integer"),
        (["generate", "--model", "sd_1_5", "--out", "{tmp}/d", "--batch-size", "0"], "must be a positive integer"),
    ],
    "a split name with capitals": [
        (["score", "--images", "{image}", "--out", "{tmp}/r.jsonl", "--model-key", "Bad-Key"], "not a valid split"),
        (["generate", "--model-id", "x/y", "--key", "Bad-Key", "--out", "{tmp}/d"], "not a valid split name"),
        (["import-images", "--key", "Bad-Key", "--dir", "{tmp}", "--out", "{tmp}/d"], "not a valid split name"),
        (["merge-images", "--key", "Bad-Key", "--dir", "{tmp}"], "not a valid split name"),
    ],
    "a repo id without ORG/": [
        (["push", "--repo-id", "no-slash", "--dry-run"], "must look like ORG/NAME"),
        (["deploy-space", "--repo-id", "no-slash", "--dry-run"], "must look like ORG/NAME"),
    ],
    "an unknown preset": [
        (["score", "--images", "{image}", "--out", "{tmp}/r.jsonl", "--preset", "newest"], "invalid choice"),
        (["explain", "{image}", "--prompt-id", "color_pos1_neg0_000", "--preset", "newest"], "invalid choice"),
        (["download-models", "--preset", "newest"], "invalid choice"),
    ],
    "an unknown device": [
        (["score", "--images", "{image}", "--out", "{tmp}/r.jsonl", "--device", "tpu"], "unknown device 'tpu'"),
        (["explain", "{image}", "--prompt-id", "color_pos1_neg0_000", "--device", "tpu"], "unknown device 'tpu'"),
        (["generate", "--model", "sd_1_5", "--out", "{tmp}/d", "--device", "tpu"], "unknown device 'tpu'"),
    ],
    "a port or host that cannot be listened on": [
        (["serve", "--port", "99999"], "argument --port: must be a port number from 1 to 65535, got '99999'"),
        (["serve", "--demo", "--port", "http"], "argument --port: must be a port number from 1 to 65535"),
        (["serve", "--host", "bad host"], "argument --host: must be an IP address or a host name"),
        (["reward", "serve", "--port", "70000"], "argument --port: must be a port number from 1 to 65535"),
    ],
    "an unknown model or missing option": [
        (["generate", "--model", "sd_2_1", "--out", "{tmp}/d"], "unknown model key 'sd_2_1'"),
        (["generate", "--model-id", "x/y", "--out", "{tmp}/d"], "--model-id needs --key"),
        (["score", "--out", "{tmp}/r.jsonl"], "the following arguments are required: --images"),
    ],
}

BAD_INPUT_MISTAKES = {
    "a folder that is not there": [
        (["validate", "{tmp}/nothing"], "is not a folder"),
        (["score", "--images", "{tmp}/nothing", "--out", "{tmp}/r.jsonl"], "no such image, folder or dataset"),
        (["import-images", "--key", "k", "--dir", "{tmp}/nothing", "--out", "{tmp}/d"], "is not a folder"),
        (["push", "--repo-id", "org/name", "--dir", "{tmp}/nothing", "--dry-run"], "is not a built dataset folder"),
        (["serve", "--dataset", "{tmp}/nothing"], "no dataset at"),
    ],
    "prompts that are not there": [
        (["score", "--images", "{image}", "--out", "{tmp}/r.jsonl", "--prompts", "{tmp}/none.jsonl"], "no prompts at"),
        (["generate", "--model", "sd_1_5", "--out", "{tmp}/d", "--prompts", "{tmp}/none.jsonl"], "no prompts at"),
        (["explain", "{image}", "--prompt-id", "color_pos1_neg0_000", "--prompts", "{tmp}/none.jsonl"], "no prompts"),
        (["import-images", "--key", "k", "--dir", "{tmp}", "--out", "{tmp}/d", "--prompts", "{tmp}/x"], "no prompts"),
    ],
    "an unknown prompt id": [
        (["explain", "{image}", "--prompt-id", "colour_pos1_neg0_000"], "unknown prompt id 'colour_pos1_neg0_000'"),
    ],
    "a prompt outside the grammar": [
        (["explain", "{image}", "--prompt", "hello world"], "cannot parse the prompt"),
    ],
}


def _torch_mark(needed: bool) -> list[pytest.MarkDecorator]:
    return [pytest.mark.torch] if needed else []


def _cases(table: dict, code: int, loading_torch: Collection[str] = ()):
    """The table's cases; those of the commands in `loading_torch` (they import the scorer, hence
    torch, before they read their inputs) are marked `torch`."""
    return [
        pytest.param(argv, message, code, id=f"{mistake}: {argv[0]}", marks=_torch_mark(argv[0] in loading_torch))
        for mistake, cases in table.items()
        for argv, message in cases
    ]


def _fill(argv: list[str], tmp_path, image) -> list[str]:
    return [part.format(tmp=tmp_path, image=image) for part in argv]


CASES = _cases(USAGE_MISTAKES, 2) + _cases(BAD_INPUT_MISTAKES, 1, loading_torch={"score", "explain"})


@pytest.mark.parametrize(("argv", "message", "code"), CASES)
def test_the_same_mistake_gets_the_same_code_everywhere(argv, message, code, tmp_path, image, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # commands that default to build/negt2ibench find nothing there
    got, _, err = run(_fill(argv, tmp_path, image), capsys)
    assert got == code, err
    assert message in err
    if code == 1:
        assert err.startswith("error: ") and err.count("\n") == 1  # one line


@pytest.mark.slow  # a fresh Python process importing torch and diffusers
def test_missing_weights_exit_2_with_how_to_get_them(tmp_path):
    """The real console entry point, in its own process (diffusers' logging keeps the stream it first saw)."""
    done = subprocess.run(
        [sys.executable, "-m", "negt2ibench", "generate", "--model", "sd_1_5", "--out", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
    )
    lines = done.stderr.strip().splitlines()  # the libraries' own notices stay out of stderr (no --verbose)
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: model weights for sd_1_5") and "--download" in lines[0]


def test_a_failed_check_exits_1(tmp_path, capsys):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "prompts.jsonl").write_text("")
    code, out, _ = run(["validate", str(tmp_path / "ds")], capsys)
    assert code == 1 and out.strip().splitlines()[-1].startswith("INVALID: 4 violations")  # not 50 cells
    assert "corpus: no prompt records could be read from the folder" in out


def test_a_missing_optional_library_names_its_extra(tmp_path):
    """A wheel installed without `[models]`: `score` answers with the pip line and exit code 2, no traceback.

    Its own process, with torch made unimportable (`sys.modules["torch"] = None` makes every
    `import torch` raise ModuleNotFoundError, as in an environment without it)."""
    image = tmp_path / "images" / "color_pos1_neg0_000_0.png"
    image.parent.mkdir()
    Image.new("RGB", (64, 64), (200, 10, 10)).save(image)
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "from negt2ibench.cli import main\n"
        f"sys.exit(main(['score', '--images', {str(image.parent)!r}, '--out', {str(tmp_path / 'r.jsonl')!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: this command needs torch, which is not installed: pip install 'negt2ibench[models]'"
    )
