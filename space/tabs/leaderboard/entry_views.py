"""Pure views of what the verification job found about an entry's images: reproduced or not, the
regenerated pairs side by side, and the fresh draw (`leaderboard.checks.regeneration_run`,
`leaderboard.checks.fresh_draw_run`).

- `reproduction_mark(entry)` (`leaderboard.store.ranking`): "" for an entry whose sampled images were
  regenerated and found the model's own; else `images not reproduced` (the model cannot be loaded, or
  the check never ran: nothing counts as reproduced without it). The leaderboard's status cell, the
  CSV, the model detail and the `.eval_results` notes carry it.
- `fresh_cells(entry)`: the board's fresh-draw accuracy and its gap cell ("−9.0 [−13.2, −4.9] ⚑":
  ⚑ when the gap's interval excludes 0).
- `entry_page(entry)`: the entry's page (`?entry=ID` in the Space): status, the regeneration check,
  the fresh draw and its seed, as Markdown with every submitted string as plain text; and
  `pair_images(entry)`: each shown pair as one picture (submitted | regenerated) with a caption.
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any

from leaderboard.checks.fresh_draw_policy import CELLS
from leaderboard.store.entries import Entry, FreshDraw
from leaderboard.store.ranking import (
    NOT_REPRODUCED,
    reproduced,
    reproduction_mark,
    verification_label,
    why_not_reproduced,
)
from leaderboard.text.submitted_names import plain_markdown

__all__ = ["NOT_REPRODUCED", "entry_page", "fresh_cells", "pair_images", "reproduction_mark", "why_not_reproduced"]
FLAG = "⚑"
MISSING = "–"


def _signed(value: float) -> str:
    return f"{value:+.1f}".replace("-", "−")


def gap_text(draw: FreshDraw) -> str:
    """The gap (fresh − public, points) with its interval, flagged when the interval excludes 0."""
    low, high = draw.gap_interval
    text = f"{_signed(draw.gap)} [{_signed(low)}, {_signed(high)}]"
    return f"{text} {FLAG}" if draw.flagged else text


def fresh_cells(entry: Entry) -> tuple[float | None, str]:
    """(fresh-draw accuracy or None, the gap cell or `–`)."""
    draw = entry.fresh_draw
    if draw is None or not math.isfinite(draw.accuracy):
        return None, MISSING
    return draw.accuracy, gap_text(draw)


def fresh_lines(draw: FreshDraw) -> list[str]:
    """The fresh draw in words: both accuracies with their intervals, the gap, the seed and how to repeat it."""
    flag = f" {FLAG} its interval excludes 0" if draw.flagged else ""
    per_cell = max(1, draw.prompts // CELLS)
    return [
        f"**Fresh draw**: {draw.accuracy:.1f}% [{draw.interval[0]:.1f}, {draw.interval[1]:.1f}] on {draw.prompts} "
        f"prompts drawn from a secret seed ({draw.images} images), against {draw.public:.1f}% "
        f"[{draw.public_interval[0]:.1f}, {draw.public_interval[1]:.1f}] on the public prompts; gap "
        f"{gap_text(draw).removesuffix(' ' + FLAG)}{flag}.",
        f"Seed **{draw.seed}**, revealed now the draw is done: `negt2ibench build --seed {draw.seed}` gives its "
        f"corpus; the draw takes {per_cell} prompts per category × setting among those that ask for nothing a "
        "published prompt asks for: "
        f"`leaderboard.checks.fresh_draw_policy.fresh_prompts({draw.seed}, per_cell={per_cell})`.",
    ]


def regeneration_lines(entry: Entry) -> list[str]:
    check = entry.regeneration
    if check is None:
        return [f"**Images**: {NOT_REPRODUCED} (no regeneration check ran for it)."]
    if check.outcome == "not_reproduced":
        return [f"**Images**: {plain_markdown(check.reason)}."]
    shown = sum(bool(pair.submitted_jpeg) for pair in check.pairs)
    pictures = f" The first {shown} pairs are below (submitted | regenerated)." if shown else ""
    return [f"**Images**: {plain_markdown(check.reason)}.{pictures}"]


def entry_page(entry: Entry) -> str:
    """The entry's page as Markdown: who, what, its status, its images' check and its fresh draw."""
    text = plain_markdown
    label = verification_label(entry)
    status = entry.reason if entry.reason.startswith(f"{label}:") else f"{label}: {entry.reason}"
    lines = [
        f"### {text(entry.model_name)} (entry {entry.submission_id[:8]})",
        f"**Status**: {text(status)}",
        *regeneration_lines(entry),
    ]
    if entry.fresh_draw is not None:
        lines += fresh_lines(entry.fresh_draw)
    elif reproduced(entry) and entry.status == "verified":
        waiting = f" ({text(entry.job.message)})" if entry.job is not None and entry.job.message else ""
        lines.append(f"**Fresh draw**: not done yet{waiting}; its seed is revealed here once it is.")
    elif reproduced(entry) and entry.status in ("received", "validated", "pending", "held"):
        lines.append("**Fresh draw**: runs once the entry is verified.")
    return "\n\n".join(lines)


def _decoded(text: str) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(text))).convert("RGB")


def side_by_side(submitted: Any, regenerated: Any, gap: int = 6) -> Any:
    """One picture: the submitted image (left) and the regenerated one (right), on white."""
    from PIL import Image

    height = max(submitted.height, regenerated.height)
    canvas = Image.new("RGB", (submitted.width + gap + regenerated.width, height), "white")
    canvas.paste(submitted, (0, 0))
    canvas.paste(regenerated, (submitted.width + gap, 0))
    return canvas


def pair_images(entry: Entry) -> list[tuple[Any, str]]:
    """The shown pairs of the regeneration check: (submitted | regenerated, caption), those not the
    model's own first."""
    check = entry.regeneration
    if check is None:
        return []
    shown = []
    for pair in check.pairs:
        if not (pair.submitted_jpeg and pair.regenerated_jpeg):
            continue
        similarity = f"similarity {pair.similarity:.2f}" if pair.similarity is not None else "not regenerated"
        verdict = "the model's own" if pair.own else f"not the model's own: {pair.why}"
        caption = f"{pair.prompt_id} sample {pair.sample_index}: {similarity}, {verdict}"
        shown.append((side_by_side(_decoded(pair.submitted_jpeg), _decoded(pair.regenerated_jpeg)), caption))
    return shown
