"""Synthetic masks and brute-force references shared by the rule and geometry tests."""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage


def box(y0: int, x0: int, height: int, width: int, shape: tuple[int, int] = (200, 200)) -> np.ndarray:
    mask = np.zeros(shape, bool)
    mask[y0 : y0 + height, x0 : x0 + width] = True
    return mask


def pixel(y: int, x: int, shape: tuple[int, int] = (200, 200)) -> np.ndarray:
    return box(y, x, 1, 1, shape)


def disc(cy: float, cx: float, radius: float, shape: tuple[int, int] = (200, 200)) -> np.ndarray:
    yy, xx = np.mgrid[: shape[0], : shape[1]]
    return (yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2


def reference_gap(mask_a: np.ndarray, mask_b: np.ndarray) -> float:
    """Brute force over the full image: the module's gap definition, computed the slow way."""
    if (mask_a & mask_b).any():
        return 0.0
    nearest = ndimage.distance_transform_edt(~mask_b)[mask_a].min()
    return 0.0 if nearest <= math.sqrt(2) else nearest - 1.0


def random_blobs(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    mask = np.zeros(shape, bool)
    for _ in range(rng.integers(1, 4)):
        y, x = rng.integers(0, shape[0], 2)
        h, w = rng.integers(1, shape[0] // 3, 2)
        mask[y : y + h, x : x + w] = True
    return mask


def scattered_blobs(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """A few rectangles and discs anywhere in the frame, sometimes at its border."""
    mask = random_blobs(rng, shape)
    for _ in range(rng.integers(0, 3)):
        cy, cx = rng.integers(0, shape[0], 2)
        mask |= disc(cy, cx, float(rng.uniform(1, shape[0] / 5)), shape)
    return mask
