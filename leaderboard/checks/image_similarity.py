"""Whether a submitted image is its regeneration: SSIM of the two in grey at 64 x 64.

The measure and why it is this one: `leaderboard.checks.regeneration_policy`'s docstring. A module of its own so
that what imports the regeneration plan (the Space's job keeper) does not import scikit-image; the
verification job (`leaderboard.checks.regeneration_run`) and `benchmarks/regeneration_calibration.py` do.
"""

from __future__ import annotations

from typing import Any

SIMILARITY_SIDE = 64  # both images are compared in grey at this size


def grey_pixels(image: Any, side: int = SIMILARITY_SIDE):
    """The image in grey at SIDE x SIDE (area-averaged when shrunk), as floats in [0, 1].

    Args:
        image: a PIL image.
        side: the side of the square it is resized to.

    Returns:
        A SIDE x SIDE float64 array.
    """
    import numpy as np
    from PIL import Image

    grey = image.convert("L").resize((side, side), Image.Resampling.BOX)
    return np.asarray(grey, dtype=np.float64) / 255.0


def image_similarity(first: Any, second: Any, side: int = SIMILARITY_SIDE) -> float:
    """SSIM of two PIL images in grey at SIDE x SIDE (scikit-image, Wang et al.'s Gaussian window).

    Args:
        first: a PIL image.
        second: another.
        side: the side both are compared at (`grey_pixels`).

    Returns:
        1 for the same picture, near 0 for unrelated ones (the module's docstring).
    """
    from skimage.metrics import structural_similarity

    value = structural_similarity(
        grey_pixels(first, side),
        grey_pixels(second, side),
        data_range=1.0,
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
    )
    return float(value)
