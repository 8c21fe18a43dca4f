"""The requirements of CI's run on the project's oldest Python (3.10: requires-python >= 3.10), to stdout.

requirements.txt pins releases that need Python 3.11 (numpy 2.4, pandas 3, scipy 1.17, ...). This
set is requirements.txt with their last 3.10 releases in their place (`PY310_VERSIONS`, the library's
and the tests'), and without the model stack: PyPI's torch is a multi-GB CUDA download, so the tests
that need torch are skipped there (tests/conftest.py) and run under 3.11 (`make test`) and, for the
Space's, 3.12 (`make test-space`, the Space's own set). Nor the 3.11 gate's tools (ruff, deptry, mkdocs
run once, under 3.11) or the browser driver (the browser tests need torch).

Run from the repository root:  .venv/bin/python .ci/requirements_py310.py > requirements-py310.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from space.deploy import normalized, pinned_versions  # noqa: E402

# The model stack: torch and what needs it.
WITHOUT = {"torch", "torchvision", "transformers", "diffusers", "accelerate", "bitsandbytes", "rfdetr"}
# Tools that run under 3.11 only (the lint gate, the docs, the browser tests' driver).
WITHOUT |= {"ruff", "deptry", "mkdocs", "mkdocs-material", "mkdocstrings", "mkdocstrings-python", "playwright"}
# Pins whose release needs 3.11: their last 3.10 releases (`pip index versions NAME --python-version
# 3.10`; the whole set resolves for CPython 3.10 manylinux). With pyarrow 25, datasets 5.2 cannot
# fingerprint an in-memory `Dataset.from_dict` (the product only uses `load_dataset`).
PY310_VERSIONS = {
    "filelock": "4.1.0",
    "fonttools": "4.65.0",
    "matplotlib": "3.10.9",
    "numpy": "2.2.6",
    "pandas": "2.3.3",
    "pyarrow": "25.0.1",
    "scipy": "1.15.3",
    "transformers": "5.20.2",
    "scikit-learn": "1.7.2",
    "scikit-image": "0.25.2",
}


def py310_requirements(requirements: Path = REPO / "requirements.txt") -> list[str]:
    """`name==version` lines: requirements.txt's pins, as they install on Python 3.10."""
    replaced = {normalized(name): version for name, version in PY310_VERSIONS.items()}
    lines = []
    for name, version in pinned_versions(requirements).items():
        if name.split("[")[0] in {normalized(n) for n in WITHOUT}:  # `mkdocstrings[python]` is mkdocstrings
            continue
        lines.append(f"{name}=={replaced.get(name, version)}")
    return lines


if __name__ == "__main__":
    print("\n".join(py310_requirements()))
