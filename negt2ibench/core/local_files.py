"""Whether a model's files (and the libraries that load it) are on this machine, looked up on disk
before any network call or heavy import.

Commands read model weights from local files only: a local folder, the Hugging Face cache,
rfdetr's RF_HOME, torch's TORCH_HOME. Nothing is downloaded unless the user asks for it
(`negt2ibench download-models`, or `--download` where a command offers it), so a machine without
the weights answers at once with one line naming the command that gets them, instead of minutes
of the libraries' network retries. These look-ups import no model library and no torch: a
command can make them before its heavy imports.
"""

from __future__ import annotations

import os
from pathlib import Path

# What a from_pretrained folder holds its weights in (transformers, diffusers; any subfolder).
WEIGHT_FILES = ("*.safetensors", "*.bin")


def cached_snapshot(repo_id: str, *, cache_dir: str | Path | None = None, revision: str | None = None) -> Path | None:
    """The snapshot folder of REPO_ID in the Hugging Face cache (CACHE_DIR, else HF_HUB_CACHE), or None.

    Read from the cache's refs and snapshot folders only: no request is made, online or not."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        found = snapshot_download(
            repo_id,
            cache_dir=str(cache_dir) if cache_dir is not None else None,
            revision=revision,
            local_files_only=True,
        )
    except (LocalEntryNotFoundError, OSError, ValueError):  # not cached, or not a repo id at all
        return None
    return Path(found)


def local_model(
    model_id: str | Path,
    *,
    cache_dir: str | Path | None = None,
    revision: str | None = None,
    config_file: str = "config.json",
) -> Path | None:
    """The folder a `from_pretrained(model_id)` would read offline, when it holds CONFIG_FILE and weights.

    MODEL_ID is a local folder (used as it is) or a Hub repo id (its cached snapshot). None: the
    model is not on this machine, or only part of it is (an interrupted download)."""
    if Path(model_id).is_dir():
        folder: Path | None = Path(model_id)
    else:
        folder = cached_snapshot(str(model_id), cache_dir=cache_dir, revision=revision)
    if folder is None or not (folder / config_file).is_file():
        return None
    if not any(next(folder.rglob(pattern), None) is not None for pattern in WEIGHT_FILES):
        return None
    return folder


def rfdetr_home() -> Path:
    """rfdetr's weights folder, as `rfdetr.assets.model_weights.get_model_cache_dir` reads it
    (RF_HOME, then ROBOFLOW_HOME, else ~/.roboflow/models; an empty value is unset), without importing rfdetr."""
    for name in ("RF_HOME", "ROBOFLOW_HOME"):
        if os.environ.get(name):
            return Path(os.path.normpath(os.path.expanduser(os.environ[name])))
    return Path(os.path.normpath(os.path.expanduser("~/.roboflow/models")))


def torch_home() -> Path:
    """torch's home, as `torch.hub` reads it (TORCH_HOME, else $XDG_CACHE_HOME/torch, else
    ~/.cache/torch), without importing torch; torch.hub keeps downloaded checkpoints in `hub/checkpoints/`."""
    default = os.path.join(os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache")), "torch")
    return Path(os.path.expanduser(os.getenv("TORCH_HOME", default)))


def require_modules(*names: str) -> None:
    """`ModuleNotFoundError` (the CLI answers it with the extra to install) for the first of NAMES that
    is not installed, found without importing it: the libraries a command needs are looked for before
    its weights, so a machine missing both hears first about what to install."""
    import importlib.util
    import sys

    for name in names:
        if name in sys.modules:
            if sys.modules[name] is None:  # an import of it failed (or was blocked) in this process
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            continue
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
