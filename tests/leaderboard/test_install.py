"""The leaderboard's back end installs and runs without the Space: the wheel in a fresh venv that sees
only the distributions of `negt2ibench[leaderboard]` (no gradio, no spaces, no torch), where
`leaderboard list` and `leaderboard verify --help` run and importing the back end loads no UI library."""

from __future__ import annotations

import json

import pytest

from tests.helpers.wheel_helpers import (
    build_wheel,
    copy_checkout,
    distribution_closure,
    fresh_venv,
    installed_closure,
    run_in,
    tracked_files,
)

pytestmark = pytest.mark.slow

IMPORT_THE_BACK_END = r"""
import importlib, json, pkgutil, sys
import leaderboard
names = [m.name for m in pkgutil.walk_packages(leaderboard.__path__, "leaderboard.")]
for name in names:
    importlib.import_module(name)
try:
    import gradio  # noqa: F401
    gradio_importable = True
except ImportError:
    gradio_importable = False
print(json.dumps({
    "file": leaderboard.__file__,
    "modules": names,
    "ui": sorted(m for m in sys.modules if m.split(".")[0] in ("gradio", "gradio_client", "spaces")),
    "gradio_importable": gradio_importable,
}))
"""


def test_the_closure_of_the_leaderboard_extra_leaves_the_ui_out():
    closure = distribution_closure("negt2ibench", {"leaderboard"})
    assert {"confusable-homoglyphs", "pydantic", "huggingface-hub"} <= closure
    assert not {"gradio", "spaces", "torch"} & closure
    assert {"gradio", "spaces"} <= distribution_closure("negt2ibench", {"space"})


def test_the_back_end_runs_in_a_venv_without_the_space_extra(tmp_path):
    source, dist, work = tmp_path / "source", tmp_path / "dist", tmp_path / "work"
    for folder in (source, dist, work):
        folder.mkdir()
    copy_checkout(tracked_files(), source)
    wheel = build_wheel(source, dist)
    closure = distribution_closure("negt2ibench", {"leaderboard"})
    dependencies = installed_closure(closure, tmp_path / "site")
    venv = fresh_venv(tmp_path / "venv", wheel, dependencies=[str(dependencies)])
    script = str(venv / "bin" / "negt2ibench")

    listed = run_in(venv, script, "leaderboard", "list", "--home", str(tmp_path / "home"), cwd=work)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert listed.stdout.startswith("0 submission(s) in"), listed.stdout
    helped = run_in(venv, script, "leaderboard", "verify", "--help", cwd=work)
    assert helped.returncode == 0, helped.stdout + helped.stderr
    assert helped.stdout.startswith("usage: negt2ibench leaderboard verify")

    imported = run_in(venv, str(venv / "bin" / "python"), "-c", IMPORT_THE_BACK_END, cwd=work)
    assert imported.returncode == 0, imported.stderr
    answer = json.loads(imported.stdout.strip().splitlines()[-1])
    assert answer["file"].startswith(str(tmp_path / "venv"))  # the wheel's code, not the checkout's
    assert {"leaderboard.store.sqlite_store", "leaderboard.intake.submissions", "leaderboard.cli"} <= set(
        answer["modules"]
    )
    assert answer["ui"] == []
    assert answer["gradio_importable"] is False  # the venv really lacks the Space's libraries
