"""The versions of the libraries a record was made with (written into image params and result records)."""

from __future__ import annotations

import ast
import platform
from collections.abc import Iterable
from functools import cache
from pathlib import Path

DEFAULT_PACKAGES = ("torch", "diffusers", "transformers", "accelerate", "negt2ibench")


def library_versions(packages: Iterable[str] = DEFAULT_PACKAGES) -> dict[str, str]:
    """Python's version and each installed package's (packages that are not installed are left out)."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version()}
    for package in packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    return versions


@cache
def project_version() -> str:
    """This project's version, `negt2ibench.__version__`, read from its file the way setuptools reads
    it for the wheel (the one place it is written), so the layers below the package facade have it
    too (e.g. to pin the package a Hugging Face Job installs)."""
    source = Path(__file__).resolve().parents[1] / "__init__.py"
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise RuntimeError(f"no __version__ in {source}")
