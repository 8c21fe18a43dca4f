"""What a gradio output holds, as a client or a handler gives it back."""

from __future__ import annotations

from typing import Any


def shown(output: Any) -> Any:
    """An output's value: a `gr.update(value=..., visible=...)`'s value (a panel shown only with
    content answers with one), or the output itself."""
    if isinstance(output, dict) and output.get("__type__") == "update":
        return output.get("value")
    return output
