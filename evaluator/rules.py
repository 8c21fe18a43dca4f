"""The paper's Table 14 as code: which values an object has and which relations a pair shows.

Pure numpy on scores, mask measurements and a disparity map; no model, no file. One small
function per row of Table 14, with the table's constants under the table's names (values from
`EvaluatorConfig`: Table 15 in the `current` preset, Table 16 in `previous`):

- color / material (`attribute_values`): the object has value v when s_v ≥ s_max − β
  (β = 0.5 color, 0 material);
- directional (`directional`): left / right of: dx < −α_dir, dx > α_dir; above / below: dy < −α_dir,
  dy > α_dir;
- proximity (`proximity`): near: g < γ_prox·R; far from: g ≥ γ_prox·R;
- comparative (`comparative`): bigger / smaller than: a_A > ρ_size·a_B, a_B > ρ_size·a_A; taller /
  shorter than: the same with h;
- depth (`depth`): in front of / behind when |δ̄A − δ̄B| / (δmax − δmin) ≥ 0.05 + 0.10·g/R over the
  facing surfaces, the larger mean disparity in front (Table 16: the contact-band rule).

(dx, dy): the offset between mask centres A − B, each axis shrunk toward 0 by
τ_dir × (extent_A + extent_B) on that axis, divided by the ORIGINAL centre distance (y grows
down). g: the mask-to-mask gap; R: the mean equivalent radius sqrt(area/π); a: pixel count;
h: bounding-box height. Pairs within a comparative factor are called neither way. The exact
measurements (centroids, extents, gaps, facing surfaces) are `evaluator.geometry`'s.

`relation_predicates` and `attribute_values` are the public rule API; `all_relation_predicates`
decides every relation category of one pair at once, sharing the geometry and the gap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dataset_builder.vocabulary import ATTRIBUTE_CATEGORIES, CATEGORY_VOCABULARY, RELATION_CATEGORIES

from .config import PRESETS, EvaluatorConfig
from .geometry import MaskGeometry, facing_surface_mean, mask_gap, pair_geometry

Measurement = float | int | bool | str | None

# Predicates on one axis exclude each other; the verdict's causes are defined per axis.
RELATION_AXES: dict[str, dict[str, tuple[str, ...]]] = {
    "directional": {"horizontal": ("left of", "right of"), "vertical": ("above", "below")},
    "proximity": {"distance": ("near", "far from")},
    "comparative": {"area": ("bigger than", "smaller than"), "height": ("taller than", "shorter than")},
    "depth": {"depth": ("in front of", "behind")},
}


@dataclass(frozen=True)
class RelationResult:
    """The predicates of A relative to B and the numbers behind them (JSON-safe)."""

    predicates: frozenset[str]
    measurements: dict[str, Measurement]


def axis_of(category: str, predicate: str) -> tuple[str, ...]:
    """The predicates that share `predicate`'s axis (itself included), e.g. left of → (left of, right of)."""
    for predicates in _relation_axes(category).values():
        if predicate in predicates:
            return predicates
    raise ValueError(
        f"{predicate!r} is not a {category} predicate; expected one of {', '.join(CATEGORY_VOCABULARY[category])}"
    )


def _relation_axes(category: str) -> dict[str, tuple[str, ...]]:
    try:
        return RELATION_AXES[category]
    except KeyError:
        raise ValueError(
            f"unknown relation category {category!r}; expected one of {', '.join(RELATION_CATEGORIES)}"
        ) from None


# --------------------------------------------------------------------------- Table 14, one rule per row


def attribute_values(
    scores: Mapping[str, float], category: str, config: EvaluatorConfig = PRESETS["current"]
) -> frozenset[str]:
    """Color / material row: the values v with s_v ≥ s_max − β.

    `scores` maps every value of the category to its 100 × cosine score s_v; β is
    `config.color_margin` or `config.material_margin`. Ties at s_max all count.
    """
    if category not in ATTRIBUTE_CATEGORIES:
        raise ValueError(f"unknown attribute category {category!r}; expected one of {', '.join(ATTRIBUTE_CATEGORIES)}")
    expected = CATEGORY_VOCABULARY[category]
    missing = [value for value in expected if value not in scores]
    unknown = sorted(set(scores) - set(expected))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown {', '.join(unknown)}")
        raise ValueError(f"{category} scores must cover exactly {', '.join(expected)}: {'; '.join(parts)}")
    values = {value: float(scores[value]) for value in expected}
    bad = [value for value, score in values.items() if not math.isfinite(score)]
    if bad:
        raise ValueError(f"{category} scores are not finite for {', '.join(bad)}")
    beta = config.color_margin if category == "color" else config.material_margin
    s_max = max(values.values())
    return frozenset(value for value, s_v in values.items() if s_v >= s_max - beta)


def directional(a: MaskGeometry, b: MaskGeometry, config: EvaluatorConfig) -> RelationResult:
    """left / right: dx < −α_dir, dx > α_dir; above / below: dy < −α_dir, dy > α_dir.

    (dx, dy) = centre offset A − B, each axis shrunk toward 0 by τ_dir × the summed extents on
    that axis (never past 0), divided by the original centre distance; identical centres: (0, 0).
    """
    tau_dir, alpha_dir = config.directional_shrink, config.directional_axis_threshold
    offset_x, offset_y = a.cx - b.cx, a.cy - b.cy
    distance = math.hypot(offset_x, offset_y)
    shrink_x = tau_dir * (a.width + b.width)
    shrink_y = tau_dir * (a.height + b.height)
    dx = _shrunk(offset_x, shrink_x) / distance if distance > 0 else 0.0
    dy = _shrunk(offset_y, shrink_y) / distance if distance > 0 else 0.0
    predicates = set()
    if dx < -alpha_dir:
        predicates.add("left of")
    if dx > alpha_dir:
        predicates.add("right of")
    if dy < -alpha_dir:
        predicates.add("above")
    if dy > alpha_dir:
        predicates.add("below")
    return RelationResult(
        frozenset(predicates),
        {
            "center_a_x": a.cx,
            "center_a_y": a.cy,
            "center_b_x": b.cx,
            "center_b_y": b.cy,
            "offset_x": offset_x,
            "offset_y": offset_y,
            "center_distance": distance,
            "extent_sum_x": a.width + b.width,
            "extent_sum_y": a.height + b.height,
            "shrink_x": shrink_x,
            "shrink_y": shrink_y,
            "dx": dx,
            "dy": dy,
            "axis_threshold": alpha_dir,
        },
    )


def _shrunk(offset: float, shrink: float) -> float:
    """`offset` moved toward 0 by `shrink`, stopping at 0 (the sign never flips)."""
    return math.copysign(max(abs(offset) - shrink, 0.0), offset)


def proximity(gap: float, a: MaskGeometry, b: MaskGeometry, config: EvaluatorConfig) -> RelationResult:
    """near: g < γ_prox·R; far from: g ≥ γ_prox·R (g = mask gap, R = mean equivalent radius).

    Every measurable pair is one or the other: proximity has no dead zone.
    """
    gamma_prox = config.proximity_gap_factor
    radius = (a.radius + b.radius) / 2
    limit = gamma_prox * radius
    predicate = "near" if gap < limit else "far from"
    return RelationResult(
        frozenset({predicate}),
        {
            "gap": gap,
            "touching": gap == 0.0,
            "radius": radius,
            "area_a": a.area,
            "area_b": b.area,
            "gap_factor": gamma_prox,
            "gap_threshold": limit,
        },
    )


def comparative(a: MaskGeometry, b: MaskGeometry, config: EvaluatorConfig) -> RelationResult:
    """bigger / smaller: a_A > ρ_size·a_B, a_B > ρ_size·a_A; taller / shorter: the same with h."""
    rho_size = config.size_ratio
    predicates = set()
    if a.area > rho_size * b.area:
        predicates.add("bigger than")
    if b.area > rho_size * a.area:
        predicates.add("smaller than")
    if a.height > rho_size * b.height:
        predicates.add("taller than")
    if b.height > rho_size * a.height:
        predicates.add("shorter than")
    return RelationResult(
        frozenset(predicates),
        {
            "area_a": a.area,
            "area_b": b.area,
            "height_a": a.height,
            "height_b": b.height,
            "area_ratio": a.area / b.area,
            "height_ratio": a.height / b.height,
            "size_ratio": rho_size,
        },
    )


def _depth_limits(gap: float, radius: float, band: float, config: EvaluatorConfig) -> tuple[float, float]:
    """(facing gap limit in px, threshold on the normalised disparity difference) of the config's depth rule."""
    if config.depth_rule == "facing_surface":
        return gap + band, config.depth_base + config.depth_gap_slope * gap / radius
    if config.depth_rule == "contact_band":
        return band, config.depth_base
    raise ValueError(f"unknown depth rule {config.depth_rule!r}; expected facing_surface or contact_band")


def depth(
    mask_a: np.ndarray,
    a: MaskGeometry,
    mask_b: np.ndarray,
    b: MaskGeometry,
    gap: float,
    disparity: np.ndarray,
    config: EvaluatorConfig,
) -> RelationResult:
    """In front of / behind from mean disparity δ̄ (larger = nearer) on the facing surfaces.

    ``facing_surface`` (Table 14): each object's pixels within g + band px of the other mask;
    emitted when |δ̄A − δ̄B| / (δmax − δmin) ≥ base + slope·g/R.
    ``contact_band`` (Table 16): each object's pixels within band px of the other mask, so only
    pairs at most band px apart; emitted when |δ̄A − δ̄B| / (δmax − δmin) ≥ base.
    δmax, δmin: over the whole disparity map. The larger mean disparity is in front. Pixels in
    both masks (overlap) are at gap 0 and count for both surfaces. No predicate when the map is flat.
    """
    radius = (a.radius + b.radius) / 2
    low, high = float(disparity.min()), float(disparity.max())
    spread = high - low
    if not math.isfinite(spread):
        raise ValueError("disparity map holds non-finite values (NaN or inf)")
    band = float(config.depth_band_px)
    gap_limit, threshold = _depth_limits(gap, radius, band, config)
    measurements: dict[str, Measurement] = {
        "depth_rule": config.depth_rule,
        "gap": gap,
        "radius": radius,
        "band_px": band,
        "facing_gap_limit": gap_limit,
        "facing_pixels_a": 0,
        "facing_pixels_b": 0,
        "facing_disparity_a": None,
        "facing_disparity_b": None,
        "disparity_min": low,
        "disparity_max": high,
        "depth_difference": None,
        "depth_threshold": threshold,
    }
    if gap > gap_limit:  # contact band: the objects do not touch the band
        return RelationResult(frozenset(), measurements)
    count_a, mean_a = facing_surface_mean(disparity, mask_a, a, mask_b, b, gap_limit)
    count_b, mean_b = facing_surface_mean(disparity, mask_b, b, mask_a, a, gap_limit)
    if count_a == 0 or count_b == 0:  # cannot happen for gap ≤ limit; kept as a guard
        return RelationResult(frozenset(), measurements)
    measurements.update(
        facing_pixels_a=count_a,
        facing_pixels_b=count_b,
        facing_disparity_a=mean_a,
        facing_disparity_b=mean_b,
    )
    if spread <= 0:
        return RelationResult(frozenset(), measurements)
    difference = abs(mean_a - mean_b) / spread
    measurements["depth_difference"] = difference
    if difference >= threshold and mean_a != mean_b:
        return RelationResult(frozenset({"in front of" if mean_a > mean_b else "behind"}), measurements)
    return RelationResult(frozenset(), measurements)


# --------------------------------------------------------------------------- the public rule API


def relation_predicates(
    category: str,
    mask_a: np.ndarray,
    mask_b: np.ndarray,
    disparity: np.ndarray | None = None,
    config: EvaluatorConfig = PRESETS["current"],
) -> RelationResult:
    """The predicates of A relative to B for one relation category, with their measurements.

    Masks are 2-D boolean arrays of one shape (non-boolean arrays count non-zero as set); an
    empty mask is a ValueError. `disparity` (same shape, larger = nearer) is required for
    ``depth`` only.
    """
    _relation_axes(category)  # unknown category → ValueError
    mask_a, a, mask_b, b = pair_geometry(mask_a, mask_b)
    if category == "directional":
        return directional(a, b, config)
    if category == "comparative":
        return comparative(a, b, config)
    checked = _validated_disparity(disparity, mask_a.shape) if category == "depth" else None
    gap = mask_gap(mask_a, a, mask_b, b)
    if checked is None:
        return proximity(gap, a, b, config)
    return depth(mask_a, a, mask_b, b, gap, checked, config)


def all_relation_predicates(
    mask_a: np.ndarray,
    mask_b: np.ndarray,
    disparity: np.ndarray | None = None,
    config: EvaluatorConfig = PRESETS["current"],
) -> dict[str, RelationResult]:
    """Every relation category for one pair, sharing the geometry and gap (depth only with a disparity)."""
    mask_a, a, mask_b, b = pair_geometry(mask_a, mask_b)
    gap = mask_gap(mask_a, a, mask_b, b)
    results = {
        "directional": directional(a, b, config),
        "proximity": proximity(gap, a, b, config),
        "comparative": comparative(a, b, config),
    }
    if disparity is not None:
        results["depth"] = depth(mask_a, a, mask_b, b, gap, _validated_disparity(disparity, mask_a.shape), config)
    return results


def _validated_disparity(disparity: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    if disparity is None:
        raise ValueError("depth relations need a disparity map, got None")
    disparity = np.asarray(disparity)
    if disparity.shape != shape:
        raise ValueError(f"disparity shape {disparity.shape} differs from mask shape {shape}")
    if not np.issubdtype(disparity.dtype, np.number) or np.issubdtype(disparity.dtype, np.complexfloating):
        raise ValueError(f"disparity must hold real numbers, got dtype {disparity.dtype}")
    return disparity
