"""The wheel works outside the checkout (issue 23): built from the repository's files, installed into a
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
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

import negt2ibench

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("negt2ibench", "dataset_builder", "generation", "evaluator", "judges", "space", "validation")

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


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [Path(name) for name in listed.split("\0") if name and (REPO / name).is_file()]


def _copy_checkout(files: list[Path], destination: Path) -> None:
    """The files a clone has (tracked or new, never ignored build output), so the build sees no stale files."""
    for relative in files:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / relative).read_bytes())


def _build_wheel(source: Path, dist: Path) -> Path:
    import setuptools

    # pyproject.toml declares its licence the PEP 639 way, which older setuptools refuse.
    assert Version(setuptools.__version__) >= Version("77"), (
        f"setuptools {setuptools.__version__} ({setuptools.__file__}) cannot build the wheel: "
        "install requirements.txt's pinned setuptools (pip install -r requirements.txt)"
    )
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        cwd=dist.parent,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("negt2ibench-*.whl")
    return wheel


def _fresh_venv(root: Path, wheel: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    # Only now (pip would otherwise take the checkout's editable install for this same version):
    # the dependencies, from this interpreter's site-packages, after the venv's own.
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = [site.getusersitepackages(), *site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    seen = [entry for entry in sys.path if entry.endswith(("site-packages", "dist-packages"))]
    dependencies = [entry for entry in dict.fromkeys([*seen, *ours]) if Path(entry).is_dir()]
    (purelib / "_negt2i_test_dependencies.pth").write_text("\n".join(dependencies) + "\n", encoding="utf-8")
    return root


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=environment, timeout=600)


def test_the_wheel_builds_validates_and_helps_from_outside_the_checkout(tmp_path):
    files = _tracked_files()
    source, dist, work = tmp_path / "source", tmp_path / "dist", tmp_path / "work"
    for folder in (source, dist, work):
        folder.mkdir()
    _copy_checkout(files, source)
    wheel = _build_wheel(source, dist)

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

    venv = _fresh_venv(tmp_path / "venv", wheel)
    script = str(venv / "bin" / "negt2ibench")

    version = _run(venv, script, "--version", cwd=work)
    assert (version.returncode, version.stdout.strip()) == (0, f"negt2ibench {negt2ibench.__version__}")

    built = _run(venv, script, "build", "--out", "corpus", cwd=work)
    assert built.returncode == 0, built.stdout + built.stderr
    # The same folder as the checkout builds, the card (rendered from the wheel's template) included.
    reference = subprocess.run(
        [sys.executable, "-m", "negt2ibench", "build", "--out", str(tmp_path / "reference")], capture_output=True
    )
    assert reference.returncode == 0, reference.stderr
    for name in ("README.md", "prompts.jsonl", "prompts/test-00000-of-00001.parquet"):
        assert (work / "corpus" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    assert "4,800 prompts" in (work / "corpus" / "README.md").read_text(encoding="utf-8")
    validated = _run(venv, script, "validate", "corpus", cwd=work)
    assert validated.returncode == 0, validated.stdout + validated.stderr

    top = _run(venv, script, "--help", cwd=work)
    assert top.returncode == 0 and "build" in top.stdout and "score" in top.stdout, top.stderr
    helped = _run(venv, str(venv / "bin" / "python"), "-c", HELP_OF_EVERY_COMMAND, cwd=work)
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
    deploy = _run(venv, script, "deploy-space", "--repo-id", "org/space", "--dry-run", "--out", "space", cwd=work)
    assert deploy.returncode == 1, deploy.stdout + deploy.stderr
    assert deploy.stderr.startswith("error: deploy-space assembles the Space from a clone"), deploy.stderr
    assert len(deploy.stderr.strip().splitlines()) == 1
