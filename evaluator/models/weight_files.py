"""Where each model's weights live on this machine, and what to run when they are not there.

Paths and advice only: no model library is imported (torchvision only for a Mask R-CNN weights
name not listed in `TORCHVISION_FILES`), so the loaders (`evaluator.perception`,
`evaluator.models.maskrcnn`), `download-models` and the disk look before every run
(`evaluator.models.weights.require_weights`) all read the same places and give the same advice.
"""

from __future__ import annotations

from pathlib import Path

from evaluator.config import MASK_RCNN, EvaluatorConfig
from evaluator.geneval.config import GenEvalConfig
from negt2ibench.core.errors import UserError
from negt2ibench.core.local_files import rfdetr_home, torch_home

Preset = EvaluatorConfig | GenEvalConfig  # the scorer's presets and GenEval's (`download-models --preset`)


def torchvision_weights(config: EvaluatorConfig):
    """The torchvision weights enum member `config.detector_weights` names (e.g. `...Weights.COCO_V1`)."""
    from torchvision.models import detection

    enum_name, _, member = config.detector_weights.partition(".")
    try:
        return getattr(detection, enum_name)[member]
    except (AttributeError, KeyError):
        raise UserError(
            f"{config.detector_weights!r} is not a torchvision detection weights name "
            "(e.g. MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1)"
        ) from None


# torchvision's COCO weights by their enum name → the file torch.hub saves (the last part of the weights'
# URL), so a missing file is found without importing torchvision; tests/evaluator/models/test_weights.py
# checks it against torchvision. Another name falls back to torchvision's own URL.
TORCHVISION_FILES = {"MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1": "maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth"}


def weights_layout(weights_dir: str | Path) -> tuple[Path, Path]:
    """Where `download-models --dir DIR` puts weights: (HF hub cache, RF-DETR home)."""
    root = Path(weights_dir)
    return root / "hub", root / "rfdetr"


def detector_weights_path(config: EvaluatorConfig | GenEvalConfig, weights_dir: str | Path | None = None) -> Path:
    """The RF-DETR weights file: `weights_dir/rfdetr/` if given, else `$RF_HOME` (rfdetr's own cache)."""
    if Path(config.detector_weights).is_absolute():
        return Path(config.detector_weights)
    if weights_dir is not None:
        return weights_layout(weights_dir)[1] / config.detector_weights
    return rfdetr_home() / config.detector_weights


def torchvision_weights_path(config: EvaluatorConfig, weights_dir: str | Path | None = None) -> Path:
    """Where torch.hub keeps the Mask R-CNN weights file: `TORCH_HOME/hub/checkpoints/` (`WEIGHTS_DIR/torch/...`)."""
    name = TORCHVISION_FILES.get(config.detector_weights) or Path(torchvision_weights(config).url).name
    home = Path(weights_dir) / "torch" if weights_dir is not None else torch_home()
    return home / "hub" / "checkpoints" / name


def download_command(config: Preset, weights_dir: str | Path | None = None) -> str:
    """The `download-models` command that fetches CONFIG's weights (into WEIGHTS_DIR when given)."""
    preset = f" --preset {config.name}" if config.name != "current" else ""
    folder = f" --dir {weights_dir}" if weights_dir is not None else ""
    return f"negt2ibench download-models{preset}{folder}"


def cache_variables(config: Preset) -> str:
    """The environment variables `download-models` prints for CONFIG's weights (its --dir's folders)."""
    detector = getattr(config, "detector", "")
    if detector == MASK_RCNN:
        return "TORCH_HOME / HF_HUB_CACHE"
    return "HF_HUB_CACHE / RF_HOME" if detector.startswith("RFDETR") else "HF_HUB_CACHE"


def how_to_get(config: Preset, weights_dir: str | Path | None = None) -> str:
    """What a missing-weights message tells the user to do (with --weights-dir DIR given: fill DIR)."""
    command = download_command(config, weights_dir)
    if weights_dir is None:
        return (
            f"Run `{command}` with internet access (run elsewhere, it prints the {cache_variables(config)} lines "
            f"to set here), or pass --weights-dir DIR (a folder `download-models --dir DIR` filled)."
        )
    return f"Run `{command}` with internet access to fill it (or copy a folder it filled there)."
