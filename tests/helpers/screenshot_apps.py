"""The apps the manual's pictures of the Space are taken of (`make screenshots`), built the same way by the
browser tests that take them and by tests/space/test_screenshots_current.py, which checks that each tab's
layout is still the one photographed (`tests.helpers.layouts`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dataset_builder.loading import load_prompts
from leaderboard.store.sqlite_store import SQLiteStore
from space.app import build_app
from tests.helpers.jobs_helpers import double_jobs
from tests.helpers.space_helpers import RectanglePerception


def screenshot_app(tmp_path: Path, store: SQLiteStore, open_images: Any) -> Any:
    """tests/space/test_browser.py's app: the rectangle double scores, a verification job that waits."""
    return build_app(
        prompts=load_prompts(None),
        store=store,
        perception=RectanglePerception(),
        open_images=open_images,
        board_refresh_every=2.0,  # the awaiting list is read again this often while something waits
        # the submission's verification job: the real command, the rectangle double as its scorer;
        # its images repo is in no folder it reads, so it waits
        verify_backend=double_jobs(store.locator(), tmp_path / "jobs", images_from=tmp_path / "no-hub"),
        recheck_every=0.5,
    )


# tests/space/test_annotate_browser.py's sample: five prompts, one image each.
ANNOTATE_PROMPT_IDS = (
    "color_pos0_neg1_000",
    "directional_pos1_neg1_000",
    "material_pos1_neg1_000",
    "comparative_pos1_neg0_000",
    "depth_pos0_neg2_000",
)


def annotate_sample(tmp_path: Path) -> tuple[list[Any], Path]:
    """The annotation sample of tests/space/test_annotate_browser.py: its prompts and its sample file."""
    from dataset_builder.records import PromptIndex
    from tests.helpers.annotate_helpers import images_dataset, sample_of

    index = PromptIndex(load_prompts(None))
    prompts = [index[p] for p in ANNOTATE_PROMPT_IDS]
    sample_file = tmp_path / "sample.jsonl"
    sample_of(images_dataset(tmp_path / "ds", prompts), prompts, out=sample_file)
    return prompts, sample_file


def annotate_app(store: SQLiteStore, sample_file: Path) -> Any:
    """tests/space/test_annotate_browser.py's app: the Annotate tab on its sample."""
    return build_app(prompts=load_prompts(None), store=store, annotation_sample=sample_file, preload=False)
