"""Split names (= model keys) and slugs: the one rule for every name that becomes a split, a
file prefix or a record's `model_key` (the Hub's split rule, [a-z0-9_]+)."""

from __future__ import annotations

import re

from .errors import OptionError, UsageError

# A split name (= a model key): the Hub's split rule, and the prefix of the split's shard files.
SPLIT_NAME = re.compile(r"^[a-z0-9_]+$")


def check_split_name(name: str, *, what: str = "model key") -> str:
    """NAME if it is a valid split name ([a-z0-9_]+), else an `OptionError` (exit 2) that says the rule."""
    if not isinstance(name, str) or not SPLIT_NAME.match(name):
        prefix = f"{what} " if what else ""
        raise OptionError(
            f"{prefix}{name!r} is not a valid split name: use lowercase letters, digits and _ only ([a-z0-9_]+)"
        )
    return name


class SlugError(UsageError, ValueError):
    """A name with no letter or digit, so it has no split-safe slug."""


def slug(name: str, *, fallback: str | None = None) -> str:
    """The split-safe key of a free-form name: lower case, every run of other characters as one `_`.

    ``slug(" SD 1.5 + NegationCLIP ") == "sd_1_5_negationclip"``; ``slug("my__model") == "my_model"``.
    A name with no letter or digit gives `fallback`, or raises `SlugError` when there is none.
    """
    key = re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")
    if key:
        return key
    if fallback is not None:
        return fallback
    raise SlugError(f"name {name!r} has no letters or digits")
