"""Pure views of the Compare tab: every verified model's images of one prompt as a table, and what
its rows are. No gradio, no store, no network: each is testable on plain data. A row, its caption
and its drawing, which the Gallery shows too, are `space.verified_images.verified_views`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from leaderboard.store.ranking import verification_label
from leaderboard.store.sqlite_store import Entry
from leaderboard.text.submitted_names import plain_markdown
from space.verified_images.verified_views import SHOWN, GalleryRow

COMPARE_COLUMNS = ["model", "sample", "verdict", "causes", "image"]


def compare_frame(shown: Sequence[tuple[str, GalleryRow | None, str]]) -> pd.DataFrame:
    """(model, row or None when the model has no image of the prompt, reason) → one row each."""
    rows = [
        {
            "model": model,
            "sample": row.sample_index if row else "",
            "verdict": row.verdict if row else "",
            "causes": ", ".join(row.causes) if row else "",
            "image": reason or SHOWN,
        }
        for model, row, reason in shown
    ]
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def rows_summary(entries: Sequence[Entry]) -> str:
    """What the rows are: each model's full name in row order, with its verification (a
    thumbnail's caption cuts a long name)."""
    if not entries:
        return "No verified entry yet: Compare shows the images of verified submissions."
    count = f"{len(entries)} verified model{'' if len(entries) == 1 else 's'}"
    rows = [
        f"{number}. **{plain_markdown(entry.model_name)}** ({plain_markdown(verification_label(entry))})"
        for number, entry in enumerate(entries, 1)
    ]
    lead = f"{count}, one row each, best overall first (the same content in its other polarities: pick one above):"
    return lead + "\n\n" + "\n".join(rows)
