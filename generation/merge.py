"""Merge step of a (multi-rank) run: check a split's completeness and refresh the dataset card."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dataset_builder.records import PromptRecord

from .shards import CompletenessReport, check_completeness, drop_duplicates


def expected_keys(prompts: Sequence[PromptRecord], num_images: int) -> list[tuple[str, int]]:
    return [(p.prompt_id, index) for p in prompts for index in range(num_images)]


def merge_split(
    dataset_dir: Path,
    key: str,
    prompts: Sequence[PromptRecord],
    num_images: int,
    remove_duplicates: bool = False,
) -> CompletenessReport:
    """Check that the split holds prompts × num_images images exactly once (optionally fix duplicates)."""
    removed = drop_duplicates(dataset_dir, key) if remove_duplicates else 0
    report = check_completeness(dataset_dir, key, expected_keys(prompts, num_images))
    report.removed_duplicates = removed
    return report


def refresh_card(dataset_dir: Path) -> str:
    """Re-render DIR/README.md so its `images` config lists this split; a line saying what happened."""
    try:
        from dataset_builder.card import write_card
    except ImportError:
        return "dataset card not refreshed: dataset_builder.card is not available in this install"
    path = write_card(Path(dataset_dir))
    return f"dataset card refreshed: {path}"
