"""The model detail's figures: drawn from the data their CSVs hold, in the colour-blind-safe palette."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from evaluator.report.plots import CAUSE_COLORS
from evaluator.results import CAUSES
from leaderboard.store.ranking import PAPER_ROWS
from leaderboard.store.sqlite_store import Entry
from negt2ibench.core import palette
from space.tabs.leaderboard import detail_figures as figures


def test_accuracy_frame_holds_every_setting_and_category_of_a_row():
    sd15 = PAPER_ROWS[0]  # Table 3's SD 1.5 row, as the paper prints it
    frame = figures.accuracy_frame([(sd15["model"], sd15)])
    settings = frame[frame["axis"] == "setting"]
    assert settings["key"].tolist() == ["1:0", "0:1", "2:0", "1:1", "0:2", "2:1", "1:2", "2:2"]
    assert settings["accuracy"].tolist() == [36.1, 44.1, 7.3, 9.7, 14.0, 1.8, 2.4, 0.5]
    assert settings["load"].tolist() == [1, 1, 2, 2, 2, 3, 3, 4]
    categories = frame[frame["axis"] == "category"]
    assert dict(zip(categories["key"], categories["accuracy"], strict=True)) == {
        "color": 27.7,
        "material": 22.8,
        "comparative": 8.9,
        "depth": 8.8,
        "directional": 9.6,
        "proximity": 9.1,
    }
    only = figures.accuracy_frame([("M", {"1:0": 50.0, "overall": 3.0})], categories=False)
    assert only[["key", "accuracy"]].values.tolist() == [["1:0", 50.0]]  # what a row lacks is left out


def test_the_csv_is_the_figures_data_and_formulas_are_neutralised():
    frame = figures.accuracy_frame([("=HYPERLINK(1)", {"1:0": 10.0})])
    figure = figures.accuracy_figure(frame, "=HYPERLINK(1)")
    bars = [bar.get_height() for bars in figure.axes[0].containers for bar in bars]
    assert bars[0] == 10.0 and all(math.isnan(height) for height in bars[1:])  # 1:0 only
    back = pd.read_csv(io.StringIO(figures.figure_csv(frame)))
    assert back["model"].tolist() == ["'=HYPERLINK(1)"] and back["accuracy"].tolist() == [10.0]


def test_causes_long_shares_and_stacked_bars():
    causes = pd.DataFrame(
        [{"category": "color", **{c: 0 for c in CAUSES}, "forbidden_rendered": 3, "wrong_value": 1, "failed": 4}]
    )
    long = figures.causes_long(causes)
    assert dict(zip(long["cause"], long["share"], strict=True))["forbidden_rendered"] == 0.75
    figure = figures.causes_figure(long, "m")
    heights = sorted(
        round(bar.get_height(), 6) for bars in figure.axes[0].containers for bar in bars if bar.get_height()
    )
    assert heights == [25.0, 75.0]
    assert figures.causes_figure(figures.causes_long(causes.iloc[0:0]), "").axes[0].texts  # says there is nothing


# Colour-vision deficiency simulation, Machado, Oliveira & Fernandes (2009), "A physiologically-based
# model for simulation of color vision deficiency", IEEE TVCG 15(6), Table 2 at severity 1.0
# (linear RGB), as colorspacious and DaltonLens use it.
CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
    "normal": np.eye(3).tolist(),
}


def _lab(color: str, matrix) -> np.ndarray:
    """CIELAB (D65) of `color` as seen through `matrix` (sRGB decoded to linear, simulated, clipped)."""
    srgb = np.asarray(to_rgb(color))
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    seen = np.clip(np.asarray(matrix) @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ seen
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 216 / 24389, np.cbrt(t), (24389 / 27 * t + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colors) -> dict[str, float]:
    """Per vision, the smallest CIE76 colour difference between two of `colors`."""
    return {
        vision: min(
            float(np.linalg.norm(_lab(a, m) - _lab(b, m))) for i, a in enumerate(colors) for b in colors[i + 1 :]
        )
        for vision, m in CVD.items()
    }


@pytest.mark.parametrize("colors", [list(CAUSE_COLORS.values()), [palette.POSITIVE, palette.NEGATED]])
def test_plot_colours_stay_apart_under_every_colour_vision_deficiency(colors):
    # Okabe & Ito (2008): the eight colours, by their published hex values; grey for "neither".
    okabe_ito = {"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#999999"}
    assert set(colors) <= okabe_ito and len(set(colors)) == len(colors)
    assert min(closest_pair(colors).values()) > 15  # ΔE 18.3 at worst (deuteranopia) for the causes


def test_the_cvd_check_fails_the_palette_it_replaced():
    seaborn_deep = ["#4c72b0", "#8172b2", "#c44e52", "#dd8452", "#8c8c8c"]  # the causes' former colours
    assert closest_pair(seaborn_deep)["protanopia"] < 5  # blue and purple: one colour to a protanope


def test_an_entry_not_verified_is_marked_claimed_in_the_figures(tmp_path):
    from leaderboard.store.sqlite_store import SQLiteStore
    from space.shared_state import WorkDir
    from space.tabs.leaderboard.detail_figures_tab import DetailFigures

    store = SQLiteStore(tmp_path / "lb.sqlite")
    for name, status in (("Sure", "verified"), ("Maybe", "pending")):
        row = {"model": name, "1:0": 40.0, "overall": 10.0}
        detail = {"failure_causes": {"color": {"wrong_value": 3, "failed": 3}}}  # something to draw in each figure
        store.add_submission(
            Entry(model_name=name, model_key=name.lower(), submitter=name, status=status, row=row, detail=detail)
        )
    work = WorkDir()
    try:
        on = DetailFigures(store, work)
        sure, _, _ = (update["value"] for update in on.figures("Sure"))  # each shown: it has content
        maybe, maybe_causes, files = (update["value"] for update in on.figures("Maybe"))
        assert all(update["visible"] for update in on.figures("Maybe"))
        assert sure.get_suptitle() == "Sure: accuracy by setting"
        assert maybe.get_suptitle() == "claimed, not verified\nMaybe: accuracy by setting"
        assert maybe_causes.get_suptitle().startswith("claimed, not verified\n") and len(files) == 3
        for figure in (maybe, maybe_causes):  # and across the bars, whatever becomes of the title
            assert all(any(t.get_text() == "claimed, not verified" for t in axis.texts) for axis in figure.axes)
        assert not any(t.get_text() == "claimed, not verified" for axis in sure.axes for t in axis.texts)
        for path in files:  # every CSV says it: its name, and every line
            assert path.endswith("_claimed_not_verified.csv")
            assert set(pd.read_csv(path)["verification"]) <= {"claimed, not verified (pending)"}
        assert "verification" in pd.read_csv(files[0]) and len(pd.read_csv(files[0])) == 1
        nobody = on.figures("Nobody")  # no such model: nothing drawn, no empty frame, no file box
        assert [(update["value"], update["visible"]) for update in nobody[:2]] == [(None, False), (None, False)]
        assert nobody[2]["visible"] is False
    finally:
        work.cleanup()
