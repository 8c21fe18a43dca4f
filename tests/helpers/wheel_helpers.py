"""A wheel of the checkout installed into a fresh venv, offline (tests/project/test_wheel.py says how):
built with `python -m build --no-isolation`, installed with `pip --no-deps --no-index`, its
dependencies seen through a `.pth` file, either this interpreter's whole site-packages or only
the distributions an extra needs (`installed_closure`)."""

from __future__ import annotations

import importlib.metadata
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [Path(name) for name in listed.split("\0") if name and (REPO / name).is_file()]


def copy_checkout(files: list[Path], destination: Path) -> None:
    """The files a clone has (tracked or new, never ignored build output), so the build sees no stale files."""
    for relative in files:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / relative).read_bytes())


def build_wheel(source: Path, dist: Path) -> Path:
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


def fresh_venv(root: Path, wheel: Path, dependencies: list[str] | None = None) -> Path:
    """A venv at ROOT with only the wheel installed; its dependencies are seen through a `.pth` file:
    DEPENDENCIES (folders), by default every site-packages folder of this interpreter."""
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
    if dependencies is None:
        ours = [site.getusersitepackages(), *site.getsitepackages(), sysconfig.get_paths()["purelib"]]
        seen = [entry for entry in sys.path if entry.endswith(("site-packages", "dist-packages"))]
        dependencies = [entry for entry in dict.fromkeys([*seen, *ours]) if Path(entry).is_dir()]
    (purelib / "_negt2i_test_dependencies.pth").write_text("\n".join(dependencies) + "\n", encoding="utf-8")
    return root


def run_in(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=environment, timeout=600)


def distribution_closure(project: str, extras: set[str]) -> set[str]:
    """The installed distributions PROJECT needs with EXTRAS (its base requirements, those of the extras,
    and theirs, transitively; the dependencies' own extras left out), by canonical name."""
    found: set[str] = set()
    todo: list[tuple[str, set[str]]] = [(project, extras)]
    while todo:
        name, wanted = todo.pop()
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement = Requirement(line)
            markers = [{**default_environment(), "extra": extra} for extra in wanted or {""}]
            if requirement.marker is not None and not any(requirement.marker.evaluate(m) for m in markers):
                continue
            key = canonicalize_name(requirement.name)
            if key == canonicalize_name(project):  # an extra naming others of its own project
                todo.append((project, set(requirement.extras)))
            elif key not in found:
                found.add(key)
                todo.append((key, set()))
    return found


def installed_closure(names: set[str], folder: Path) -> Path:
    """FOLDER holding a link to every top-level module and `.dist-info` of the installed distributions
    NAMES, and of nothing else: a site-packages as if only they were installed."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(names):
        distribution = importlib.metadata.distribution(name)
        for file in distribution.files or []:
            top = file.parts[0]
            if top == ".." or top.endswith((".pth", ".egg-link")) or top == "__pycache__":
                continue
            source = Path(str(distribution.locate_file(top)))
            link = folder / top
            if source.exists() and not link.exists():
                link.symlink_to(source)
    return folder
