"""The paper's Table 14 as code: which values an object has and which relations a pair shows.

Pure numpy/scipy on masks, scores and a disparity map; no model, no file. One small function
per row of Table 14 (`attribute_values` for color / material, then `directional`, `proximity`,
`comparative`, `depth`), read side by side with the table:

- Mask centre = centroid of the mask's pixels (x = column, y = row; y grows down).
  Extent (width, height) = size of the mask's bounding box in pixels.
- Directional: the centre offset A − B, each axis shrunk toward 0 by
  ``directional_shrink × (extent_A + extent_B)`` on that axis, divided by the ORIGINAL centre
  distance. left of: dx < −α, right of: dx > α, above: dy < −α, below: dy > α.
- Proximity: g = gap between the masks, R = mean of sqrt(area/π). near: g < γR; far from: g ≥ γR.
- Comparative: a = pixel count, h = box height. bigger: a_A > ρ a_B, smaller: a_B > ρ a_A,
  taller/shorter likewise with h; pairs within the factor are called neither way.
- Depth: see `depth` (facing-surface rule of Table 14, contact-band rule of Table 16).

Gap (pixels). Between two pixels the Euclidean distance of their centres is d; the gap of a
pixel p to a mask M is 0 when p is in M or 8-adjacent to it (d ≤ √2: the masks *touch*), and
d − 1 otherwise, i.e. the width of the empty strip between them (two boxes with 10 empty
columns between them are 10 px apart). The gap between two masks is the smallest gap of a
pixel of one to the other: 0 when they overlap or touch.

Speed: everything runs inside bounding-box windows, never on the full image. The gap is the
exact nearest-pair distance between the two masks' boundary pixels (a scipy cKDTree over the
pixels that can be nearest). For a facing surface, A's pixels inside B are at distance 0 and
only A's pixels outside B need one, to B's edge pixels; the cheapest of three exact methods
runs: `scipy.ndimage.distance_transform_edt` on a window, the union of the pixel discs round
B's edge pixels painted as row spans (small reach: touching and overlapping pairs), or KD-tree
queries that settle whole tiles of pixels at once by the triangle inequality and query only
pixels near the rim of the reach (large reach: far pairs). All three give the same pixels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.spatial import cKDTree

from dataset_builder.vocabulary import ATTRIBUTE_CATEGORIES, CATEGORY_VOCABULARY, RELATION_CATEGORIES

from .config import PRESETS, EvaluatorConfig

Measurement = float | int | bool | str | None

# Predicates on one axis exclude each other; the verdict's causes are defined per axis.
RELATION_AXES: dict[str, dict[str, tuple[str, ...]]] = {
    "directional": {"horizontal": ("left of", "right of"), "vertical": ("above", "below")},
    "proximity": {"distance": ("near", "far from")},
    "comparative": {"area": ("bigger than", "smaller than"), "height": ("taller than", "shorter than")},
    "depth": {"depth": ("in front of", "behind")},
}

_SQRT2 = math.sqrt(2.0)
# Rough relative costs of the three exact ways to find the pixels within reach of a mask
# (measured on this project's benchmark machine, in units of one EDT window pixel); they only
# decide which method runs, never the result.
_EDT_COST_PER_PIXEL = 1.0  # distance_transform_edt, per window pixel
_KD_COST_PER_POINT = 8.0  # cKDTree query, per candidate pixel (before tiles settle most of them)
_SPAN_COST_PER_SPAN = 0.4  # disc painting, per (edge point, row) span
_SPAN_COST_PER_PIXEL = 0.1  # disc painting, per window pixel (the running sum)
# KD-tree candidates are settled in tiles of TILE × TILE pixels first (a power of 2), then quarters.
_TILE = 16


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


# --------------------------------------------------------------------------- attributes


def attribute_values(
    scores: Mapping[str, float], category: str, config: EvaluatorConfig = PRESETS["current"]
) -> frozenset[str]:
    """Color / material row of Table 14: the values v with s_v ≥ s_max − β.

    `scores` maps every value of the category to its 100 × cosine score; β is
    `config.color_margin` or `config.material_margin`.
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
    margin = config.color_margin if category == "color" else config.material_margin
    best = max(values.values())
    return frozenset(value for value, score in values.items() if score >= best - margin)


# --------------------------------------------------------------------------- mask geometry


@dataclass(frozen=True)
class _Geometry:
    """Area, bounding box (inclusive pixel bounds) and centroid of one mask."""

    area: int
    x0: int
    y0: int
    x1: int
    y1: int
    cx: float
    cy: float

    @property
    def width(self) -> int:
        return self.x1 - self.x0 + 1

    @property
    def height(self) -> int:
        return self.y1 - self.y0 + 1

    @property
    def box(self) -> tuple[slice, slice]:
        return slice(self.y0, self.y1 + 1), slice(self.x0, self.x1 + 1)

    @property
    def radius(self) -> float:
        """Equivalent radius sqrt(area / π)."""
        return math.sqrt(self.area / math.pi)


def _geometry(mask: np.ndarray, label: str) -> _Geometry:
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        raise ValueError(f"{label} is empty (no pixel set)")
    cols = np.flatnonzero(mask.any(axis=0))
    y0, y1, x0, x1 = int(rows[0]), int(rows[-1]), int(cols[0]), int(cols[-1])
    crop = mask[y0 : y1 + 1, x0 : x1 + 1]
    # Summing bytes into int32 is several times faster than count_nonzero along an axis.
    per_row = np.add.reduce(crop.view(np.uint8), axis=1, dtype=np.int32)
    per_col = np.add.reduce(crop.view(np.uint8), axis=0, dtype=np.int32)
    area = int(per_row.sum())
    cy = y0 + float(per_row @ np.arange(per_row.size)) / area
    cx = x0 + float(per_col @ np.arange(per_col.size)) / area
    return _Geometry(area=area, x0=x0, y0=y0, x1=x1, y1=y1, cx=cx, cy=cy)


def _as_mask(mask: np.ndarray, label: str) -> np.ndarray:
    array = np.asarray(mask)
    if array.ndim != 2:
        raise ValueError(f"{label} must be a 2-D array, got {array.ndim} dimension(s) with shape {array.shape}")
    return array if array.dtype == bool else array != 0


# --------------------------------------------------------------------------- gaps and facing surfaces


def _nonzero(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of a 2-D boolean array's set pixels in row-major order, like np.nonzero
    but through the flat indices, which is several times faster on sparse windows."""
    return np.divmod(np.flatnonzero(mask), mask.shape[1])


def _edge_points(mask: np.ndarray, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
    """(n, 2) coordinates (y, x) of the mask's pixels in rows y0..y1, columns x0..x1 that have a
    4-neighbour outside the mask (or outside the image).

    Only such a pixel can be the mask's nearest pixel to a pixel outside it.
    """
    height, width = mask.shape
    py0, py1, px0, px1 = max(y0 - 1, 0), min(y1 + 1, height - 1), max(x0 - 1, 0), min(x1 + 1, width - 1)
    block = np.pad(
        mask[py0 : py1 + 1, px0 : px1 + 1],
        ((1 - (y0 - py0), 1 - (py1 - y1)), (1 - (x0 - px0), 1 - (px1 - x1))),
    )
    core = block[1:-1, 1:-1]
    interior = core & block[:-2, 1:-1] & block[2:, 1:-1] & block[1:-1, :-2] & block[1:-1, 2:]
    ys, xs = _nonzero(core & ~interior)
    return np.column_stack((ys + y0, xs + x0)).astype(np.float64)


def _edge_points_near(mask: np.ndarray, own: _Geometry, other: _Geometry, margin: float) -> np.ndarray:
    """Edge points of `mask` inside its box cut to `other`'s box widened by `margin` px."""
    m = int(math.floor(margin))
    y0, y1 = max(own.y0, other.y0 - m), min(own.y1, other.y1 + m)
    x0, x1 = max(own.x0, other.x0 - m), min(own.x1, other.x1 + m)
    if y0 > y1 or x0 > x1:
        return np.empty((0, 2))
    return _edge_points(mask, y0, y1, x0, x1)


def _box_distance(a: _Geometry, b: _Geometry) -> float:
    """Distance between the two boxes (rectangles of pixel centres); 0 when they intersect."""
    dy = max(b.y0 - a.y1, a.y0 - b.y1, 0)
    dx = max(b.x0 - a.x1, a.x0 - b.x1, 0)
    return math.hypot(dx, dy)


def _overlap(mask_a: np.ndarray, a: _Geometry, mask_b: np.ndarray, b: _Geometry) -> bool:
    y0, y1, x0, x1 = max(a.y0, b.y0), min(a.y1, b.y1), max(a.x0, b.x0), min(a.x1, b.x1)
    if y0 > y1 or x0 > x1:
        return False
    return bool(np.any(mask_a[y0 : y1 + 1, x0 : x1 + 1] & mask_b[y0 : y1 + 1, x0 : x1 + 1]))


def _nearest_distance(mask_a: np.ndarray, a: _Geometry, mask_b: np.ndarray, b: _Geometry) -> float:
    """Smallest centre-to-centre distance between a pixel of A and a pixel of B (0 if they overlap).

    Exact: any pair closer than `margin` lies in the two boxes cut to each other's box widened
    by `margin`, so a nearest pair found there at distance ≤ margin is the nearest overall.
    The margin starts at the box-to-box distance and grows until that holds.
    """
    if _overlap(mask_a, a, mask_b, b):
        return 0.0
    margin = _box_distance(a, b) + 8.0
    while True:
        edge_a = _edge_points_near(mask_a, a, b, margin)
        edge_b = _edge_points_near(mask_b, b, a, margin)
        if len(edge_a) and len(edge_b):
            tree = cKDTree(edge_b)
            # One pair's distance bounds the nearest one, so the bulk query can prune early
            # (farther neighbours come back as inf; the minimum is unchanged).
            seed = edge_a[np.argmin(np.square(edge_a - (b.cy, b.cx)).sum(axis=1))]
            bound, _ = tree.query(seed, k=1)
            distances, _ = tree.query(edge_a, k=1, distance_upper_bound=float(bound) + 1.0)
            nearest = float(distances.min())
            if nearest <= margin or _covers(a, b, margin) and _covers(b, a, margin):
                return nearest  # exact: closer pairs would be in the windows, or nothing was left out
            margin = nearest
        else:
            margin = 2.0 * margin


def _covers(own: _Geometry, other: _Geometry, margin: float) -> bool:
    """Whether `other`'s box widened by `margin` contains all of `own`'s box."""
    m = int(math.floor(margin))
    return other.y0 - m <= own.y0 and own.y1 <= other.y1 + m and other.x0 - m <= own.x0 and own.x1 <= other.x1 + m


def _gap_from_distance(distance: float) -> float:
    """Pixel gap from a centre-to-centre distance: 0 when touching (≤ √2), else distance − 1."""
    return 0.0 if distance <= _SQRT2 + 1e-9 else distance - 1.0


def _reach_for_gap(gap_limit: float) -> float:
    """The centre distance below which a pixel's gap is ≤ `gap_limit` (inverse of _gap_from_distance)."""
    return max(gap_limit + 1.0, _SQRT2) + 1e-9


def _facing_window(
    mask_a: np.ndarray, a: _Geometry, mask_b: np.ndarray, b: _Geometry, reach: float
) -> tuple[int, int, np.ndarray]:
    """A's pixels whose centre lies within `reach` of a pixel centre of B, as a boolean window
    whose top-left pixel is (y0, x0): `(y0, x0, window)`; the window may be empty."""
    margin = int(math.floor(reach))
    height, width = mask_a.shape
    # Candidates: A's box cut to B's box widened by the reach (a farther pixel cannot qualify).
    cy0, cy1 = max(a.y0, b.y0 - margin), min(a.y1, b.y1 + margin)
    cx0, cx1 = max(a.x0, b.x0 - margin), min(a.x1, b.x1 + margin)
    if cy0 > cy1 or cx0 > cx1:
        return a.y0, a.x0, np.zeros((0, 0), bool)
    cand_a = mask_a[cy0 : cy1 + 1, cx0 : cx1 + 1]
    inside_b = mask_b[cy0 : cy1 + 1, cx0 : cx1 + 1]
    facing = cand_a & inside_b  # distance 0
    outside = cand_a & ~inside_b  # these need a distance to B
    rows_any = np.flatnonzero(outside.any(axis=1))
    if rows_any.size == 0:
        return cy0, cx0, facing
    cols_any = np.flatnonzero(outside.any(axis=0))
    region = (slice(int(rows_any[0]), int(rows_any[-1]) + 1), slice(int(cols_any[0]), int(cols_any[-1]) + 1))
    candidates = outside[region]
    oy0, ox0 = cy0 + region[0].start, cx0 + region[1].start
    oy1, ox1 = oy0 + candidates.shape[0] - 1, ox0 + candidates.shape[1] - 1
    # Every pixel of B within reach of a candidate lies in the candidates' box widened by the reach,
    # and the nearest one to a pixel outside B is an edge pixel of B.
    ey0, ey1 = max(oy0 - margin, b.y0), min(oy1 + margin, b.y1)
    ex0, ex1 = max(ox0 - margin, b.x0), min(ox1 + margin, b.x1)
    if ey0 > ey1 or ex0 > ex1:
        return cy0, cx0, facing
    edge_b = _edge_points(mask_b, ey0, ey1, ex0, ex1)
    if len(edge_b) == 0:
        return cy0, cx0, facing
    # EDT window: the candidates' box widened by the reach, cut to its hull with B's box.
    wy0, wy1 = max(oy0 - margin, min(oy0, b.y0), 0), min(oy1 + margin, max(oy1, b.y1), height - 1)
    wx0, wx1 = max(ox0 - margin, min(ox0, b.x0), 0), min(ox1 + margin, max(ox1, b.x1), width - 1)
    costs = {
        "edt": (wy1 - wy0 + 1) * (wx1 - wx0 + 1) * _EDT_COST_PER_PIXEL,
        "kd": int(np.count_nonzero(candidates)) * _KD_COST_PER_POINT,
        "spans": len(edge_b) * (2 * margin + 1) * _SPAN_COST_PER_SPAN + candidates.size * _SPAN_COST_PER_PIXEL,
    }
    method = min(costs, key=costs.__getitem__)
    if method == "edt":
        distance = ndimage.distance_transform_edt(~mask_b[wy0 : wy1 + 1, wx0 : wx1 + 1])
        within = distance[oy0 - wy0 : oy1 - wy0 + 1, ox0 - wx0 : ox1 - wx0 + 1] <= reach
    elif method == "kd":
        within = _within_reach_kd(edge_b, candidates, oy0, ox0, reach)
    else:
        within = _within_reach_spans(edge_b, oy0, ox0, candidates.shape, reach)
    facing[region] |= candidates & within
    return cy0, cx0, facing


def _within_reach_kd(edge: np.ndarray, candidates: np.ndarray, y0: int, x0: int, reach: float) -> np.ndarray:
    """Which set pixels of `candidates` (a window with top-left pixel (y0, x0)) lie within `reach`
    of one of the `edge` points, by KD-tree queries.

    Square tiles are settled whole where their centre is far enough inside or outside the reach
    (triangle inequality: every pixel of a t × t tile is within (t − 1)/√2 of its centre); the
    others are split in four, down to single pixels, so only pixels near the rim are queried.
    """
    tree = cKDTree(edge)
    height, width = candidates.shape
    padded = np.zeros((-(-height // _TILE) * _TILE, -(-width // _TILE) * _TILE), bool)
    padded[:height, :width] = candidates
    occupied = {1: padded}  # tile size → which tiles hold a candidate
    tile = 1
    while tile < _TILE:
        finer = occupied[tile]
        occupied[2 * tile] = finer[0::2, 0::2] | finer[1::2, 0::2] | finer[0::2, 1::2] | finer[1::2, 1::2]
        tile *= 2
    tiles_y, tiles_x = _nonzero(occupied[tile])
    within = np.zeros_like(occupied[tile])
    while tile > 1:
        if tiles_y.size:
            centres = np.column_stack((y0 + tiles_y * tile + (tile - 1) / 2, x0 + tiles_x * tile + (tile - 1) / 2))
            slack = (tile - 1) / _SQRT2 + 1e-6  # the 1e-6 absorbs rounding of the centre distance
            centre_distance, _ = tree.query(centres, k=1, distance_upper_bound=reach + slack)
            inside = centre_distance + slack <= reach
            within[tiles_y[inside], tiles_x[inside]] = True
            undecided = ~inside & (centre_distance - slack <= reach)
            # Split the undecided tiles in four and keep the quarters that hold a candidate.
            quarter_y = (2 * tiles_y[undecided])[:, None] + np.array([0, 0, 1, 1])
            quarter_x = (2 * tiles_x[undecided])[:, None] + np.array([0, 1, 0, 1])
            keep = occupied[tile // 2][quarter_y, quarter_x]
            tiles_y, tiles_x = quarter_y[keep], quarter_x[keep]
        tile //= 2
        within = within.repeat(2, axis=0).repeat(2, axis=1)
    if tiles_y.size:
        points = np.column_stack((tiles_y + y0, tiles_x + x0)).astype(np.float64)
        distances, _ = tree.query(points, k=1, distance_upper_bound=reach)
        close = distances <= reach
        within[tiles_y[close], tiles_x[close]] = True
    return within[:height, :width] & candidates


def _within_reach_spans(edge: np.ndarray, y0: int, x0: int, shape: tuple[int, int], reach: float) -> np.ndarray:
    """Which pixels of a window (top-left pixel (y0, x0), `shape`) lie within `reach` of one of
    the `edge` points: the union of the pixel discs round the points, painted as row spans
    (+1 at a span's first pixel, −1 after its last, closed by a running sum along each row).

    Points next to each other in a row are painted as one run: the discs round x0..x1 cover
    x0 − w .. x1 + w on each row, w being the disc's half width on that row.
    """
    margin = int(math.floor(reach))
    offsets = np.arange(-margin, margin + 1)
    half_widths = _disc_half_widths(offsets, reach)
    height, width = shape
    ys, xs = edge[:, 0].astype(np.intp), edge[:, 1].astype(np.intp)
    run_start = np.ones(ys.size, bool)
    run_start[1:] = (ys[1:] != ys[:-1]) | (xs[1:] != xs[:-1] + 1)
    first = np.flatnonzero(run_start)
    last = np.append(first[1:], ys.size) - 1
    rows = ys[first, None] + (offsets - y0)
    start = np.maximum(xs[first, None] - x0 - half_widths, 0)
    stop = np.minimum(xs[last, None] - x0 + half_widths + 1, width)
    keep = (rows >= 0) & (rows < height) & (start < stop)
    row_base = rows[keep] * (width + 1)
    size = height * (width + 1)
    marks = np.bincount(row_base + start[keep], minlength=size) - np.bincount(row_base + stop[keep], minlength=size)
    return np.cumsum(marks.reshape(height, width + 1), axis=1)[:, :width] > 0


def _disc_half_widths(offsets: np.ndarray, reach: float) -> np.ndarray:
    """For each row offset dy (|dy| ≤ reach), the largest w with sqrt(w² + dy²) ≤ reach."""
    squared = offsets.astype(np.float64) ** 2
    half = np.floor(np.sqrt(np.maximum(reach * reach - squared, 0.0))).astype(np.intp)
    # Settle rounding at the rim with the very test the distance transform makes.
    half += np.sqrt((half + 1.0) ** 2 + squared) <= reach
    half -= np.sqrt(half.astype(np.float64) ** 2 + squared) > reach
    return half


# --------------------------------------------------------------------------- Table 14, one rule per row


def directional(a: _Geometry, b: _Geometry, config: EvaluatorConfig) -> RelationResult:
    """left / right: dx < −α, dx > α; above / below: dy < −α, dy > α (offset A − B, shrunk, normalised)."""
    offset_x, offset_y = a.cx - b.cx, a.cy - b.cy
    distance = math.hypot(offset_x, offset_y)
    shrink_x = config.directional_shrink * (a.width + b.width)
    shrink_y = config.directional_shrink * (a.height + b.height)

    def shrunk(offset: float, shrink: float) -> float:
        return math.copysign(max(abs(offset) - shrink, 0.0), offset)

    dx = shrunk(offset_x, shrink_x) / distance if distance > 0 else 0.0
    dy = shrunk(offset_y, shrink_y) / distance if distance > 0 else 0.0
    axis = config.directional_axis_threshold
    predicates = set()
    if dx < -axis:
        predicates.add("left of")
    if dx > axis:
        predicates.add("right of")
    if dy < -axis:
        predicates.add("above")
    if dy > axis:
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
            "axis_threshold": axis,
        },
    )


def proximity(gap: float, a: _Geometry, b: _Geometry, config: EvaluatorConfig) -> RelationResult:
    """near: g < γR; far from: g ≥ γR (g = mask gap, R = mean equivalent radius)."""
    radius = (a.radius + b.radius) / 2
    limit = config.proximity_gap_factor * radius
    predicate = "near" if gap < limit else "far from"
    return RelationResult(
        frozenset({predicate}),
        {
            "gap": gap,
            "touching": gap == 0.0,
            "radius": radius,
            "area_a": a.area,
            "area_b": b.area,
            "gap_factor": config.proximity_gap_factor,
            "gap_threshold": limit,
        },
    )


def comparative(a: _Geometry, b: _Geometry, config: EvaluatorConfig) -> RelationResult:
    """bigger / smaller: a_A > ρ a_B, a_B > ρ a_A; taller / shorter: h_A > ρ h_B, h_B > ρ h_A."""
    ratio = config.size_ratio
    predicates = set()
    if a.area > ratio * b.area:
        predicates.add("bigger than")
    if b.area > ratio * a.area:
        predicates.add("smaller than")
    if a.height > ratio * b.height:
        predicates.add("taller than")
    if b.height > ratio * a.height:
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
            "size_ratio": ratio,
        },
    )


def depth(
    mask_a: np.ndarray,
    a: _Geometry,
    mask_b: np.ndarray,
    b: _Geometry,
    gap: float,
    disparity: np.ndarray,
    config: EvaluatorConfig,
) -> RelationResult:
    """In front of / behind from mean disparity (larger = nearer) on the facing surfaces.

    ``facing_surface`` (Table 14): each object's pixels within g + band px of the other mask;
    emitted when |δA − δB| / (δmax − δmin) ≥ base + slope·g/R.
    ``contact_band`` (Table 16): each object's pixels within band px of the other mask, so only
    pairs at most band px apart; emitted when |δA − δB| / (δmax − δmin) ≥ base.
    δmax, δmin: over the whole disparity map. The larger mean disparity is in front. Pixels in
    both masks (overlap) are at gap 0 and count for both surfaces. No predicate when the map is flat.
    """
    radius = (a.radius + b.radius) / 2
    low, high = float(disparity.min()), float(disparity.max())
    spread = high - low
    if not math.isfinite(spread):
        raise ValueError("disparity map holds non-finite values (NaN or inf)")
    band = float(config.depth_band_px)
    if config.depth_rule == "facing_surface":
        gap_limit = gap + band
        threshold = config.depth_base + config.depth_gap_slope * gap / radius
    elif config.depth_rule == "contact_band":
        gap_limit = band
        threshold = config.depth_base
    else:
        raise ValueError(f"unknown depth rule {config.depth_rule!r}; expected facing_surface or contact_band")
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
    reach = _reach_for_gap(gap_limit)
    count_a, mean_a = _facing_mean(disparity, *_facing_window(mask_a, a, mask_b, b, reach))
    count_b, mean_b = _facing_mean(disparity, *_facing_window(mask_b, b, mask_a, a, reach))
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


def _facing_mean(disparity: np.ndarray, y0: int, x0: int, facing: np.ndarray) -> tuple[int, float]:
    """Pixel count and mean disparity of a facing surface given as a window (0, nan when empty).

    The boolean selection yields the pixels in row-major order, as indexing with their
    coordinates would, so the mean is the same number to the last bit.
    """
    count = int(np.count_nonzero(facing))
    if count == 0:
        return 0, math.nan
    height, width = facing.shape
    return count, float(disparity[y0 : y0 + height, x0 : x0 + width][facing].mean())


def _validated_pair(mask_a: np.ndarray, mask_b: np.ndarray) -> tuple[np.ndarray, _Geometry, np.ndarray, _Geometry]:
    mask_a, mask_b = _as_mask(mask_a, "mask_a"), _as_mask(mask_b, "mask_b")
    if mask_a.shape != mask_b.shape:
        raise ValueError(f"mask shapes differ: mask_a {mask_a.shape} vs mask_b {mask_b.shape}")
    return mask_a, _geometry(mask_a, "mask_a"), mask_b, _geometry(mask_b, "mask_b")


def _validated_disparity(disparity: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    if disparity is None:
        raise ValueError("depth relations need a disparity map, got None")
    disparity = np.asarray(disparity)
    if disparity.shape != shape:
        raise ValueError(f"disparity shape {disparity.shape} differs from mask shape {shape}")
    if not np.issubdtype(disparity.dtype, np.number) or np.issubdtype(disparity.dtype, np.complexfloating):
        raise ValueError(f"disparity must hold real numbers, got dtype {disparity.dtype}")
    return disparity


def relation_predicates(
    category: str,
    mask_a: np.ndarray,
    mask_b: np.ndarray,
    disparity: np.ndarray | None = None,
    config: EvaluatorConfig = PRESETS["current"],
) -> RelationResult:
    """The predicates of A relative to B for one relation category, with their measurements.

    Masks are 2-D boolean arrays of one shape (non-boolean arrays count non-zero as set);
    `disparity` (same shape, larger = nearer) is required for ``depth`` only.
    """
    _relation_axes(category)  # unknown category → ValueError
    mask_a, a, mask_b, b = _validated_pair(mask_a, mask_b)
    if category == "directional":
        return directional(a, b, config)
    if category == "comparative":
        return comparative(a, b, config)
    if category == "depth":
        disparity = _validated_disparity(disparity, mask_a.shape)
    gap = _gap_from_distance(_nearest_distance(mask_a, a, mask_b, b))
    if category == "proximity":
        return proximity(gap, a, b, config)
    return depth(mask_a, a, mask_b, b, gap, disparity, config)


def all_relation_predicates(
    mask_a: np.ndarray,
    mask_b: np.ndarray,
    disparity: np.ndarray | None = None,
    config: EvaluatorConfig = PRESETS["current"],
) -> dict[str, RelationResult]:
    """Every relation category for one pair, sharing the geometry and gap (depth only with a disparity)."""
    mask_a, a, mask_b, b = _validated_pair(mask_a, mask_b)
    gap = _gap_from_distance(_nearest_distance(mask_a, a, mask_b, b))
    results = {
        "directional": directional(a, b, config),
        "proximity": proximity(gap, a, b, config),
        "comparative": comparative(a, b, config),
    }
    if disparity is not None:
        results["depth"] = depth(mask_a, a, mask_b, b, gap, _validated_disparity(disparity, mask_a.shape), config)
    return results
