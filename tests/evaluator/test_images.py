"""Image loading: every documented conversion, every refusal."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from evaluator.images import MAX_PIXELS, ImageError, load_image


def encode(image: Image.Image, format: str = "PNG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=format, **options)
    return buffer.getvalue()


def test_rgb_png_from_bytes_path_and_pil(tmp_path):
    pixels = np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)
    image = Image.fromarray(pixels)
    path = tmp_path / "a.png"
    image.save(path)
    for source in (encode(image), path, str(path), image):
        loaded = load_image(source)
        assert loaded.mode == "RGB" and loaded.size == (50, 40)
        assert np.array_equal(np.asarray(loaded), pixels)


def test_grayscale_becomes_rgb_with_equal_channels():
    gray = Image.fromarray(np.arange(64 * 64, dtype=np.uint8).reshape(64, 64) % 251, "L")
    loaded = np.asarray(load_image(encode(gray)))
    assert loaded.shape == (64, 64, 3)
    assert np.array_equal(loaded[..., 0], np.asarray(gray)) and np.array_equal(loaded[..., 0], loaded[..., 2])


def test_rgba_is_composited_on_white():
    rgba = np.zeros((40, 40, 4), dtype=np.uint8)
    rgba[..., 0] = 200
    rgba[:20, :, 3] = 255  # top half opaque red, bottom half fully transparent
    loaded = np.asarray(load_image(encode(Image.fromarray(rgba, "RGBA"))))
    assert tuple(loaded[5, 5]) == (200, 0, 0)
    assert tuple(loaded[30, 5]) == (255, 255, 255)


def test_la_and_palette_with_transparency_on_white():
    la = Image.fromarray(np.dstack([np.full((40, 40), 10, np.uint8), np.zeros((40, 40), np.uint8)]), "LA")
    assert tuple(np.asarray(load_image(encode(la)))[0, 0]) == (255, 255, 255)
    palette = Image.new("P", (40, 40), 1)
    palette.putpalette([0, 0, 0, 9, 9, 9] + [0] * 762)
    palette.info["transparency"] = 1
    assert tuple(np.asarray(load_image(encode(palette, transparency=1)))[0, 0]) == (255, 255, 255)


def test_cmyk_jpeg_becomes_rgb():
    cmyk = Image.new("CMYK", (40, 40), (0, 255, 255, 0))  # red
    loaded = load_image(encode(cmyk, "JPEG", quality=95))
    red, green, blue = np.asarray(loaded)[20, 20].astype(int)
    assert loaded.mode == "RGB" and red > 200 and green < 60 and blue < 60


def test_16_bit_png_is_scaled_to_8_bit():
    values = np.array([[0, 257 * 100, 65535]], dtype=np.uint16).repeat(40, axis=0).repeat(20, axis=1)
    image16 = Image.fromarray(values)  # mode I;16
    data = encode(image16)
    assert Image.open(io.BytesIO(data)).mode == "I;16"  # the input really is 16-bit
    loaded = np.asarray(load_image(data))
    assert loaded.dtype == np.uint8 and loaded[0, 0, 0] == 0 and loaded[0, 25, 0] == 100 and loaded[0, 59, 0] == 255


def test_exif_orientation_is_applied():
    pixels = np.zeros((40, 60, 3), dtype=np.uint8)
    pixels[:, :30] = 255  # left half white
    image = Image.fromarray(pixels)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    loaded = load_image(encode(image, "JPEG", exif=exif, quality=95))
    assert loaded.size == (40, 60)
    assert np.asarray(loaded)[5, 20].mean() > 200 and np.asarray(loaded)[55, 20].mean() < 50


def test_tiny_image_is_refused():
    with pytest.raises(ImageError, match="too small"):
        load_image(encode(Image.new("RGB", (31, 100))))


def test_huge_image_is_refused_from_the_header():
    # A PNG header claiming 8000×6000 (48 MP) with almost no data: refused before decoding.
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 8000, 6000, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    assert 8000 * 6000 > MAX_PIXELS
    with pytest.raises(ImageError, match="too large"):
        load_image(png)


def test_decompression_bomb_beyond_pil_limit_is_refused():
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)  # 3.6 GP: PIL's own bomb error
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")
    with pytest.raises(ImageError, match="too large"):
        load_image(png)


def test_truncated_png_is_refused():
    data = encode(Image.fromarray(np.random.default_rng(1).integers(0, 256, (100, 100, 3), dtype=np.uint8)))
    with pytest.raises(ImageError, match="truncated|corrupt"):
        load_image(data[: len(data) // 2])


@pytest.mark.parametrize("data", [b"not an image at all", b"\x89PNG\r\n\x1a\n garbage", b""])
def test_corrupt_data_is_refused(data):
    with pytest.raises(ImageError):
        load_image(data)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(ImageError, match="no image file"):
        load_image(tmp_path / "nope.png")


def test_image_error_is_a_value_error():
    assert issubclass(ImageError, ValueError)
