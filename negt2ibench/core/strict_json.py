"""Values made ready for strict JSON (RFC 8259 has no NaN): NaN floats become null, tuples become
lists and keys become strings, at any depth. Every JSON file the project writes (reports, the
agreement study, the ablation) goes through `json_ready` (or `dumps`), so none holds a bare NaN."""

from __future__ import annotations

import json
import math
from typing import Any


def json_ready(value: Any) -> Any:
    """VALUE with NaN floats as None, nested dicts (keys as strings), lists and tuples included."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    return value


def dumps(value: Any, *, indent: int | None = 1) -> str:
    """`json_ready(value)` as strict JSON text (a NaN left anywhere is an error, not `NaN`), newline-ended."""
    return json.dumps(json_ready(value), indent=indent, allow_nan=False) + "\n"
