"""Nothing shown empty: a component's visibility from what it holds (several tabs wire it after an event).

`shown_if_filled(*values)` gives, for each value an event wrote, an update showing its component only
when it holds something: an image, a non-empty table, a non-empty gallery, a file. A panel without content
is hidden rather than drawn as an empty frame; what would fill it is said in a sentence beside it.

`MOUNTED_HIDDEN` is for a component that a page load fills and shows in one update: gradio 6 does not
mount a `visible=False` component, and mounting it lazily while its value arrives can lose the value on a
busy page (gradio-app/gradio#12511: the Leaderboard's plot stayed an empty frame). One built and hidden
with `MOUNTED_HIDDEN`, and hidden again the same way (`shown_or_hidden`), is mounted from the start.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import gradio as gr
import pandas as pd

MOUNTED_HIDDEN: Final = "hidden"  # gradio's `visible="hidden"`: in the page, not displayed


def shown_or_hidden(show: bool) -> bool | Literal["hidden"]:
    """The `visible` of a component kept mounted while hidden: True, or `MOUNTED_HIDDEN` (never False)."""
    return True if show else MOUNTED_HIDDEN


def filled(value: Any) -> bool:
    """Whether a component's value has something to show.

    Args:
        value: an image, a table (a DataFrame, or gradio's `{"headers", "data"}`), a gallery's list, a path.

    Returns:
        False for None, "", an empty list and a table without rows; True otherwise.
    """
    if value is None:
        return False
    if isinstance(value, pd.DataFrame):
        return not value.empty
    if isinstance(value, dict) and "data" in value:
        return bool(value["data"])
    if isinstance(value, (list, tuple, str)):
        return len(value) > 0
    return True


def shown_if_filled(*values: Any) -> Any:
    """Each component shown only while it holds something (`filled`), its value left as it is.

    Args:
        *values: the values of the components, in the order of the event's outputs.

    Returns:
        One visibility update per value (a single update for a single value).
    """
    updates = tuple(gr.update(visible=filled(value)) for value in values)
    return updates[0] if len(updates) == 1 else updates
