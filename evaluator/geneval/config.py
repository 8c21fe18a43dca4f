"""Every constant of GenEval's scorer in one frozen object, with its hash and its presets.

The rule constants and their defaults are GenEval's (djghosh13/geneval@af4902f,
evaluation/evaluate_images.py:84, 101 and 286-290), and `with_options` takes GenEval's own
`--options KEY=VALUE` names. The perception fields say which models see the image: preset
`geneval` is Mask2Former Swin-S COCO instance through transformers (the model family GenEval's
thresholds were tuned for, not its mmdet checkpoint), `geneval_rfdetr` this project's RF-DETR Seg
XL with its own masks, `geneval_rfdetr_sam` the same with SAM 2.1 masks. `config_hash` covers
every field that can change a verdict (all but the name).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from negt2ibench.core.errors import UsageError
from negt2ibench.core.registry import Registry

GENEVAL_VERSION = "geneval-1.0.0"  # the `evaluator_version` of GenEval result lines written here

# evaluate_images.py:76: the ten colours, in the order GenEval lists them in its reasons.
COLORS: tuple[str, ...] = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")
# evaluate_images.py:114-116: the three templates of the colour classifier ({c}: a colour).
COLOR_TEMPLATES: tuple[str, ...] = (
    "a photo of a {c} {classname}",
    "a photo of a {c}-colored {classname}",
    "a photo of a {c} object",
)
MASK2FORMER = "mask2former"
RFDETR_SEG_XL = "RFDETRSegXLarge"
DETECTORS = (MASK2FORMER, RFDETR_SEG_XL)
NOT_HASHED: dict[str, Any] = {"hash": False}


@dataclass(frozen=True)
class GenEvalConfig:
    """GenEval's constants (rules) and the models that feed them (perception).

    Rules (evaluate_images.py): a detection counts when its float32 score is strictly above
    `threshold` (`counting_threshold` for the counting task); at most `max_objects` per class, most
    confident first; overlap suppression only when `max_overlap` is below 1; the position rule's
    dead zone is `position_threshold`·(size_A + size_B) per axis. Colour crops: the image
    composited on `bgcolor` through the mask (`"original"`: no compositing), cut to the box when
    `crop`.

    Perception: `detector` is `mask2former` (`detector_model_id`, a Hub id or a folder, resized
    keep-ratio to fit `detector_long_edge`×`detector_short_edge` and padded to a multiple of 32, as
    GenEval's mmdet test pipeline) or `RFDETRSegXLarge` (`detector_weights`, square input of
    `detector_resolution` px; SAM 2.1 masks when `use_sam`). Colours: CLIP `clip_model_id`.
    """

    name: str = field(default="geneval", metadata=NOT_HASHED)
    threshold: float = 0.3
    counting_threshold: float = 0.9
    max_objects: int = 16
    max_overlap: float = 1.0
    position_threshold: float = 0.1
    bgcolor: str = "#999"
    crop: bool = True
    colors: tuple[str, ...] = COLORS
    color_templates: tuple[str, ...] = COLOR_TEMPLATES
    detector: str = MASK2FORMER
    detector_model_id: str = "facebook/mask2former-swin-small-coco-instance"
    detector_short_edge: int = 800
    detector_long_edge: int = 1333
    detector_max_per_image: int = 100  # mmdet's test_cfg.max_per_image: the (query, class) pairs kept
    detector_weights: str = "rf-detr-seg-xlarge.pt"
    detector_resolution: int = 624
    use_sam: bool = False
    sam_model_id: str = "facebook/sam2.1-hiera-small"
    clip_model_id: str = "openai/clip-vit-large-patch14"

    def __post_init__(self) -> None:
        for name in ("threshold", "counting_threshold", "max_overlap", "position_threshold"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise UsageError(f"GenEval option {name} must be a finite number, got {value!r}")
        if self.position_threshold < 0 or self.max_overlap <= 0:
            raise UsageError("GenEval options position_threshold must be ≥ 0 and max_overlap > 0")
        if not isinstance(self.max_objects, int) or isinstance(self.max_objects, bool) or self.max_objects < 0:
            raise UsageError(f"GenEval option max_objects must be an integer ≥ 0, got {self.max_objects!r}")
        if self.detector not in DETECTORS:
            raise UsageError(f"unknown GenEval detector {self.detector!r}; choose one of {', '.join(DETECTORS)}")
        if self.bgcolor != "original":
            from PIL import ImageColor

            try:
                ImageColor.getrgb(self.bgcolor)
            except ValueError:
                message = f"GenEval option bgcolor must be a colour or 'original', got {self.bgcolor!r}"
                raise UsageError(message) from None

    def replace(self, **changes: Any) -> GenEvalConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def config_hash(self) -> str:
        """A stable short hash of every field but the name."""
        hashed = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata.get("hash", True)}
        blob = json.dumps(hashed, sort_keys=True, separators=(",", ":"), default=list)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def detector_label(self) -> str:
        """What detected the objects, as every shown number says (neither is GenEval's mmdet checkpoint)."""
        if self.detector == MASK2FORMER:
            return f"Mask2Former ({self.detector_model_id}, transformers)"
        return f"RF-DETR Seg XL{' + SAM 2.1' if self.use_sam else ''}"

    def with_options(self, options: Mapping[str, str]) -> GenEvalConfig:
        """This config with GenEval's `--options KEY=VALUE` applied (evaluate_images.py:35-37, 62-66,
        84, 101, 286-290): `threshold`, `counting_threshold`, `max_objects`, `max_overlap`,
        `position_threshold`, `bgcolor`, `crop` (`1` or `0`), `model` (the detector: a Hub id or
        folder for Mask2Former, a weights file for RF-DETR) and `clip_model` (a Hub id or folder of a
        transformers CLIP model; GenEval's names an open_clip architecture)."""
        changes: dict[str, Any] = {}
        for key, text in options.items():
            if key not in OPTION_PARSERS:
                raise UsageError(f"unknown GenEval option {key!r}; known: {', '.join(OPTION_PARSERS)}")
            field_name, parse = OPTION_PARSERS[key]
            if key == "model" and self.detector != MASK2FORMER:
                field_name = "detector_weights"
            try:
                changes[field_name] = parse(str(text))
            except ValueError:
                raise UsageError(f"GenEval option {key}={text!r} is not valid") from None
        return self.replace(**changes) if changes else self


def _crop_flag(text: str) -> bool:
    # evaluate_images.py:101 crops only when the option is exactly "1"
    return text == "1"


OPTION_PARSERS: dict[str, tuple[str, Any]] = {
    "threshold": ("threshold", float),
    "counting_threshold": ("counting_threshold", float),
    "max_objects": ("max_objects", int),
    "max_overlap": ("max_overlap", float),
    "position_threshold": ("position_threshold", float),
    "bgcolor": ("bgcolor", str),
    "crop": ("crop", _crop_flag),
    "model": ("detector_model_id", str),
    "clip_model": ("clip_model_id", str),
}


def parse_options(pairs: list[str] | None) -> dict[str, str]:
    """`KEY=VALUE` strings as GenEval splits them (evaluate_images.py:37: at the first `=`)."""
    options = {}
    for pair in pairs or []:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise UsageError(f"--options takes KEY=VALUE pairs, got {pair!r}")
        options[key] = value
    return options


GENEVAL = GenEvalConfig()
PRESETS: Registry[GenEvalConfig] = Registry(
    "GenEval preset",
    {
        "geneval": GENEVAL,
        "geneval_rfdetr": GENEVAL.replace(name="geneval_rfdetr", detector=RFDETR_SEG_XL),
        "geneval_rfdetr_sam": GENEVAL.replace(name="geneval_rfdetr_sam", detector=RFDETR_SEG_XL, use_sam=True),
    },
    kind=GenEvalConfig,
    exit_code=2,
)
PRESET_HELP: dict[str, str] = {
    "geneval": "Mask2Former Swin-S COCO instance (transformers) + CLIP ViT-L/14: GenEval's model family",
    "geneval_rfdetr": "RF-DETR Seg XL with its own masks + CLIP ViT-L/14",
    "geneval_rfdetr_sam": "RF-DETR Seg XL + SAM 2.1 masks + CLIP ViT-L/14",
}
NOT_GENEVAL_CHECKPOINT = (
    "not GenEval's mmdet checkpoint: detections (and so scores) differ from published GenEval numbers"
)
