"""Assemble the Space folder (entry file, code, requirements, README with the Space YAML) and upload it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from negt2ibench.core.errors import UserError

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("negt2ibench", "dataset_builder", "evaluator", "judges", "leaderboard", "space", "validation")
GRADIO_VERSION = "6.31.0"  # the Space installs gradio (and gradio_client) itself from sdk_version
ZERO_GPU_HARDWARE = "zero-a10g"  # huggingface_hub.SpaceHardware.ZERO_A10G
# The Python of ZeroGPU Spaces, as the Hub's ZeroGPU docs list it ("Supported versions").
PYTHON_VERSION = "3.10.13"

# What the Space's code imports: the distributions behind every third-party import of the modules
# space/app.py reaches (tests/space/test_deploy.py derives them and compares). Not diffusers,
# bitsandbytes (generation), scikit-learn/statsmodels (the agreement study), scikit-image (selftest)
# or the test tools.
SPACE_IMPORTS = (
    "accelerate",
    "confusable-homoglyphs",
    "datasets",
    "filelock",
    "huggingface_hub",
    "matplotlib",
    "numpy",
    "pandas",
    "pillow",
    "pyarrow",
    "pydantic",
    "rfdetr",
    "scipy",
    "spaces",
    "supervision",
    "torch",
    "torchvision",
    "tqdm",
    "transformers",
)
# Needed at run time although no module of ours imports them.
RUNTIME_EXTRAS = {
    "authlib": "gradio's Sign in with Hugging Face (hf_oauth: true)",
    "itsdangerous": "gradio's Sign in with Hugging Face (hf_oauth: true)",
    "opencv-python-headless": "supervision draws the annotated image with OpenCV (else a slow numpy path)",
}
# requirements.txt pins releases that need Python 3.11; on the Space's 3.10 these are the newest
# releases that install (their Requires-Python, as `pip index versions X --python-version 3.10` lists).
# The whole set resolves for CPython 3.10 manylinux (pip --dry-run --python-version 3.10), and the Space's
# tests pass on Python 3.11 with these releases in place of the pinned ones, but one: with pyarrow 25,
# datasets 5.2 cannot fingerprint an in-memory `Dataset.from_dict` (the Space only uses `load_dataset`).
PY310_VERSIONS = {
    "filelock": "4.1.0",
    "matplotlib": "3.10.9",
    "numpy": "2.2.6",
    "pandas": "2.3.3",
    "pyarrow": "25.0.1",
    "scipy": "1.15.3",
    "transformers": "5.20.2",
}

APP_PY = '''"""Hugging Face Space entry point: the NegT2IBench app (see space/app.py)."""
from space.app import LAUNCH_KWARGS, build_app

demo = build_app()

if __name__ == "__main__":
    demo.launch(**LAUNCH_KWARGS)
'''


def space_readme(repo_id: str) -> str:
    title = repo_id.split("/")[-1]
    return f"""---
title: {title}
emoji: 🚫
colorFrom: indigo
colorTo: red
sdk: gradio
sdk_version: {GRADIO_VERSION}
app_file: app.py
python_version: "{PYTHON_VERSION}"
suggested_hardware: {ZERO_GPU_HARDWARE}
hf_oauth: true
pinned: false
license: apache-2.0
short_description: Negation benchmark for text-to-image models
---

# NegT2IBench

Explore the 4,800 prompts, score an image of your own with the detector-based evaluator,
browse the leaderboard, and submit a model's results.

This Space runs on ZeroGPU: pick **ZeroGPU** hardware in the Space settings (the evaluator's
models load once and run inside `@spaces.GPU`). The leaderboard lives in SQLite under
`NEGT2I_HOME` unless the variable `NEGT2I_RESULTS_REPO` names a Hub dataset repo (set the
secret `HF_TOKEN` with write access to it).
"""


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them (`huggingface_hub` = `huggingface-hub`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_versions(requirements: Path = REPO_ROOT / "requirements.txt") -> dict[str, str]:
    """requirements.txt's `name==version` lines, by normalized name."""
    pins = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        requirement = line.split("#")[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[normalized(name)] = version.strip()
    return pins


def space_requirements(requirements: Path = REPO_ROOT / "requirements.txt") -> str:
    """The Space's requirements.txt: what it imports and needs at run time, pinned for Python 3.10."""
    pins = pinned_versions(requirements)
    lines = []
    for name in sorted({*SPACE_IMPORTS, *RUNTIME_EXTRAS}, key=normalized):
        version = PY310_VERSIONS.get(name) or pins.get(normalized(name))
        if version is None:
            raise ValueError(f"{name} is needed by the Space but not pinned in {requirements}")
        lines.append(f"{name}=={version}")
    return "\n".join(lines) + "\n"


def assemble_space(out_dir: str | Path, repo_id: str, source_root: Path = REPO_ROOT) -> list[Path]:
    """Write the Space folder into `out_dir` (replacing what it held); the files, relative to it."""
    if not (source_root / "requirements.txt").is_file():
        # An installed wheel has the code but not the checkout's pinned set the Space installs.
        raise UserError(
            f"deploy-space assembles the Space from a clone of the repository (it pins the Space's "
            f"requirements from its requirements.txt, not found in {source_root}): run it from a clone"
        )
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for package in PACKAGES:
        shutil.copytree(source_root / package, out / package, ignore=ignore)
    (out / "app.py").write_text(APP_PY, encoding="utf-8")
    (out / "requirements.txt").write_text(space_requirements(source_root / "requirements.txt"), encoding="utf-8")
    (out / "README.md").write_text(space_readme(repo_id), encoding="utf-8")
    return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())


def upload_space(folder: Path, repo_id: str, token: str | None = None) -> str:
    """Create the Space (gradio SDK) if needed and upload the folder as one commit; the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(folder), repo_id=repo_id, repo_type="space", commit_message="Deploy NegT2IBench Space"
    )
    return str(getattr(commit, "commit_url", commit))


def deploy_space(
    repo_id: str, out_dir: str | Path, *, dry_run: bool = False, upload: Callable[[Path, str], str] | None = None
) -> tuple[list[Path], str | None]:
    """Assemble the folder; upload it unless `dry_run`. The files and the commit URL (None when dry)."""
    files = assemble_space(out_dir, repo_id)
    if dry_run:
        return files, None
    uploader = upload or (lambda folder, repo: upload_space(folder, repo))
    return files, uploader(Path(out_dir), repo_id)
