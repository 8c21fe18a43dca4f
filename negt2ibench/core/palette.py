"""The colour-blind-safe palette of every plot (Okabe & Ito, "Color Universal Design", 2008):
eight colours that stay distinct under the common colour-vision deficiencies (protanopia,
deuteranopia, tritanopia) and in greyscale by lightness, as matplotlib's and seaborn's
colour-blind palettes use them.

`SERIES` colours one series after another (models, cause bars); `POSITIVE` and `NEGATED` are the
two polarities wherever they are compared. The corpus figures keep the paper's own colours
(`dataset_builder.figures`).
"""

from __future__ import annotations

ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
REDDISH_PURPLE = "#CC79A7"
BLACK = "#000000"
GREY = "#999999"  # not one of the eight: for what is neither (a dead zone, a reference)

SERIES: tuple[str, ...] = (BLUE, ORANGE, BLUISH_GREEN, VERMILLION, REDDISH_PURPLE, SKY_BLUE, YELLOW, BLACK)
POSITIVE, NEGATED = BLUE, VERMILLION


def series_color(index: int) -> str:
    """The colour of the `index`-th series (the palette again after eight)."""
    return SERIES[index % len(SERIES)]
