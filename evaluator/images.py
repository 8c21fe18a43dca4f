"""Loading and validating images before they reach the models.

Every image is returned as 8-bit RGB. Documented conversions (the image is scored afterwards):
- grayscale (L, 1), palette (P), CMYK, YCbCr, LAB, HSV → RGB;
- transparency (RGBA, LA, PA, palette with a transparent colour) → composited on white;
- 16- and 32-bit integer or float images → scaled to 8 bit (16 bit: value / 257);
- an EXIF orientation tag is applied, so the pixels are the way a viewer shows them.
Refused, with `ImageError` and a reason (the pipeline writes an error row and goes on):
- a side under 32 px, more than 40 megapixels (checked from the header, before decoding, so a
  decompression bomb is never decoded), a corrupt, truncated or unrecognised file.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from negt2ibench.core.errors import UserError

MIN_SIDE_PX = 32
MAX_PIXELS = 40_000_000
_WHITE = (255, 255, 255)


class ImageError(UserError, ValueError):
    """An image that cannot be scored; the message says why (a `UserError`, and a `ValueError`)."""


ImageSource = str | Path | bytes | Image.Image


def _open(source: ImageSource) -> Image.Image:
    if isinstance(source, Image.Image):
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not source:
            raise ImageError("empty image data")
        stream = io.BytesIO(bytes(source))
    else:
        path = Path(source)
        if not path.is_file():
            raise ImageError(f"no image file at {path}")
        stream = io.BytesIO(path.read_bytes())
    try:
        with warnings.catch_warnings():
            # PIL only warns between its own limit and twice that; ours is stricter and checked below.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            return Image.open(stream)
    except Image.DecompressionBombError as error:
        raise ImageError(f"image too large (decompression bomb guard): {error}") from None
    except UnidentifiedImageError:
        raise ImageError("not a recognised image format (corrupt or not an image)") from None
    except (OSError, SyntaxError, ValueError) as error:
        raise ImageError(f"unreadable image: {error}") from None


def check_size(width: int, height: int) -> None:
    """Raise `ImageError` for sizes the scorer refuses (too small to detect, too large to decode)."""
    if min(width, height) < MIN_SIDE_PX:
        raise ImageError(f"image too small: {width}x{height} px (each side must be at least {MIN_SIDE_PX} px)")
    if width * height > MAX_PIXELS:
        raise ImageError(
            f"image too large: {width}x{height} px = {width * height / 1e6:.1f} MP (at most {MAX_PIXELS / 1e6:.0f} MP)"
        )


def _high_bit_depth_to_8bit(image: Image.Image) -> Image.Image:
    pixels = np.asarray(image)
    if image.mode == "F":
        # Float images: [0, 1] is the usual convention; anything else is clipped to 8-bit range.
        scale = 255.0 if pixels.size and float(np.nanmax(pixels)) <= 1.0 else 1.0
        eight_bit = np.clip(np.nan_to_num(pixels) * scale, 0, 255)
    elif pixels.size and int(pixels.max()) > 255:
        eight_bit = np.clip(pixels.astype(np.float64) / 257.0, 0, 255)  # 16-bit full range → 8-bit
    else:
        eight_bit = np.clip(pixels, 0, 255)
    return Image.fromarray(np.round(eight_bit).astype(np.uint8), "L")


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        return _high_bit_depth_to_8bit(image).convert("RGB")
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, _WHITE + (255,))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def load_image(source: ImageSource) -> Image.Image:
    """Open, validate and convert an image to 8-bit RGB (see the module docstring for the rules).

    Accepts a path, encoded bytes or a PIL image; raises `ImageError` with the reason otherwise.
    """
    image = _open(source)
    check_size(*image.size)  # header only: nothing decoded yet
    try:
        image.load()
        image = ImageOps.exif_transpose(image) or image
    except Image.DecompressionBombError as error:
        raise ImageError(f"image too large (decompression bomb guard): {error}") from None
    except (OSError, SyntaxError, ValueError, EOFError) as error:
        raise ImageError(f"corrupt or truncated image: {error}") from None
    return _to_rgb(image)
