"""Exact mask geometry for the relation rules: centroids, extents, gaps and facing surfaces.

Pure numpy/scipy on 2-D boolean masks; `evaluator.rules` states Table 14 in terms of these
measurements and never looks at a pixel itself.

- Centre = centroid of the mask's pixels (x = column, y = row; y grows down); extent (width,
  height) = size of the mask's bounding box in pixels; equivalent radius = sqrt(area / π).
- Gap (pixels). Between two pixels the Euclidean distance of their centres is d; the gap of a
  pixel p to a mask M is 0 when p is in M or 8-adjacent to it (d ≤ √2: the masks *touch*), and
  d − 1 otherwise, i.e. the width of the empty strip between them (two boxes with 10 empty
  columns between them are 10 px apart). The gap between two masks is the smallest gap of a
  pixel of one to the other: 0 when they overlap or touch.
- Facing surface of A towards B within a gap limit: A's pixels whose gap to B is at most the limit.

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
from dataclasses import dataclass

import numpy as np

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
class MaskGeometry:
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


def mask_geometry(mask: np.ndarray, label: str) -> MaskGeometry:
    """The geometry of a boolean mask; ValueError naming `label` when no pixel is set."""
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
    return MaskGeometry(area=area, x0=x0, y0=y0, x1=x1, y1=y1, cx=cx, cy=cy)


def as_mask(mask: np.ndarray, label: str) -> np.ndarray:
    """A 2-D boolean view of `mask` (non-zero = set); ValueError naming `label` otherwise."""
    array = np.asarray(mask)
    if array.ndim != 2:
        raise ValueError(f"{label} must be a 2-D array, got {array.ndim} dimension(s) with shape {array.shape}")
    return array if array.dtype == bool else array != 0


def pair_geometry(mask_a: np.ndarray, mask_b: np.ndarray) -> tuple[np.ndarray, MaskGeometry, np.ndarray, MaskGeometry]:
    """Validated boolean masks A and B of one shape, each with its geometry: (mask_a, a, mask_b, b)."""
    mask_a, mask_b = as_mask(mask_a, "mask_a"), as_mask(mask_b, "mask_b")
    if mask_a.shape != mask_b.shape:
        raise ValueError(f"mask shapes differ: mask_a {mask_a.shape} vs mask_b {mask_b.shape}")
    return mask_a, mask_geometry(mask_a, "mask_a"), mask_b, mask_geometry(mask_b, "mask_b")


# --------------------------------------------------------------------------- the gap


def mask_gap(mask_a: np.ndarray, a: MaskGeometry, mask_b: np.ndarray, b: MaskGeometry) -> float:
    """The gap g between two masks in pixels (module docstring): 0 when they overlap or touch."""
    return gap_from_distance(_nearest_distance(mask_a, a, mask_b, b))


def gap_from_distance(distance: float) -> float:
    """Pixel gap from a centre-to-centre distance: 0 when touching (≤ √2), else distance − 1."""
    return 0.0 if distance <= _SQRT2 + 1e-9 else distance - 1.0


def reach_for_gap(gap_limit: float) -> float:
    """The centre distance below which a pixel's gap is ≤ `gap_limit` (inverse of gap_from_distance)."""
    return max(gap_limit + 1.0, _SQRT2) + 1e-9


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


def _edge_points_near(mask: np.ndarray, own: MaskGeometry, other: MaskGeometry, margin: float) -> np.ndarray:
    """Edge points of `mask` inside its box cut to `other`'s box widened by `margin` px."""
    m = int(math.floor(margin))
    y0, y1 = max(own.y0, other.y0 - m), min(own.y1, other.y1 + m)
    x0, x1 = max(own.x0, other.x0 - m), min(own.x1, other.x1 + m)
    if y0 > y1 or x0 > x1:
        return np.empty((0, 2))
    return _edge_points(mask, y0, y1, x0, x1)


def _box_distance(a: MaskGeometry, b: MaskGeometry) -> float:
    """Distance between the two boxes (rectangles of pixel centres); 0 when they intersect."""
    dy = max(b.y0 - a.y1, a.y0 - b.y1, 0)
    dx = max(b.x0 - a.x1, a.x0 - b.x1, 0)
    return math.hypot(dx, dy)


def _overlap(mask_a: np.ndarray, a: MaskGeometry, mask_b: np.ndarray, b: MaskGeometry) -> bool:
    y0, y1, x0, x1 = max(a.y0, b.y0), min(a.y1, b.y1), max(a.x0, b.x0), min(a.x1, b.x1)
    if y0 > y1 or x0 > x1:
        return False
    return bool(np.any(mask_a[y0 : y1 + 1, x0 : x1 + 1] & mask_b[y0 : y1 + 1, x0 : x1 + 1]))


def _nearest_distance(mask_a: np.ndarray, a: MaskGeometry, mask_b: np.ndarray, b: MaskGeometry) -> float:
    """Smallest centre-to-centre distance between a pixel of A and a pixel of B (0 if they overlap).

    Exact: any pair closer than `margin` lies in the two boxes cut to each other's box widened
    by `margin`, so a nearest pair found there at distance ≤ margin is the nearest overall.
    The margin starts at the box-to-box distance and grows until that holds.
    """
    if _overlap(mask_a, a, mask_b, b):
        return 0.0
    from scipy.spatial import cKDTree  # here, not at the top: the Space imports the rules, not this

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


def _covers(own: MaskGeometry, other: MaskGeometry, margin: float) -> bool:
    """Whether `other`'s box widened by `margin` contains all of `own`'s box."""
    m = int(math.floor(margin))
    return other.y0 - m <= own.y0 and own.y1 <= other.y1 + m and other.x0 - m <= own.x0 and own.x1 <= other.x1 + m


# --------------------------------------------------------------------------- facing surfaces


def facing_surface_mean(
    values: np.ndarray,
    mask_a: np.ndarray,
    a: MaskGeometry,
    mask_b: np.ndarray,
    b: MaskGeometry,
    gap_limit: float,
) -> tuple[int, float]:
    """Pixel count and mean of `values` over A's facing surface towards B (A's pixels whose gap
    to B is at most `gap_limit`); (0, nan) when that surface is empty.

    The boolean selection yields the pixels in row-major order, as indexing with their
    coordinates would, so the mean is the same number to the last bit.
    """
    y0, x0, facing = facing_window(mask_a, a, mask_b, b, reach_for_gap(gap_limit))
    count = int(np.count_nonzero(facing))
    if count == 0:
        return 0, math.nan
    height, width = facing.shape
    return count, float(values[y0 : y0 + height, x0 : x0 + width][facing].mean())


def facing_window(
    mask_a: np.ndarray, a: MaskGeometry, mask_b: np.ndarray, b: MaskGeometry, reach: float
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
        distance = _distance_to(mask_b[wy0 : wy1 + 1, wx0 : wx1 + 1])
        within = distance[oy0 - wy0 : oy1 - wy0 + 1, ox0 - wx0 : ox1 - wx0 + 1] <= reach
    elif method == "kd":
        within = _within_reach_kd(edge_b, candidates, oy0, ox0, reach)
    else:
        within = _within_reach_spans(edge_b, oy0, ox0, candidates.shape, reach)
    facing[region] |= candidates & within
    return cy0, cx0, facing


def _distance_to(mask: np.ndarray) -> np.ndarray:
    """Each pixel's Euclidean distance to the nearest set pixel of `mask` (0 on them): scipy's EDT."""
    from scipy import ndimage  # here, not at the top: the Space imports the rules, not this (0.5 s of its start)

    return ndimage.distance_transform_edt(~mask)


def _within_reach_kd(edge: np.ndarray, candidates: np.ndarray, y0: int, x0: int, reach: float) -> np.ndarray:
    """Which set pixels of `candidates` (a window with top-left pixel (y0, x0)) lie within `reach`
    of one of the `edge` points, by KD-tree queries.

    Square tiles are settled whole where their centre is far enough inside or outside the reach
    (triangle inequality: every pixel of a t × t tile is within (t − 1)/√2 of its centre); the
    others are split in four, down to single pixels, so only pixels near the rim are queried.
    """
    from scipy.spatial import cKDTree

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
