"""The weight files a preset's models read: listed from its config, fetched, and checked offline.

`negt2ibench download-models` is a shell over this module. `preset_models(config)` names each model
a preset uses (the detector, SAM 2.1 when the preset refines masks, SigLIP 2, Depth-Anything V2)
with where its weights come from: a Hugging Face repo (only the files transformers reads: the
JSON configs and the safetensors weights, not e.g. SAM 2.1's original `.pt`), rfdetr's own
storage, or torch.hub. `download` fetches them with their sizes shown; `check` loads each one offline, so
a machine without internet knows before a run which model is missing or broken.

Each source is a `kind` with its entry in `SOURCES` (a `negt2ibench.core.registry.Registry`): how
to download it and how to check it offline. The Mask R-CNN presets (c1–c4) fetch torchvision's
COCO weights into TORCH_HOME instead of RF-DETR's. A GenEval preset (`evaluator.geneval.config`)
lists its detector (Mask2Former from the Hub, or RF-DETR, with SAM 2.1 when it uses it) and CLIP.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evaluator.config import EvaluatorConfig
from evaluator.geneval.config import GenEvalConfig
from negt2ibench.core.errors import UserError
from negt2ibench.core.registry import Registry, import_target

Preset = EvaluatorConfig | GenEvalConfig  # the scorer's presets and GenEval's (`download-models --preset`)

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
    from evaluator.models.maskrcnn import is_maskrcnn

    if is_maskrcnn(config):
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
    from evaluator.perception import weights_layout

    return str(weights_layout(weights_dir)[0]) if weights_dir is not None else None


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:200]}" if text else type(error).__name__


# -- download ----------------------------------------------------------------------------------


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
        raise UserError(f"could not download {model.source}: {_one_line(error)}") from None
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

    from evaluator.perception import detector_weights_path

    path = detector_weights_path(config, weights_dir)
    asset = RFWeights.from_filename(path.name)
    size = path.stat().st_size if path.is_file() else (_remote_size(asset.url) if asset else None)
    echo(f"{model.label}: {format_size(size)}{' (already here)' if path.is_file() else ''}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        download_pretrain_weights(str(path))
    except Exception as error:  # noqa: BLE001 - requests / OS / MD5 errors: one line
        raise UserError(f"could not download {path.name}: {_one_line(error)}") from None
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
    from evaluator.models.maskrcnn import download_maskrcnn_weights, maskrcnn_weights, maskrcnn_weights_path

    config = _scorer_preset(config)
    path = maskrcnn_weights_path(config, weights_dir)
    size = path.stat().st_size if path.is_file() else _remote_size(maskrcnn_weights(config).url)
    echo(f"{model.label}: {format_size(size)}{' (already here)' if path.is_file() else ''}")
    try:
        return download_maskrcnn_weights(config, weights_dir)
    except Exception as error:  # noqa: BLE001 - network / hash / OS errors: one line
        raise UserError(f"could not download {config.detector_weights}: {_one_line(error)}") from None


def download(config: Preset, weights_dir: str | Path | None = None, *, echo: Echo = print) -> list[Path]:
    """Fetch every model of CONFIG (the files its loaders read); where each went."""
    places = []
    for model in preset_models(config):
        place = SOURCES[model.kind].download(model, config, weights_dir, echo)
        echo(f"  → {place}")
        places.append(place)
    return places


# -- offline check -----------------------------------------------------------------------------


def check_hub(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> CheckResult:
    """Load the model and its processor from the cache only, with perception's classes."""
    import torch
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(
            snapshot_download(
                model.source, cache_dir=_hub_cache(weights_dir), allow_patterns=list(HUB_FILES), local_files_only=True
            )
        )
    except (LocalEntryNotFoundError, OSError):
        return CheckResult(model, "missing", "not in the Hugging Face cache")
    absent = [name for name in ("config.json",) if not (folder / name).is_file()]
    if absent or not any(folder.glob("*.safetensors")):
        return CheckResult(model, "missing", f"incomplete download in {folder} (no {', '.join(absent) or 'weights'})")

    def load():
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
    from rfdetr.assets.model_weights import validate_pretrain_weights

    from evaluator.models.detector import check_coco_checkpoint
    from evaluator.perception import detector_weights_path, load_rfdetr

    path = detector_weights_path(config, weights_dir)
    if not path.is_file():
        return CheckResult(model, "missing", f"{path} does not exist")
    if not validate_pretrain_weights(str(path), strict=False):
        return CheckResult(model, "broken", f"{path} does not have rfdetr's MD5 (truncated or another file)")

    def load():
        loaded = load_rfdetr(config, weights_dir)
        check_coco_checkpoint(loaded)
        return loaded

    return _loads(model, path, load)


def check_torchvision(model: ModelWeights, config: Preset, weights_dir: str | Path | None) -> CheckResult:
    """The Mask R-CNN weights file is in TORCH_HOME and loads into torchvision's model."""
    from evaluator.models.maskrcnn import load_maskrcnn, maskrcnn_weights_path

    scorer = _scorer_preset(config)
    path = maskrcnn_weights_path(scorer, weights_dir)
    if not path.is_file():
        return CheckResult(model, "missing", f"{path} does not exist")
    return _loads(model, path, lambda: load_maskrcnn(scorer, weights_dir))


@dataclass(frozen=True)
class WeightSource:
    """Where one kind of weights comes from: how to fetch it, and how to check it offline."""

    download: Callable[[ModelWeights, Preset, str | Path | None, Echo], Path]
    check: Callable[[ModelWeights, Preset, str | Path | None], CheckResult]


SOURCES: Registry[WeightSource] = Registry(
    "weight source",
    {
        "hub": WeightSource(download_hub, check_hub),
        "rfdetr": WeightSource(download_rfdetr, check_rfdetr),
        "torchvision": WeightSource(download_torchvision, check_torchvision),
    },
    kind=WeightSource,
)


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
