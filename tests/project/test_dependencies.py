"""pyproject's dependencies are what the code imports: `pip install negt2ibench` alone (no extra)
builds and validates the corpus, reports and answers every `--help`; every declared distribution is pinned in
requirements.txt, the tested set. (That every import is declared somewhere is deptry's, in `make lint`.)
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from space.deploy import normalized
from tests.helpers.report_helpers import hand_results
from tests.project.test_wheel import EVERY_COMMAND
from tests.space.test_deploy import dependencies_of

tomllib = pytest.importorskip("tomllib", reason="pyproject.toml is read with Python 3.11's tomllib")

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
FIRST_PARTY = {
    "negt2ibench",
    "dataset_builder",
    "generation",
    "evaluator",
    "judges",
    "leaderboard",
    "space",
    "validation",
    "tests",
}

# Run in a fresh interpreter with every module of a distribution outside the runtime set made
# unimportable (None in sys.modules: `import torch` raises ModuleNotFoundError and
# importlib.util.find_spec answers None, as when it is not installed), then the core commands.
WITHOUT_THE_EXTRAS = (
    r"""
import contextlib, io, json, sys
blocked = json.loads(sys.argv[1])
for name in blocked:
    sys.modules[name] = None
"""
    + EVERY_COMMAND
    + r"""
from negt2ibench.cli import build_parser, main

helped = []
for command in commands(build_parser()):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main([*command, "--help"])
    helped.append(" ".join(command))
corpus, results, reports = sys.argv[2:5]
codes = [main(["build", "--out", corpus]), main(["validate", corpus]), main(["report", results, "--out", reports])]
loaded = sorted({name.split(".")[0] for name, module in sys.modules.items() if module is not None})
print(json.dumps({"helped": helped, "codes": codes, "loaded": loaded}))
"""
)


def _pins() -> dict[str, str]:
    """requirements.txt's `name[extras]==version` lines, by normalized name."""
    lines = (line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text("utf-8").splitlines())
    return {normalized(r.name): str(r.specifier) for r in map(Requirement, filter(None, lines))}


def _names(requirements: list[str]) -> set[str]:
    return {normalized(Requirement(line).name) for line in requirements}


@pytest.mark.slow
def test_the_runtime_dependencies_alone_build_validate_and_help(tmp_path):
    runtime = _names(PROJECT["dependencies"])
    allowed = runtime | dependencies_of(runtime)
    owners = importlib.metadata.packages_distributions()
    blocked = sorted(
        top
        for top, distributions in owners.items()
        if top.isidentifier()
        and top not in FIRST_PARTY
        and top not in sys.stdlib_module_names
        and not {normalized(d) for d in distributions} & allowed
    )
    assert {"torch", "transformers", "gradio", "rfdetr", "diffusers", "spaces"} <= set(blocked)  # the extras'
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in hand_results()), encoding="utf-8")
    arguments = [json.dumps(blocked), str(tmp_path / "corpus"), str(results), str(tmp_path / "reports")]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_EXTRAS, *arguments],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 0, 0]
    assert {"build", "validate", "score", "generate", "judge", "serve", "report", "agree"} <= set(result["helped"])
    assert not set(result["loaded"]) & set(blocked)
    assert (tmp_path / "corpus" / "README.md").is_file()
    assert (tmp_path / "reports" / "report.md").is_file() and any((tmp_path / "reports").glob("*.png"))


def test_every_declared_dependency_is_pinned_in_requirements():
    pins = _pins()
    assert all(specifier.startswith("==") for specifier in pins.values())
    declared = _names(PROJECT["dependencies"])
    for extra in PROJECT["optional-dependencies"].values():
        declared |= _names(extra) - {"negt2ibench"}
    assert declared - set(pins) == set()
    # The dev extra's tool pins are the same as requirements.txt's.
    for line in PROJECT["optional-dependencies"]["dev"]:
        requirement = Requirement(line)
        assert str(requirement.specifier) == pins[normalized(requirement.name)], line


def test_the_version_is_written_once():
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "negt2ibench.__version__"}


def test_every_extra_the_cli_names_is_declared():
    """The CLI's answer to a missing library (`pip install 'negt2ibench[EXTRA]'`) names real extras."""
    from negt2ibench.cli import EXTRA_OF_MODULE

    assert set(EXTRA_OF_MODULE.values()) <= set(PROJECT["optional-dependencies"])
