"""The wheel works outside the checkout: built from the repository's files, installed into a
fresh virtual environment, it builds and validates the corpus and every command answers `--help`.

How it stays offline: the wheel is built with `python -m build --no-isolation` (this environment's
setuptools, no download) and installed with `pip install --no-deps --no-index` into a fresh venv;
that venv then sees this interpreter's site-packages through a `.pth` file (the way the worktrees'
light venvs are made), so its dependencies are the tested set of requirements.txt and nothing is
fetched. The wheel's own copy of the code comes first on that venv's path; the commands run from a
temporary folder, so the checkout is never importable, and the test checks the code ran from the wheel.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import negt2ibench
from tests.helpers.wheel_helpers import build_wheel, copy_checkout, fresh_venv, run_in, tracked_files

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("negt2ibench", "dataset_builder", "generation", "evaluator", "judges", "leaderboard", "space", "validation")

pytestmark = pytest.mark.slow

# Every command and sub-command of a parser (`annotations export`, ...), for the scripts below.
EVERY_COMMAND = r"""
import argparse

def commands(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from commands(sub, (*path, name))
"""
# Run by the fresh venv's interpreter: `--help` of every command, as the console script would run
# it (negt2ibench.cli.main), and where the code was imported from.
HELP_OF_EVERY_COMMAND = (
    EVERY_COMMAND
    + r"""
import contextlib, io, json
import negt2ibench
from negt2ibench.cli import build_parser, main

answers = {}
for command in commands(build_parser()):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        code = main([*command, "--help"])
    answers[" ".join(command)] = out.getvalue()
print(json.dumps({"file": negt2ibench.__file__, "answers": answers}))
"""
)


def test_the_wheel_builds_validates_and_helps_from_outside_the_checkout(tmp_path):
    files = tracked_files()
    source, dist, work = tmp_path / "source", tmp_path / "dist", tmp_path / "work"
    for folder in (source, dist, work):
        folder.mkdir()
    copy_checkout(files, source)
    wheel = build_wheel(source, dist)

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    # Every file of the packages that is not code is package data: the code reads them at run time
    # (the dataset card template, data files, assets).
    data = {f.as_posix() for f in files if f.parts[0] in PACKAGES and f.suffix not in (".py", ".pyc")}
    assert "dataset_builder/dataset_card.md" in data
    assert data <= names, sorted(data - names)
    assert {f.as_posix() for f in files if f.parts[0] in PACKAGES and f.suffix == ".py"} <= names
    assert not {name for name in names if name.startswith(("tests/", "benchmarks/", "docs/"))}
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert f"\nVersion: {negt2ibench.__version__}\n" in metadata  # the one __version__
    assert "\nLicense-Expression: Apache-2.0\n" in metadata

    venv = fresh_venv(tmp_path / "venv", wheel)
    script = str(venv / "bin" / "negt2ibench")

    version = run_in(venv, script, "--version", cwd=work)
    assert (version.returncode, version.stdout.strip()) == (0, f"negt2ibench {negt2ibench.__version__}")

    built = run_in(venv, script, "build", "--out", "corpus", cwd=work)
    assert built.returncode == 0, built.stdout + built.stderr
    # The same folder as the checkout builds, the card (rendered from the wheel's template) included.
    reference = subprocess.run(
        [sys.executable, "-m", "negt2ibench", "build", "--out", str(tmp_path / "reference")], capture_output=True
    )
    assert reference.returncode == 0, reference.stderr
    for name in ("README.md", "prompts.jsonl", "prompts/test-00000-of-00001.parquet"):
        assert (work / "corpus" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    assert "4,800 prompts" in (work / "corpus" / "README.md").read_text(encoding="utf-8")
    validated = run_in(venv, script, "validate", "corpus", cwd=work)
    assert validated.returncode == 0, validated.stdout + validated.stderr

    top = run_in(venv, script, "--help", cwd=work)
    assert top.returncode == 0 and "build" in top.stdout and "score" in top.stdout, top.stderr
    helped = run_in(venv, str(venv / "bin" / "python"), "-c", HELP_OF_EVERY_COMMAND, cwd=work)
    assert helped.returncode == 0, helped.stderr
    answer = json.loads(helped.stdout.strip().splitlines()[-1])
    assert Path(answer["file"]).resolve().is_relative_to((tmp_path / "venv").resolve())  # the wheel's code
    commands = answer["answers"]
    expected = {"build", "validate", "push", "generate", "score", "explain", "report", "judge", "agree"}
    assert expected | {"serve", "deploy-space", "leaderboard", "annotations export"} <= set(commands)
    for command, text in commands.items():
        assert text.startswith("usage: negt2ibench"), (command, text[:200])
        assert f"negt2ibench {command}" in " ".join(text.split()), (command, text[:200])

    # The one command that needs the checkout says so in one line instead of failing on a missing file.
    deploy = run_in(venv, script, "deploy-space", "--repo-id", "org/space", "--dry-run", "--out", "space", cwd=work)
    assert deploy.returncode == 1, deploy.stdout + deploy.stderr
    assert deploy.stderr.startswith("error: deploy-space assembles the Space from a clone"), deploy.stderr
    assert len(deploy.stderr.strip().splitlines()) == 1
