"""Image generation for NegT2IBench: one split of the `images` config per model, resumable, sharded.

`generate_with(function, key=..., out=...)` fills a split from any function
`(prompts, seeds) -> PIL images`; `negt2ibench generate` runs the registry's models
(`generation.registry`). Exported lazily, so importing the package (the CLI does) costs nothing.
"""

from __future__ import annotations

__all__ = ["generate_with"]


def __getattr__(name: str):
    if name == "generate_with":
        from .runner import generate_with

        return generate_with
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
