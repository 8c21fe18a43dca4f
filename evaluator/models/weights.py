"""The weight files a preset's models read: listed from its config, fetched, and checked offline.

`negt2ibench download-models` is a shell over this module. `preset_models(config)` names each model
a preset uses (the detector, SAM 2.1 when the preset refines masks, SigLIP 2, Depth-Anything V2)
with where its weights come from: a Hugging Face repo (only the files transformers reads: the
JSON configs and the safetensors weights, not e.g. SAM 2.1's original `.pt`), rfdetr's own
storage, or torch.hub. `download` fetches them with their sizes shown; `check` loads each one offline, so
a machine without internet knows before a run which model is missing or broken.

Each source is a `kind` with its entry in `SOURCES` (a `negt2ibench.core.registry.Registry`): how
to download it, whether its files are on this machine (a look at the disk, `require_weights`: what
every command and the API do before loading anything, so a machine without the weights answers at
once with the `download-models` command to run, never after network retries), and how to check it
loads offline. Where the files lie is `evaluator.models.weight_files`'s. The Mask R-CNN presets
(c1–c4) fetch torchvision's COCO weights into TORCH_HOME. A GenEval preset lists its detector
(Mask2Former from the Hub, or RF-DETR, with SAM 2.1 when it uses it) and CLIP.
"""

from __future__ import annotations

import gc
import os
import re
import socket
import urllib.error
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evaluator.config import MASK_RCNN, EvaluatorConfig
from evaluator.models.weight_files import (
    Preset,
    detector_weights_path,
    how_to_get,
    torchvision_weights,
    torchvision_weights_path,
    weights_layout,
)
from negt2ibench.core.errors import MissingWeightsError, UserError, brief
from negt2ibench.core.local_files import cached_snapshot, local_model
from negt2ibench.core.registry import Registry, import_target

HUB_FILES = ("*.json", "*.safetensors")  # configs, processor/tokenizer files, weights: what from_pretrained reads
Status = Literal["ok", "missing", "broken"]
Echo = Callable[[str], None]


@dataclass(frozen=True)
class ModelWeights:
    """One model of a preset and where its weights come from."""

    role: str  # detector | masks | attributes | depth
    name: str  # what the user reads
    # "hub" (a Hugging Face repo) | "rfdetr" (rfdetr's storage, a file in RF_HOME) | "torchvision" (torch.hub)
    kind: str
    source: str  # the repo id, the weights file name, or the torchvision weights name
    model_class: str = ""  # hub: the class perception loads it with (a class path, `import_target`)
    processor_class: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} ({self.source})"


@dataclass(frozen=True)
class CheckResult:
    """Whether one model loads offline: ok, missing (not on this machine), or broken (there but unloadable)."""

    model: ModelWeights
    status: Status
    detail: str = ""


def detector_weights(config: EvaluatorConfig) -> ModelWeights:
    if config.detector == MASK_RCNN:  # `evaluator.models.maskrcnn.is_maskrcnn`, without importing torch
        return ModelWeights("detector", config.detector_label, "torchvision", config.detector_weights)
    if config.detector.startswith("RFDETR"):
        return ModelWeights("detector", config.detector, "rfdetr", config.detector_weights)
    raise UserError(f"download-models does not know where the weights of detector {config.detector!r} come from")


def geneval_models(config) -> list[ModelWeights]:
    """The models of a GenEval preset: its detector (and SAM 2.1 when it uses it), then CLIP."""
    from evaluator.geneval.config import MASK2FORMER

    if config.detector == MASK2FORMER:
        models = [
            ModelWeights(
                "detector",
                "Mask2Former",
                "hub",
                config.detector_model_id,
                "transformers.Mask2FormerForUniversalSegmentation",
                "transformers.Mask2FormerImageProcessor",
            )
        ]
    else:
        models = [ModelWeights("detector", config.detector, "rfdetr", config.detector_weights)]
        if config.use_sam:
            models.append(_sam(config))
    clip = ("transformers.CLIPModel", "transformers.CLIPProcessor")
    models.append(ModelWeights("colors", "CLIP ViT-L/14", "hub", config.clip_model_id, *clip))
    return models


def _sam(config) -> ModelWeights:
    return ModelWeights(
        "masks", "SAM 2.1", "hub", config.sam_model_id, "transformers.Sam2Model", "transformers.Sam2Processor"
    )


def preset_models(config) -> list[ModelWeights]:
    """The models CONFIG (an `EvaluatorConfig` or a GenEval preset's config) uses, in the order
    perception loads them."""
    if not isinstance(config, EvaluatorConfig):
        return geneval_models(config)
    models = [detector_weights(config)]
    if config.use_sam:
        models.append(_sam(config))
    models.append(
        ModelWeights(
            "attributes",
            "SigLIP 2",
            "hub",
            config.attribute_model_id,
            "transformers.SiglipModel",
            "transformers.AutoProcessor",
        )
    )
    models.append(
        ModelWeights(
            "depth",
            "Depth-Anything V2",
            "hub",
            config.depth_model_id,
            "transformers.DepthAnythingForDepthEstimation",
            "transformers.AutoImageProcessor",
        )
    )
    return models


def format_size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _hub_cache(weights_dir: str | Path | None) -> str | None:
    return str(weights_layout(weights_dir)[0]) if weights_dir is not None else None


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {brief(error)}" if str(error).strip() else type(error).__name__


# -- download ----------------------------------------------------------------------------------

NEEDS_INTERNET = (
    "download-models needs internet access: run it on a machine that has some (with --dir DIR), "
    "then copy DIR here and pass --weights-dir DIR"
)
_NETWORK_ERROR_NAMES = ("Connection", "NameResolution", "Offline", "ConnectError", "NetworkError", "Timeout")


def _network_failure(error: BaseException) -> bool:
    """Whether ERROR (or what it was raised from) is a failure to reach the network: DNS, refused or
    timed-out connections, offline mode, whatever the library (requests, httpx, urllib, huggingface_hub)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, (ConnectionError, TimeoutError, socket.gaierror, urllib.error.URLError)):
            return True
        if any(part in type(seen).__name__ for part in _NETWORK_ERROR_NAMES):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _download_error(what: str, error: BaseException) -> UserError:
    """One line for a failed download: no internet said as such (never a library's sentence cut short)."""
    if _network_failure(error):
        host = re.search(r"host='([^']+)'|https?://([^/\s'\"]+)", str(error))
        where = next(name for name in host.groups() if name) if host else "the internet"
        return UserError(f"could not download {what}: no connection to {where}. {NEEDS_INTERNET}")
    return UserError(f"could not download {what}: {_one_line(error)}")


def _require_online() -> None:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise UserError(f"HF_HUB_OFFLINE is set, so nothing can be downloaded. Unset it; {NEEDS_INTERNET}")


def download_hub(model: ModelWeights, config: Preset, weights_dir: str | Path | None, echo: Echo) -> Path:
    """Fetch the repo's config and safetensors files into the (given) Hugging Face cache."""
    from huggingface_hub import snapshot_download

    cache = _hub_cache(weights_dir)
    try:
        planned = snapshot_download(model.source, cache_dir=cache, allow_patterns=list(HUB_FILES), dry_run=True)
        total = sum(item.file_size or 0 for item in planned)
        to_fetch = sum(item.file_size or 0 for item in planned if item.will_download)
        echo(f"{model.label}: {len(planned)} files, {format_size(total)} ({format_size(to_fetch)} to download)")
        path = snapshot_download(model.source, cache_dir=cache, allow_patterns=list(HUB_FILES))
    except Exception as error:  # noqa: BLE001 - network, auth and offline errors alike: one line
        raise _download_error(model.source, error) from None
    return Path(path)


def _remote_size(url: str) -> int | None:
    import requests

    try:
        response = requests.head(url, allow_redirects=True, timeout=15)
        return int(response.headers["content-length"]) if response.ok else None
    except (requests.RequestException, KeyError, ValueError):
        return None


def download_rfdetr(model: ModelWeights, config: Preset, weights_dir: str | Path | None, echo: Echo) -> Path:
    """Fetch the RF-DETR weights file from rfdetr's storage (MD5-checked by rfdetr)."""
    from rfdetr.assets.model_weights import ModelWeights as RFWeights
    from rfdetr.assets.model_weights import download_pretrain_weights

    path = detector_weights_path(config, weights_dir)
    asset = RFWeights.from_filename(path.name)
    size = path.stat().st_size if path.is_file() else (_remote_size(asset.url) if asset else None)
    echo(f"{model.label}: {format_size(size)}{' (already here)' if path.is_file() else ''}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        download_pretrain_weights(str(path))
    except Exception as error:  # noqa: BLE001 - requests / OS / MD5 errors: one line
        raise _download_error(path.name, error) from None
    if not path.is_file():
        raise UserError(f"rfdetr did not write {path} (is {path.name} one of its published weights?)")
    return path


def _scorer_preset(config: Preset) -> EvaluatorConfig:
    """The scorer's preset (only its Mask R-CNN presets use torchvision weights)."""
    if not isinstance(config, EvaluatorConfig):
        raise TypeError(f"preset {config.name!r} uses no torchvision weights")
    return config


def download_torchvision(model: ModelWeights, config: Preset, weights_dir: str | Path | None, echo: Echo) -> Path:
    """Fetch torchvision's Mask R-CNN weights into TORCH_HOME (hash-checked by torch.hub)."""
    from evaluator.models.maskrcnn import download_maskrcnn_weights

    config = _scorer_preset(config)
    path = torchvision_weights_path(config, weights_dir)
    size = path.stat().st_size if path.is_file() else _remote_size(torchvision_weights(config).url)
    echo(f"{model.label}: {format_size(size)}{' (already here)' if path.is_file() else ''}")
    try:
        return download_maskrcnn_weights(config, weights_dir)
    except Exception as error:  # noqa: BLE001 - network / hash / OS errors: one line
        raise _download_error(config.detector_weights, error) from None


def download(config: Preset, weights_dir: str | Path | None = None, *, echo: Echo = print) -> list[Path]:
    """Fetch every model of CONFIG (the files its loaders read); where each went."""
    _require_online()
    places = []
    for model in preset_models(config):
        place = SOURCES[model.kind].download(model, config, weights_dir, echo)
        echo(f"  → {place}")
        places.append(place)
    return places


# -- offline check -----------------------------------------------------------------------------


def missing_hub(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> str | None:
    """Why the repo's files (or the local folder's, GenEval's `--options model=DIR`) are not here, or None."""
    cache = _hub_cache(weights_dir)
    if local_model(model.source, cache_dir=cache) is not None:
        return None
    if Path(model.source).is_dir():
        return f"{model.source} holds no config.json or no weights"
    folder = cached_snapshot(model.source, cache_dir=cache)
    if folder is None:
        return f"not in the Hugging Face cache{f' {cache}' if cache else ''}"
    return f"incomplete download in {folder} (no config.json or no weights)"


def check_hub(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> CheckResult:
    """Load the model and its processor from the cache only, with perception's classes."""
    absent = missing_hub(model, config, weights_dir)
    if absent:
        return CheckResult(model, "missing", absent)
    folder = local_model(model.source, cache_dir=_hub_cache(weights_dir))
    assert folder is not None  # missing_hub found it

    def load():
        import torch

        import_target(model.processor_class).from_pretrained(folder, local_files_only=True)
        return import_target(model.model_class).from_pretrained(folder, local_files_only=True, dtype=torch.float32)

    return _loads(model, folder, load)


def _loads(model: ModelWeights, path: Path, load: Callable[[], object]) -> CheckResult:
    """ok when `load()` builds the model (then freed at once), broken with the error's first line."""
    try:
        loaded = load()
    except Exception as error:  # noqa: BLE001 - a broken file raises anything from OSError to a shape mismatch
        return CheckResult(model, "broken", _one_line(error))
    del loaded
    gc.collect()
    return CheckResult(model, "ok", str(path))


def check_rfdetr(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> CheckResult:
    """The file is there, its MD5 is rfdetr's, and it builds the COCO model (no download is attempted)."""
    absent = missing_rfdetr(model, config, weights_dir)
    if absent:
        return CheckResult(model, "missing", absent)
    from rfdetr.assets.model_weights import validate_pretrain_weights

    from evaluator.models.detector import check_coco_checkpoint
    from evaluator.perception import load_rfdetr

    path = detector_weights_path(config, weights_dir)
    if not validate_pretrain_weights(str(path), strict=False):
        return CheckResult(model, "broken", f"{path} does not have rfdetr's MD5 (truncated or another file)")

    def load():
        loaded = load_rfdetr(config, weights_dir)
        check_coco_checkpoint(loaded)
        return loaded

    return _loads(model, path, load)


def check_torchvision(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> CheckResult:
    """The Mask R-CNN weights file is in TORCH_HOME and loads into torchvision's model."""
    scorer = _scorer_preset(config)
    absent = missing_torchvision(model, config, weights_dir)
    if absent:
        return CheckResult(model, "missing", absent)
    from evaluator.models.maskrcnn import load_maskrcnn

    return _loads(model, torchvision_weights_path(scorer, weights_dir), lambda: load_maskrcnn(scorer, weights_dir))


def missing_rfdetr(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> str | None:
    path = detector_weights_path(config, weights_dir)
    return None if path.is_file() else f"{path} does not exist"


def missing_torchvision(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> str | None:
    path = torchvision_weights_path(_scorer_preset(config), weights_dir)
    return None if path.is_file() else f"{path} does not exist"


@dataclass(frozen=True)
class WeightSource:
    """Where one kind of weights comes from: how to fetch it, whether its files are here (a look at the
    disk, no load: None, or why not), and how to check it loads offline."""

    download: Callable[[ModelWeights, Preset, str | Path | None, Echo], Path]
    check: Callable[[ModelWeights, Preset, str | Path | None], CheckResult]
    missing: Callable[[ModelWeights, Preset, str | Path | None], str | None]


SOURCES: Registry[WeightSource] = Registry(
    "weight source",
    {
        "hub": WeightSource(download_hub, check_hub, missing_hub),
        "rfdetr": WeightSource(download_rfdetr, check_rfdetr, missing_rfdetr),
        "torchvision": WeightSource(download_torchvision, check_torchvision, missing_torchvision),
    },
    kind=WeightSource,
)


# -- before loading: are the files here? ------------------------------------------------------


def scorer_roles(config: EvaluatorConfig, categories: Collection[str] = ()) -> set[str]:
    """The roles of the scorer's models that prompts of CATEGORIES need (all, when none are given): the
    detector, SAM 2.1 when the preset refines masks, SigLIP 2 for attributes, Depth-Anything V2 for depth
    (as `ModelPerception.load_all` loads them)."""
    if not categories:
        return {"detector", "masks", "attributes", "depth"}
    roles = {"detector", "masks"}  # masks are in a preset's models only when it uses SAM
    roles |= {"attributes"} if set(categories) & {"color", "material"} else set()
    roles |= {"depth"} if "depth" in categories else set()
    return roles


def missing_weights(
    config: Preset, weights_dir: str | Path | None = None, roles: Collection[str] | None = None
) -> list[tuple[ModelWeights, str]]:
    """The models of CONFIG (those of ROLES, when given) whose files are not on this machine, with why.

    A look at the disk: no model is loaded, nothing is downloaded, and neither torch nor a model
    library is imported."""
    models = [model for model in preset_models(config) if roles is None or model.role in roles]
    found = [(model, SOURCES[model.kind].missing(model, config, weights_dir)) for model in models]
    return [(model, why) for model, why in found if why]


def require_weights(
    config: Preset, weights_dir: str | Path | None = None, roles: Collection[str] | None = None
) -> None:
    """Raise `MissingWeightsError` (one line naming the `download-models` command) when a model of
    CONFIG is not on this machine; what every command and `Evaluator` do before loading anything."""
    missing = missing_weights(config, weights_dir, roles)
    if not missing:
        return
    names = [model.name for model, _ in missing]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    detail = missing[0][1] if len(missing) == 1 else ""
    raise MissingWeightsError(listed, detail, how_to_get=how_to_get(config, weights_dir))


def check(config: Preset, weights_dir: str | Path | None = None) -> list[CheckResult]:
    """Load every model of CONFIG offline, one at a time; one result per model."""
    return [SOURCES[model.kind].check(model, config, weights_dir) for model in preset_models(config)]


def check_exit_code(results: Sequence[CheckResult]) -> int:
    """0 when every model loads; 2 when one is missing (download it); else 1 when one is broken."""
    if any(result.status == "missing" for result in results):
        return 2
    return 1 if any(result.status == "broken" for result in results) else 0


def check_lines(results: Sequence[CheckResult]) -> list[str]:
    """One line per model, then what to do."""
    width = max(len(result.model.label) for result in results)
    lines = [f"{result.status:<8}{result.model.label:<{width}}  {result.detail}".rstrip() for result in results]
    code = check_exit_code(results)
    if code == 2:
        lines.append(
            "some weights are missing: run `negt2ibench download-models` with internet access (same --preset and --dir)"
        )
    elif code == 1:
        lines.append(
            "some weights are broken: delete the files named above and run `negt2ibench download-models` again"
        )
    else:
        lines.append("every model loads offline")
    return lines
