"""`judges.negvqa.plot`: the originals' ticks stay visible whatever the bar beneath them."""

from __future__ import annotations

import matplotlib.colors as mcolors
from matplotlib.collections import PathCollection

from judges.negvqa.plot import ORIGINAL_TICK, domains_figure, plot_domains
from judges.negvqa.summary import summarize_judge
from tests.judges.test_negvqa_summary import judge_records


def test_original_ticks_are_black_over_the_bars_even_below_their_tops(tmp_path):
    summaries = [summarize_judge(judge_records(name), resamples=0) for name in ("small", "large")]
    for summary in summaries:  # an original below the negated bar: the tick falls inside the bar
        summary["original"]["accuracy_original"] = summary["accuracy"] - 0.25
    axes = domains_figure(summaries).axes[0]
    bars = [patch for container in axes.containers for patch in getattr(container, "patches", [])]
    ticks = [collection for collection in axes.collections if isinstance(collection, PathCollection)]
    assert len(ticks) == 2  # one row of ticks per judge
    colours = {mcolors.to_hex(color) for tick in ticks for color in tick.get_facecolor()}
    assert colours == {mcolors.to_hex(ORIGINAL_TICK)}
    assert {mcolors.to_hex(bar.get_facecolor()) for bar in bars}.isdisjoint(colours)
    assert min(tick.get_zorder() for tick in ticks) > max(bar.get_zorder() for bar in bars)
    overall = [y for tick in ticks for x, y in tick.get_offsets() if x < 0.5]
    assert len(overall) == 2 and all(y == 50.0 for y in overall)  # drawn inside the 75% bars
    assert "original questions (tick)" in [text.get_text() for text in axes.get_legend().get_texts()]
    assert plot_domains(summaries, tmp_path / "domains.png").stat().st_size > 0
