"""The versions of the libraries a record was made with (written into image params and result records)."""

from __future__ import annotations

import platform
from collections.abc import Iterable

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
