"""The Space folder carries only what the Space imports, pinned so that it installs on ZeroGPU's Python
3.12 with a torch ZeroGPU runs; in `make test-space`'s venv, that file is what is installed."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from space.deploy import (
    APP_PY,
    PACKAGES,
    PYTHON_VERSION,
    RUNTIME_EXTRAS,
    SPACE_IMPORTS,
    SPACE_VERSIONS,
    ZERO_GPU_TORCH,
    assemble_space,
    normalized,
    pinned_versions,
    space_requirements,
)

REPO = Path(__file__).resolve().parents[2]
PROJECT = ("negt2ibench", "dataset_builder", "evaluator", "leaderboard", "space", "generation", "validation", "judges")
INSTALLED_BY_THE_SDK = {"gradio", "gradio-client"}  # sdk_version in the Space README
# What ZeroGPU supports (huggingface/hub-docs@242f4a1, docs/hub/spaces-zerogpu.md, "Supported Versions").
ZERO_GPU_PYTHONS = ("3.12.12", "3.10.13")
ZERO_GPU_TORCHES = ("2.8.0", "2.9.1", "2.10.0", "2.11.0")
# The valid `suggested_hardware` flavours (huggingface/hub-docs@242f4a1, docs/hub/spaces-config-reference.md).
SUGGESTED_HARDWARE = {"cpu-basic", "cpu-upgrade", "t4-small", "t4-medium", "l4x1", "l4x4", "l40sx1", "l40sx4"} | {
    "l40sx8", "a10g-small", "a10g-large", "a10g-largex2", "a10g-largex4", "a100-large", "a100x4", "a100x8"
}  # fmt: skip
SPACE_VENV_REQUIREMENTS = os.environ.get("NEGT2I_SPACE_REQUIREMENTS")  # set by `make test-space`


def _module_file(name: str) -> Path | None:
    path = REPO.joinpath(*name.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of TREE, those of a module-level `__getattr__` (lazy exports) left out."""
    lazy = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"]
    skipped = {id(inner) for node in lazy for inner in ast.walk(node)}
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skipped]


def imported_distributions(entry: str) -> tuple[set[str], set[str]]:
    """(project modules reached from ENTRY's source, distributions of their third-party imports).

    Every import statement counts, those inside functions too (the models load lazily), so this is
    what the Space can import, not just what it imports at start-up. A package's lazy exports (a
    module-level `__getattr__`, PEP 562) count only when a module imports them by name.
    """
    seen: set[str] = set()
    third_party: set[str] = set()
    todo = [node.module for node in ast.walk(ast.parse(entry)) if isinstance(node, ast.ImportFrom)]
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                top = target.split(".")[0]
                if top in PROJECT:
                    parts = target.split(".")
                    todo += [".".join(parts[:end]) for end in range(1, len(parts) + 1)]
                elif top and top not in sys.stdlib_module_names and top != "__future__":
                    third_party.add(top)
    owners = importlib.metadata.packages_distributions()
    distributions = {normalized(owners[top][0]) for top in third_party}
    return seen, distributions


def dependencies_of(names: set[str]) -> set[str]:
    """Every distribution installed as a (transitive) requirement of NAMES, extras left out."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        try:
            requires = importlib.metadata.requires(todo.pop()) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            if "extra ==" in line:
                continue
            name = normalized(Requirement(line).name)
            if name not in found:
                found.add(name)
                todo.append(name)
    return found


@pytest.mark.torch  # reads the installed distributions of the Space's whole stack, torch's included
def test_the_space_requirements_are_exactly_what_its_modules_import():
    modules, imported = imported_distributions(APP_PY)
    assert {"space.app", "negt2ibench.api", "evaluator.perception", "evaluator.models.detector"} <= modules
    # The job keeper plans jobs from the model an entry's images record (generation's registry and
    # seed rule); generating itself (runner, backends: diffusers) runs in a job, never in the Space.
    assert {"generation.registry", "generation.reproduce"} <= modules
    assert not {"generation.runner", "generation.backends"} & modules
    assert {name.split(".")[0] for name in modules} <= set(PACKAGES)  # every package it imports is copied
    listed = {normalized(name) for name in SPACE_IMPORTS}
    assert listed <= imported
    # the rest (huggingface_hub's HTTP client, gradio's jinja2) come with what is listed or the SDK
    unlisted = imported - INSTALLED_BY_THE_SDK - listed
    assert unlisted <= dependencies_of(listed | INSTALLED_BY_THE_SDK), unlisted - dependencies_of(listed)
    written = {normalized(line.split("==")[0]) for line in space_requirements().splitlines()}
    assert written == {normalized(name) for name in (*SPACE_IMPORTS, *RUNTIME_EXTRAS)}
    assert not written & {"diffusers", "bitsandbytes", "pytest", "playwright", "ruff", "gradio"}


def test_every_pin_installs_on_the_spaces_python():
    python = PYTHON_VERSION
    assert python in ZERO_GPU_PYTHONS and ZERO_GPU_TORCH["torch"] in ZERO_GPU_TORCHES
    assert set(SPACE_VERSIONS) == {"torch", "torchvision"}  # only ZeroGPU's torch pair differs from ours
    pins = pinned_versions()
    for line in space_requirements().splitlines():
        name, version = line.split("==")
        if name in SPACE_VERSIONS:
            assert version == ZERO_GPU_TORCH[name]
            continue
        assert version == pins[normalized(name)] == importlib.metadata.version(name), name
        requires = importlib.metadata.metadata(name).get("Requires-Python") or ""
        assert python in SpecifierSet(requires), f"{name}=={version} needs Python {requires}"


def test_the_space_readme_declares_zerogpus_python_and_no_invalid_hardware(tmp_path):
    assemble_space(tmp_path / "space", "org/negt2ibench", wheel=False)
    meta = yaml.safe_load((tmp_path / "space" / "README.md").read_text(encoding="utf-8").split("---")[1])
    assert meta["python_version"] == "3.12.12" == PYTHON_VERSION
    # ZeroGPU is no `suggested_hardware` flavour: picked in the settings or requested by `deploy-space --hardware`
    assert meta.get("suggested_hardware", "cpu-basic") in SUGGESTED_HARDWARE
    assert (tmp_path / "space" / "requirements.txt").read_text(encoding="utf-8") == space_requirements()


@pytest.mark.slow
def test_the_space_ships_this_versions_wheel_for_its_verification_jobs(tmp_path):
    import zipfile

    import negt2ibench
    from negt2ibench.core.hf_jobs import find_wheel

    files = assemble_space(tmp_path / "space", "org/negt2ibench")
    wheels = [f for f in files if f.parts[0] == "wheels"]
    assert [w.name for w in wheels] == [f"negt2ibench-{negt2ibench.__version__}-py3-none-any.whl"]
    shipped = tmp_path / "space" / wheels[0]
    with zipfile.ZipFile(shipped) as archive:
        names = set(archive.namelist())
    assert {"leaderboard/jobs/verify_job.py", "space/app.py", "evaluator/rules.py"} <= names
    # The job backend looks in the Space's folder first: the shipped wheel, nothing built there.
    assert find_wheel(negt2ibench.__version__, tmp_path / "space", tmp_path / "cache") == shipped
    assert not (tmp_path / "cache").exists()


@pytest.mark.skipif(not SPACE_VENV_REQUIREMENTS, reason="runs in `make test-space`'s venv (the Space's own set)")
def test_this_venv_holds_exactly_what_the_space_installs():
    written = Path(SPACE_VENV_REQUIREMENTS or "").read_text(encoding="utf-8")
    assert written == space_requirements()  # the file `deploy-space` wrote is this checkout's
    assert sys.version_info[:2] == (3, 12)
    for line in written.splitlines():
        name, version = line.split("==")
        assert importlib.metadata.version(name) == version, name


def test_the_linter_targets_the_projects_oldest_python():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the backport pytest itself installs there
        import tomli as tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["requires-python"] == ">=3.10"
    assert project["tool"]["ruff"]["target-version"] == "py310" and project["tool"]["mypy"]["python_version"] == "3.10"


def test_the_manual_lists_what_the_space_folder_holds(tmp_path):
    """docs/space.md's list of the folder's contents is what `assemble_space` writes (the wheel's
    folder included, which the slow test below builds)."""
    manual = " ".join((REPO / "docs" / "space.md").read_text(encoding="utf-8").split())
    listed = manual.split("The folder holds the project's packages", 1)[1].split("is replaced each time", 1)[0]
    named = set(re.findall(r"`([A-Za-z0-9_.]+/?)`", listed)) - {"PACKAGES"}
    written = {p.name + ("/" if p.is_dir() else "") for p in _assembled(tmp_path).iterdir()}
    assert named == written | {"wheels/"}
    assert {f"{package}/" for package in PACKAGES} <= named


def _assembled(tmp_path: Path) -> Path:
    assemble_space(tmp_path / "space", "org/negt2ibench", wheel=False)
    return tmp_path / "space"


def _checkout_state() -> dict[str, tuple[int, int]]:
    """Every file of the checkout that git shows as changed, new or ignored (caches left out: parallel
    tests write them), and every file under build/ and *.egg-info/, with its mtime and size."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--ignored", "--untracked-files=all", "-z"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    names = {entry[3:] for entry in listed.split("\0") if len(entry) > 3}
    names |= {
        str(p.relative_to(REPO)) for folder in (REPO / "build", *REPO.glob("*.egg-info")) for p in folder.rglob("*")
    }
    caches = ("__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis")
    state = {}
    for name in sorted(names):
        path = REPO / name
        if any(part in caches for part in Path(name).parts) or not path.is_file():
            continue
        status = path.stat()
        state[name] = (status.st_mtime_ns, status.st_size)
    return state


@pytest.mark.slow  # builds the wheel
def test_a_dry_run_writes_nothing_into_the_checkout_but_its_out_folder(tmp_path, capsys):
    from negt2ibench.cli import main

    before = _checkout_state()
    assert main(["deploy-space", "--repo-id", "org/negt2ibench", "--dry-run", "--out", str(tmp_path / "out")]) == 0
    assert "wheels/negt2ibench-" in capsys.readouterr().out
    assert _checkout_state() == before  # no build/bdist.*, no negt2ibench.egg-info/ written or rewritten
