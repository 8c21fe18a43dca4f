"""Every constant of the scorer (paper Tables 14, 15 and 16) in one frozen object, with presets.

`PRESETS["current"]` is Table 15, the configuration used for the benchmark's numbers.
`PRESETS["previous"]` swaps in Table 16's relation rules (attribute scoring unchanged).
`PRESETS["no_sam"]` is the C8 ablation: RF-DETR's own masks instead of SAM 2.1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from negt2ibench.errors import UsageError

EVALUATOR_VERSION = "1.0.0"


@dataclass(frozen=True)
class EvaluatorConfig:
    """Constants of detection, masks, attributes and relation rules.

    Gaps ("within N px") are measured as in `evaluator.geometry`: the gap of a pixel to a mask is
    its centre distance to the nearest mask pixel minus 1, and 0 when it is inside the mask or
    8-adjacent to it (touching); the gap g between two masks is the smallest such gap.

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

    name: str = "current"

    # Detection (Table 15)
    detector: str = "RFDETRSegXLarge"
    detector_weights: str = "rf-detr-seg-xlarge.pt"
    detector_resolution: int = 624
    presence_threshold: float = 0.03
    counting_threshold: float = 0.5
    per_class_cap: int = 16
    overlap_suppression_iou: float = 1.0  # 1.0 = disabled

    # Masks
    use_sam: bool = True
    sam_model_id: str = "facebook/sam2.1-hiera-small"
    sam_input_size: int = 1024

    # Attributes: SigLIP 2 scores in 100 × cosine units
    attribute_model_id: str = "google/siglip2-so400m-patch14-384"
    attribute_input_size: int = 384
    attribute_background_gray: int = 153  # #999, as GenEval's crops
    color_margin: float = 0.5  # β for color
    material_margin: float = 0.0  # β for material: top value only
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
    depth_input_size: int = 518

    # Directional (Table 14 / 16)
    directional_shrink: float = 0.075  # τ_dir, fraction of summed extents
    directional_axis_threshold: float = 0.45  # α_dir

    # Proximity
    proximity_gap_factor: float = 0.75  # γ_prox

    # Comparative
    size_ratio: float = 1.05  # ρ_size

    # Depth
    depth_rule: Literal["facing_surface", "contact_band"] = "facing_surface"
    depth_band_px: int = 16
    depth_base: float = 0.05
    depth_gap_slope: float = 0.10

    def replace(self, **changes) -> EvaluatorConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def config_hash(self) -> str:
        """A stable short hash of every constant (the preset name excluded)."""
        payload = {k: v for k, v in self.to_dict().items() if k != "name"}
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=list)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


CURRENT = EvaluatorConfig()

PRESETS: dict[str, EvaluatorConfig] = {
    "current": CURRENT,
    "previous": CURRENT.replace(
        name="previous",
        directional_shrink=0.10,
        directional_axis_threshold=0.50,
        proximity_gap_factor=0.50,
        size_ratio=1.15,
        depth_rule="contact_band",
        depth_band_px=12,
    ),
    "no_sam": CURRENT.replace(name="no_sam", use_sam=False),
}


class UnknownPresetError(UsageError, ValueError):
    """A preset name that is not in `PRESETS` (a usage error, exit 2; also a `ValueError`)."""


def get_preset(name: str) -> EvaluatorConfig:
    """The preset NAME, or `UnknownPresetError` listing the presets."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPresetError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
