"""`leaderboard.checks.image_similarity`: the images are compared in grey at the side docs/leaderboard.md
states (*The similarity*), read from the page, not from the module's constant."""

from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from leaderboard.checks.image_similarity import grey_pixels

DOC = (Path(__file__).resolve().parents[3] / "docs" / "leaderboard.md").read_text(encoding="utf-8")


def test_images_are_compared_in_grey_at_the_documented_side():
    [side] = {int(a) for a, b in re.findall(r"in grey at ([0-9]+) × ([0-9]+)", DOC) if a == b}
    pixels = grey_pixels(Image.new("RGB", (300, 200), (255, 255, 255)))
    assert pixels.shape == (side, side) and pixels.min() == pixels.max() == 1.0  # white is 1 in [0, 1]
