"""What one image split needs made: the prompts, the (prompt, sample) work items, and their seeds.

The seed of each image depends only on (prompt_id, sample_index), so an image is the same
whatever the batch size, the rank that made it, or the run that resumed it (on one device type).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dataset_builder.layout import prompt_file
from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptRecord
from negt2ibench.core.atomic import recover_folder
from negt2ibench.core.errors import UsageError
from negt2ibench.core.options import check, positive_int

from .shards import ImageKey

SEED_RULE = "int.from_bytes(sha256(f'{prompt_id}:{sample_index}')[:4], 'big') & 0x7fffffff"


def image_seed(prompt_id: str, sample_index: int) -> int:
    """A stable 31-bit seed from (prompt_id, sample_index): no dependence on order or rank."""
    digest = hashlib.sha256(f"{prompt_id}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class WorkItem:
    """One image to make."""

    prompt_id: str
    sample_index: int
    prompt: str
    seed: int

    @property
    def key(self) -> ImageKey:
        return (self.prompt_id, self.sample_index)


def prompts_for(out: str | Path | None, source: str | Path | None = None) -> list[PromptRecord]:
    """The prompts a split is made for: SOURCE if given; else OUT's if it is a built dataset; else the corpus.

    A dataset folder whose rebuild was killed mid-swap is put right first (`negt2ibench.core.atomic.recover_folder`)."""
    if out is not None:
        recover_folder(out)
    if source:
        return load_prompts(source)
    if out is not None and prompt_file(out) is not None:
        return load_prompts(out)
    return load_prompts(None)


def select_prompts(
    prompts: Sequence[PromptRecord],
    categories: Iterable[str] | None = None,
    settings: Iterable[str] | None = None,
    limit: int | None = None,
) -> list[PromptRecord]:
    """Prompts of the chosen categories and settings, in corpus order, the first LIMIT of them.

    A category or setting the prompts do not hold is a `UsageError` (exit 2) listing those they do.
    """
    wanted_categories = set(categories) if categories else None
    wanted_settings = set(settings) if settings else None
    for name, wanted, known in (
        ("category", wanted_categories, {p.category for p in prompts}),
        ("setting", wanted_settings, {p.setting for p in prompts}),
    ):
        unknown = sorted((wanted or set()) - known)
        if unknown:
            raise UsageError(f"unknown {name} {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if limit is not None:
        limit = check("limit", limit, positive_int)
    chosen = [
        p
        for p in prompts
        if (wanted_categories is None or p.category in wanted_categories)
        and (wanted_settings is None or p.setting in wanted_settings)
    ]
    return chosen[:limit] if limit is not None else chosen


def plan_work(prompts: Sequence[PromptRecord], num_images: int) -> list[WorkItem]:
    """Every (prompt, sample) pair, prompt-major: the order ranks split and resume in."""
    num_images = check("num_images", num_images, positive_int)
    return [
        WorkItem(p.prompt_id, index, p.prompt, image_seed(p.prompt_id, index))
        for p in prompts
        for index in range(num_images)
    ]
