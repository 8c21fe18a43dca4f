"""What a cheater does to an image to turn a failed statement into a passed one, and what honest
hardware drift does to it: the two sides the regeneration check's measure must tell apart.

Cheats (each on a square region of `share` of the image's area, placed where the edit matters):

- `recolour`: the region's hue rotated in CIELAB at equal lightness and chroma ("a non-red cup" fixed
  by turning the red cup blue), on the most colourful region;
- `paste`: the same region of another picture pasted in (an object added);
- `erase`: the region filled flat with its mean colour, or with a heavy blur of itself (an object
  removed, as a flat fill or an inpainting would), on the busiest region;
- `nudge`: another picture whose 64 x 64 brightness layout is replaced by the own image's (it then
  scores near 1 under grey SSIM at 64 px while a person sees the other picture).

Drift stand-ins for real photographs: `noisy` (Gaussian noise of a few 1/255), `blurred` (a
Gaussian blur of half a pixel), `reencoded` (a lossless WebP round trip). A shift of a pixel is not
drift (a model's output does not move) and is not among them.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image, ImageFilter


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float64)


def as_image(values: np.ndarray) -> Image.Image:
    return Image.fromarray(np.clip(np.round(values), 0, 255).astype(np.uint8))


def region_side(image: Image.Image, share: float) -> tuple[int, int]:
    """(width, height) of a region of SHARE of the area, the image's own aspect."""
    return max(1, round(image.width * share**0.5)), max(1, round(image.height * share**0.5))


def _best_region(score: np.ndarray, width: int, height: int) -> tuple[int, int]:
    """(x, y) of the WIDTH x HEIGHT window with the largest mean of SCORE."""
    from scipy.ndimage import uniform_filter

    means = uniform_filter(score, size=(height, width), mode="nearest")
    top, left = height // 2, width // 2
    inside = means[top : score.shape[0] - height + top + 1, left : score.shape[1] - width + left + 1]
    y, x = np.unravel_index(int(np.argmax(inside)), inside.shape)
    return int(x), int(y)


def colourful_region(image: Image.Image, share: float) -> tuple[int, int, int, int]:
    """(x, y, width, height) of the most colourful region of SHARE of the area (an object's colour)."""
    from skimage.color import rgb2lab

    lab = rgb2lab(pixels(image) / 255.0)
    width, height = region_side(image, share)
    x, y = _best_region(np.hypot(lab[..., 1], lab[..., 2]), width, height)
    return x, y, width, height


def busy_region(image: Image.Image, share: float) -> tuple[int, int, int, int]:
    """(x, y, width, height) of the region of SHARE of the area with the most detail (an object)."""
    from scipy.ndimage import uniform_filter

    grey = pixels(image).mean(axis=2)
    detail = np.abs(grey - uniform_filter(grey, size=7, mode="nearest"))
    width, height = region_side(image, share)
    x, y = _best_region(detail, width, height)
    return x, y, width, height


def seeded_region(image: Image.Image, share: float, seed: int) -> tuple[int, int, int, int]:
    """(x, y, width, height) of a region of SHARE of the area placed by SEED."""
    width, height = region_side(image, share)
    rng = np.random.default_rng(seed)
    return int(rng.integers(0, image.width - width + 1)), int(rng.integers(0, image.height - height + 1)), width, height


def recolour(image: Image.Image, share: float, degrees: float = 150.0) -> Image.Image:
    """The most colourful region's hue rotated by DEGREES in CIELAB, lightness and chroma kept."""
    from skimage.color import lab2rgb, rgb2lab

    x, y, width, height = colourful_region(image, share)
    values = pixels(image) / 255.0
    lab = rgb2lab(values[y : y + height, x : x + width])
    chroma, hue = np.hypot(lab[..., 1], lab[..., 2]), np.arctan2(lab[..., 2], lab[..., 1]) + np.deg2rad(degrees)
    lab[..., 1], lab[..., 2] = chroma * np.cos(hue), chroma * np.sin(hue)
    values[y : y + height, x : x + width] = np.clip(lab2rgb(lab), 0, 1)
    return as_image(values * 255.0)


def paste(image: Image.Image, other: Image.Image, share: float, seed: int = 0) -> Image.Image:
    """The region placed by SEED replaced with the same region of OTHER (resized to IMAGE's size)."""
    x, y, width, height = seeded_region(image, share, seed)
    pasted = image.convert("RGB").copy()
    pasted.paste(other.convert("RGB").resize(image.size).crop((x, y, x + width, y + height)), (x, y))
    return pasted


def erase(image: Image.Image, share: float, fill: str = "flat") -> Image.Image:
    """The busiest region filled with its mean colour (`flat`) or a blur of the image (`blur`)."""
    x, y, width, height = busy_region(image, share)
    values = pixels(image)
    if fill == "flat":
        values[y : y + height, x : x + width] = values[y : y + height, x : x + width].reshape(-1, 3).mean(axis=0)
    else:
        smooth = pixels(image.convert("RGB").filter(ImageFilter.GaussianBlur(max(width, height) / 2)))
        values[y : y + height, x : x + width] = smooth[y : y + height, x : x + width]
    return as_image(values)


def nudge(other: Image.Image, own: Image.Image, side: int = 64) -> Image.Image:
    """OTHER with its SIDE x SIDE brightness layout replaced by OWN's: the detail is OTHER's."""

    def layout(image: Image.Image) -> np.ndarray:
        small = (
            image.convert("RGB").resize((side, side), Image.Resampling.BOX).resize(own.size, Image.Resampling.BILINEAR)
        )
        return pixels(small).mean(axis=2, keepdims=True)

    resized = other.convert("RGB").resize(own.size)
    return as_image(pixels(resized) + layout(own) - layout(resized))


def noisy(image: Image.Image, sigma: float, seed: int = 0) -> Image.Image:
    """Gaussian noise of SIGMA (in 1/255) on every channel, seeded."""
    values = pixels(image)
    return as_image(values + np.random.default_rng(seed).normal(0.0, sigma, values.shape))


def blurred(image: Image.Image, radius: float = 0.5) -> Image.Image:
    return image.convert("RGB").filter(ImageFilter.GaussianBlur(radius))


def reencoded(image: Image.Image) -> Image.Image:
    """A lossless WebP round trip (an encoder that is not the PNG one, and no JPEG loss)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="WEBP", lossless=True)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def photographs() -> dict[str, Image.Image]:
    """Real photographs shipped with scikit-image (no download)."""
    from skimage import data

    names = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "retina")
    found: dict[str, Any] = {name: getattr(data, name)() for name in names}
    left, right, _ = data.stereo_motorcycle()
    found["motorcycle_left"], found["motorcycle_right"] = left, right
    return {name: Image.fromarray(values) for name, values in found.items()}
