"""Merge step of a (multi-process) run: check a split's completeness and refresh the dataset card."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dataset_builder.card import write_card
from dataset_builder.records import PromptRecord
from negt2ibench.core.launch import Launch

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
    """Re-render DIR/README.md so its `images` config lists every split; a line saying what happened.

    A folder without prompts (images written before `build`) keeps no card: the line says how to add one.
    """
    try:
        path = write_card(Path(dataset_dir))
    except FileNotFoundError as error:
        return f"dataset card not refreshed ({error}); run `negt2ibench build --out {dataset_dir}` to add the prompts"
    return f"dataset card refreshed: {path}"


def finish_split(
    dataset_dir: Path, key: str, prompts: Sequence[PromptRecord], num_images: int, launch: Launch
) -> tuple[CompletenessReport, str] | None:
    """Once every process has written its share: on the main process, check the split and refresh
    the card, and return (report, card line); None on the other processes."""
    return launch.on_main(
        lambda: (merge_split(Path(dataset_dir), key, prompts, num_images), refresh_card(Path(dataset_dir)))
    )
