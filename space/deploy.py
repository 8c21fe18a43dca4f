"""Assemble the Space folder (entry file, code, requirements, README with the Space YAML) and upload it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from negt2ibench.core.errors import UserError

from .gpu_budget import DEFAULT_DURATION_FACTOR, charged_seconds, score_seconds

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "negt2ibench",
    "dataset_builder",
    "evaluator",
    "generation",
    "judges",
    "leaderboard",
    "space",
    "validation",
)
GRADIO_VERSION = "6.31.0"  # the Space installs gradio (and gradio_client) itself from sdk_version
# The Python and torch of ZeroGPU Spaces, as the Hub's ZeroGPU docs list them ("Supported versions",
# huggingface/hub-docs docs/hub/spaces-zerogpu.md): Python 3.12.12 or 3.10.13; torch 2.8.0, 2.9.1,
# 2.10.0 or 2.11.0. The pair is the one the GPU machine's image runs (benchmarks/device_image.txt),
# on which `make device-dryrun` and `make test-space` pass.
PYTHON_VERSION = "3.12.12"
ZERO_GPU_TORCH = {"torch": "2.11.0", "torchvision": "0.26.0"}
# ZeroGPU is not a `suggested_hardware` flavour (the config reference lists cpu-*, t4-*, l4x*, l40sx*,
# a10g-*, a100-* only): it is picked in the Space's settings or requested by `deploy-space --hardware`.
ZERO_GPU_HARDWARE = "zero-a10g"  # huggingface_hub.SpaceHardware.ZERO_A10G, what request_space_hardware takes

# What the Space's code imports: the distributions behind every third-party import of the modules
# space/app.py reaches (tests/space/test_deploy.py derives them and compares). Not diffusers,
# bitsandbytes (generation), scikit-learn/statsmodels (the agreement study) or the test tools.
# scikit-image is: the job keeper plans from the regeneration check's policy module, whose
# `own_image` (CIEDE2000 in Lab) a verification job run by the `local` backend computes here.
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
    "scikit-image",
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
# Where the Space pins another release than requirements.txt: ZeroGPU's torch pair. Every other pin
# installs on Python 3.12 as it is (tests/space/test_deploy.py checks each Requires-Python), and the
# whole set is what `make test-space` installs and tests.
SPACE_VERSIONS = dict(ZERO_GPU_TORCH)

APP_PY = '''"""Hugging Face Space entry point: the NegT2IBench app (see space/app.py)."""
from space.app import LAUNCH_KWARGS, build_app

demo = build_app()

if __name__ == "__main__":
    demo.launch(**LAUNCH_KWARGS)
'''


def settings_url(repo_id: str) -> str:
    return f"https://huggingface.co/spaces/{repo_id}/settings"


def hardware_hint(repo_id: str) -> str:
    """The one line that says how to put the Space on ZeroGPU by hand."""
    return (
        f"hardware: pick ZeroGPU under 'Space hardware' on {settings_url(repo_id)} "
        f"(or deploy again with --hardware {ZERO_GPU_HARDWARE})"
    )


def space_readme(repo_id: str) -> str:
    title = repo_id.split("/")[-1]
    one_image = charged_seconds(score_seconds(1), DEFAULT_DURATION_FACTOR)
    return f"""---
title: {title}
emoji: 🚫
colorFrom: indigo
colorTo: red
sdk: gradio
sdk_version: {GRADIO_VERSION}
app_file: app.py
python_version: "{PYTHON_VERSION}"
hf_oauth: true
pinned: false
license: apache-2.0
short_description: Negation benchmark for text-to-image models
---

# NegT2IBench

Explore the 4,800 prompts, score an image of your own with the detector-based evaluator,
browse the leaderboard, and submit a model's results.

This Space runs on ZeroGPU: pick **ZeroGPU** under *Space hardware* in its settings (or deploy
with `negt2ibench deploy-space --hardware {ZERO_GPU_HARDWARE}`). At its first start the Space
downloads the evaluator's weights (about 3 GB) from the Hub; the models then load once at
start-up and each score runs in a `@spaces.GPU` call sized to its work: scoring one image asks for
{score_seconds(1)} s of GPU, {one_image} s of a visitor's daily ZeroGPU quota on the default GPU size
(2 minutes without a Hugging Face account, 5 with a free one). Submissions are not re-scored here:
with the secret `HF_TOKEN` set, each one's verification runs as a Hugging Face Job on the owner's
account (`wheels/` holds the exact package the job installs); without it, entries wait until a
maintainer runs `negt2ibench leaderboard verify-job --entry ID` on a GPU machine.

The leaderboard lives in SQLite under `NEGT2I_HOME` unless the variable `NEGT2I_RESULTS_REPO`
names a Hub dataset repo (set the secret `HF_TOKEN` with write access to it).
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
    """The Space's requirements.txt: what it imports and needs at run time, pinned as requirements.txt
    pins it but for ZeroGPU's torch pair (`SPACE_VERSIONS`)."""
    pins = pinned_versions(requirements)
    lines = []
    for name in sorted({*SPACE_IMPORTS, *RUNTIME_EXTRAS}, key=normalized):
        version = SPACE_VERSIONS.get(name) or pins.get(normalized(name))
        if version is None:
            raise ValueError(f"{name} is needed by the Space but not pinned in {requirements}")
        lines.append(f"{name}=={version}")
    return "\n".join(lines) + "\n"


def assemble_space(
    out_dir: str | Path, repo_id: str, source_root: Path = REPO_ROOT, *, wheel: bool = True
) -> list[Path]:
    """Write the Space folder into `out_dir` (replacing what it held); the files, relative to it.

    With `wheel`, the folder also holds `wheels/negt2ibench-<version>-py3-none-any.whl`, built from
    this checkout: what the Space's verification jobs install (`negt2ibench.core.hf_jobs.find_wheel`
    looks there), so a job runs exactly the code the Space runs."""
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
    if wheel:
        from negt2ibench.core.hf_jobs import build_wheel

        build_wheel(source_root, out / "wheels")
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


def request_hardware(repo_id: str, hardware: str, api: Any = None) -> str:
    """Ask the Hub to run the Space on `hardware` (`HfApi.request_space_hardware`); the hardware the
    Hub then reports. A refusal (e.g. an account that cannot host ZeroGPU Spaces) is one `UserError`
    line that says what to click instead."""
    from huggingface_hub import HfApi, SpaceHardware

    from dataset_builder.hub import hub_errors

    api = api if api is not None else HfApi()
    try:
        with hub_errors(f"request {hardware} hardware for the Space {repo_id}"):
            runtime = api.request_space_hardware(repo_id, SpaceHardware(hardware))
    except UserError as error:
        raise UserError(f"{error}; {hardware_hint(repo_id)}") from None
    return str(getattr(runtime, "requested_hardware", None) or getattr(runtime, "hardware", None) or hardware)


def deploy_space(
    repo_id: str,
    out_dir: str | Path,
    *,
    dry_run: bool = False,
    upload: Callable[[Path, str], str] | None = None,
    hardware: str | None = None,
    api: Any = None,
) -> tuple[list[Path], str | None]:
    """Assemble the folder; unless `dry_run`, upload it and, with `hardware`, request that hardware
    for the Space. The files and the commit URL (None when dry)."""
    files = assemble_space(out_dir, repo_id)
    if dry_run:
        return files, None
    uploader = upload or (lambda folder, repo: upload_space(folder, repo))
    url = uploader(Path(out_dir), repo_id)
    if hardware is not None:
        request_hardware(repo_id, hardware, api)
    return files, url
