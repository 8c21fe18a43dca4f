"""Every constant of the scorer (paper Tables 14, 15 and 16) in one frozen object, with presets.

`PRESETS["current"]` is Table 15, the configuration used for the benchmark's numbers (the paper's
C6). `c1` … `c8` are Table 17's ablation: detector RF-DETR-XL (C5–C8) or Mask R-CNN (C1–C4),
SAM 2.1 masks (C1, C2, C5, C6) or the detector's own, previous relation constants (Table 16; odd)
or current ones (even). `previous` is C5 (SAM + Table 16's relation rules) and `no_sam` is C8.

`config_hash` covers exactly the fields that can change a verdict (docs/scoring.md#presets).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from negt2ibench.core.errors import UsageError

# 1.1.0: an empty SAM / detector mask no longer falls back to the box: the object is present
# but unmeasurable (no relation predicate for its pairs; attributes from its box crop).
EVALUATOR_VERSION = "1.1.0"

# Field metadata. NOT_HASHED: the field cannot change a verdict, so `config_hash` leaves it out.
# RULES: only the rules read the field (perception does not), so presets that differ only in such
# fields see the same thing in an image (`perception_key`, used by `negt2ibench ablate`).
NOT_HASHED: dict[str, Any] = {"hash": False}
RULES: dict[str, Any] = {"stage": "rules"}

# Fields of evaluator 1.0.0 that never changed a verdict: `sam_input_size`, `attribute_input_size`
# and `depth_input_size` restated the checkpoints' own input sizes and `overlap_suppression_iou`
# stated that there is none; they are gone. `counting_threshold` stays but is not hashed. Their
# 1.0.0 values stay in every hash's payload (the same for every config, so they never tell two
# configs apart); the hashes moved in 1.1.0 only because `attribute_dtype` joined them.
_RETIRED_HASH_PAYLOAD: dict[str, Any] = {
    "counting_threshold": 0.5,
    "overlap_suppression_iou": 1.0,
    "sam_input_size": 1024,
    "attribute_input_size": 384,
    "depth_input_size": 518,
}

# The detectors a config can name (`detector`), with their labels in Table 17.
RFDETR_SEG_XL = "RFDETRSegXLarge"
MASK_RCNN = "maskrcnn_resnet50_fpn_v2"
DETECTOR_LABELS: dict[str, str] = {RFDETR_SEG_XL: "RF-DETR-XL", MASK_RCNN: "Mask R-CNN"}


@dataclass(frozen=True)
class EvaluatorConfig:
    """Constants of detection, masks, attributes and relation rules.

    Gaps ("within N px") are measured as in `evaluator.geometry`: the gap of a pixel to a mask is
    its centre distance to the nearest mask pixel minus 1, and 0 when it is inside the mask or
    8-adjacent to it (touching); the gap g between two masks is the smallest such gap.

    Detection: `detector` is an rfdetr class name (`RFDETRSegXLarge`, weights file
    `detector_weights`, square input of `detector_resolution` px) or `maskrcnn_resnet50_fpn_v2`
    (torchvision's COCO Mask R-CNN, `detector_weights` the torchvision weights enum member,
    shorter side resized to `detector_resolution`, longer side at most 1333 px). Either way no
    overlap suppression is added (RF-DETR has none; Mask R-CNN keeps its own per-class NMS).
    `counting_threshold` (Table 15) only fills the informational count of detections at or above
    it (`ObjectObservation.count`); no rule and no record field reads it, so it is not hashed.

    Depth rules:
    - ``"facing_surface"`` (current, Table 14): each object's facing surface is its pixels
      within ``g + depth_band_px`` of the other mask (g = mask-to-mask gap). A relation is
      emitted only if ``|mean δA − mean δB| / (δmax − δmin) ≥ depth_base + depth_gap_slope·g/R``,
      the range taken over the whole disparity map; the larger mean disparity is in front.
    - ``"contact_band"`` (previous, Table 16): each object's band is its pixels within
      ``depth_band_px`` (12 px) of the other mask, with no widening by the gap. A relation is
      emitted only when both bands are non-empty (the objects are at most 12 px apart, i.e.
      in contact) and ``|mean δA − mean δB| / (δmax − δmin) ≥ depth_base`` (no g/R term);
      the larger mean disparity is in front. Objects farther apart than the band get no
      depth predicate.
    """

    name: str = field(default="current", metadata=NOT_HASHED)

    # Detection (Table 15)
    detector: str = RFDETR_SEG_XL
    detector_weights: str = "rf-detr-seg-xlarge.pt"
    detector_resolution: int = 624
    presence_threshold: float = 0.03
    counting_threshold: float = field(default=0.5, metadata=NOT_HASHED)
    per_class_cap: int = 16

    # Masks
    use_sam: bool = True
    sam_model_id: str = "facebook/sam2.1-hiera-small"

    # Attributes: SigLIP 2 scores in 100 × cosine units
    attribute_model_id: str = "google/siglip2-so400m-patch14-384"
    attribute_background_gray: int = 153  # #999, as GenEval's crops
    # float32 on every device: β = 0.5 is 0.005 in cosine, within bf16 rounding. "bfloat16" trades that for speed.
    attribute_dtype: Literal["float32", "bfloat16"] = "float32"
    color_margin: float = field(default=0.5, metadata=RULES)  # β for color
    material_margin: float = field(default=0.0, metadata=RULES)  # β for material: top value only
    # GenEval's colour templates; material phrased as an adjective, the way prompts say it.
    color_templates: tuple[str, ...] = (
        "a photo of a {value} {object}",
        "a photo of a {value}-colored {object}",
        "a photo of a {value} object",
    )
    material_templates: tuple[str, ...] = (
        "a photo of a {value} {object}",
        "a photo of a {object} made of {noun}",  # noun: MATERIAL_NOUNS
        "a photo of a {value} object",
    )

    # Depth model
    depth_model_id: str = "depth-anything/Depth-Anything-V2-Large-hf"

    # Directional (Table 14 / 16)
    directional_shrink: float = field(default=0.075, metadata=RULES)  # τ_dir, fraction of summed extents
    directional_axis_threshold: float = field(default=0.45, metadata=RULES)  # α_dir

    # Proximity
    proximity_gap_factor: float = field(default=0.75, metadata=RULES)  # γ_prox

    # Comparative
    size_ratio: float = field(default=1.05, metadata=RULES)  # ρ_size

    # Depth
    depth_rule: Literal["facing_surface", "contact_band"] = field(default="facing_surface", metadata=RULES)
    depth_band_px: int = field(default=16, metadata=RULES)
    depth_base: float = field(default=0.05, metadata=RULES)
    depth_gap_slope: float = field(default=0.10, metadata=RULES)

    def replace(self, **changes) -> EvaluatorConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def config_hash(self) -> str:
        """A stable short hash of every field that can change a verdict (`hashed_fields`)."""
        values = self.to_dict()
        payload = _RETIRED_HASH_PAYLOAD | {name: values[name] for name in hashed_fields()}
        return _short_hash(payload)

    @property
    def perception_key(self) -> str:
        """A short hash of what perception reads (every hashed field but the rules' constants):
        configs with the same key see the same detections, masks, attribute scores and disparity."""
        values = self.to_dict()
        return _short_hash({name: values[name] for name in hashed_fields() if name not in rule_fields()})

    @property
    def detector_label(self) -> str:
        """The detector's name in the paper's Table 17 (`RF-DETR-XL`, `Mask R-CNN`)."""
        return DETECTOR_LABELS.get(self.detector, self.detector)

    @property
    def constants_label(self) -> str:
        """`Current` (Table 15's relation constants), `Previous` (Table 16's) or `custom`."""
        rules = {name: getattr(self, name) for name in rule_fields()}
        for label, reference in (("Current", CURRENT), ("Previous", PRESETS["previous"])):
            if rules == {name: getattr(reference, name) for name in rule_fields()}:
                return label
        return "custom"


def hashed_fields() -> tuple[str, ...]:
    """The fields `config_hash` covers: all but those marked NOT_HASHED (`name`, `counting_threshold`)."""
    return tuple(f.name for f in dataclasses.fields(EvaluatorConfig) if f.metadata.get("hash", True))


def rule_fields() -> tuple[str, ...]:
    """The fields only the rules read (attribute margins and relation constants)."""
    return tuple(f.name for f in dataclasses.fields(EvaluatorConfig) if f.metadata.get("stage") == "rules")


def _short_hash(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=list)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


CURRENT = EvaluatorConfig()

# Table 16: the previous relation rules (attribute scoring unchanged).
PREVIOUS_CONSTANTS: dict[str, Any] = {
    "directional_shrink": 0.10,
    "directional_axis_threshold": 0.50,
    "proximity_gap_factor": 0.50,
    "size_ratio": 1.15,
    "depth_rule": "contact_band",
    "depth_band_px": 12,
}
# Table 17's Mask R-CNN: torchvision's COCO `maskrcnn_resnet50_fpn_v2` at its default input size.
MASK_RCNN_DETECTOR: dict[str, Any] = {
    "detector": MASK_RCNN,
    "detector_weights": "MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1",
    "detector_resolution": 800,
}


def table17_config(number: int, name: str | None = None) -> EvaluatorConfig:
    """Table 17's configuration C`number` (1–8): Mask R-CNN for 1–4, RF-DETR-XL for 5–8; SAM 2.1 for
    1, 2, 5, 6; previous relation constants for odd numbers, current ones for even."""
    if number not in range(1, 9):
        raise ValueError(f"Table 17 has configurations C1–C8, not C{number}")
    changes: dict[str, Any] = {"name": name or f"c{number}", "use_sam": number in (1, 2, 5, 6)}
    if number <= 4:
        changes |= MASK_RCNN_DETECTOR
    if number % 2:
        changes |= PREVIOUS_CONSTANTS
    return CURRENT.replace(**changes)


PRESETS: dict[str, EvaluatorConfig] = {
    "current": CURRENT,  # = c6
    "previous": table17_config(5, "previous"),  # = c5
    "no_sam": table17_config(8, "no_sam"),  # = c8
    **{f"c{number}": table17_config(number) for number in range(1, 9)},
}
# What each preset is, for `--help` and the docs.
PRESET_HELP: dict[str, str] = {
    "current": "RF-DETR-XL + SAM 2.1, Table 15 (= c6; the benchmark's numbers)",
    "previous": "RF-DETR-XL + SAM 2.1, Table 16 relation rules (= c5)",
    "no_sam": "RF-DETR-XL with its own masks, Table 15 (= c8)",
    **{
        name: f"{config.detector_label}{' + SAM 2.1' if config.use_sam else ', own masks'}, "
        f"{config.constants_label.lower()} constants (Table 17 C{name[1]})"
        for name, config in ((f"c{n}", table17_config(n)) for n in range(1, 9))
    },
}


class UnknownPresetError(UsageError, ValueError):
    """A preset name that is not in `PRESETS` (a usage error, exit 2; also a `ValueError`)."""


def get_preset(name: str) -> EvaluatorConfig:
    """The preset NAME, or `UnknownPresetError` listing the presets."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPresetError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
