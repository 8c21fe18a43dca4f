"""The spot check of a submission: re-score k of its images from the submitted images dataset.

`spot_check` compares the verdicts; `spot_check_failure` says in one line why a spot check could
not run at all (images unreachable, the models missing here, a GPU quota or memory error), so
the submission can wait, truthfully, for the next attempt (`space.submissions`).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from dataset_builder.layout import split_files, split_glob
from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.results import ResultRecord
from negt2ibench.core.errors import MissingWeightsError, NegT2IError, UserError


class ImagesUnreachable(UserError, RuntimeError):
    """The submitted images dataset cannot be read from here."""


class ImageSource(Protocol):
    def image(self, prompt_id: str, sample_index: int) -> Image.Image:
        """The submitted image; raises ImagesUnreachable if it cannot be read."""


# Re-scores one image: (image, prompt, model_key, sample_index) -> result.
ScoreFn = Callable[[Image.Image, PromptRecord, str, int], ResultRecord]
# Opens the images of a submission: (repo_id, revision, split) -> ImageSource.
ImageSourceFactory = Callable[[str, str, str], ImageSource]


class ParquetImages:
    """Images of one split read from parquet files (a local dataset folder or Hub paths)."""

    def __init__(self, files: Sequence[str], filesystem: Any = None):
        if not files:
            raise ImagesUnreachable("no image parquet files for this split")
        self.files = list(files)
        self.filesystem = filesystem

    @classmethod
    def from_folder(cls, folder: str | Path, split: str) -> ParquetImages:
        """A dataset folder laid out as the Hub repo: ``images/<split>-*.parquet`` (`dataset_builder.layout`)."""
        files = [str(path) for path in split_files(folder, split)]
        if not files:
            raise ImagesUnreachable(f"images not reachable: no {split_glob(split)} in {folder}")
        return cls(files)

    def image(self, prompt_id: str, sample_index: int) -> Image.Image:
        import pyarrow.dataset as ds

        try:
            dataset = ds.dataset(self.files, format="parquet", filesystem=self.filesystem)
            table = dataset.to_table(
                columns=["image"],
                filter=(ds.field("prompt_id") == prompt_id) & (ds.field("sample_index") == sample_index),
            )
        except Exception as error:  # noqa: BLE001 - any read failure means: not reachable
            raise ImagesUnreachable(f"images not reachable: {type(error).__name__}: {error}") from None
        if table.num_rows == 0:
            raise ImagesUnreachable(f"images dataset has no image for {prompt_id} sample {sample_index}")
        from evaluator.images import ImageError, load_image

        cell = table.column("image")[0].as_py()
        data = cell["bytes"] if isinstance(cell, dict) else cell
        try:
            return load_image(data)
        except ImageError as error:
            raise ImagesUnreachable(f"{prompt_id} sample {sample_index} is not a usable image: {error}") from None


def hub_images(repo_id: str, revision: str, split: str) -> ImageSource:
    """The images split of a Hub dataset repo, read lazily over HTTP (only the rows needed)."""
    try:
        from huggingface_hub import HfFileSystem

        filesystem = HfFileSystem(token=os.environ.get("HF_TOKEN"))
        files = filesystem.glob(f"datasets/{repo_id}@{revision or 'main'}/{split_glob(split)}")
    except Exception as error:  # noqa: BLE001 - offline, missing repo, private repo ...
        raise ImagesUnreachable(f"images not reachable: {type(error).__name__}: {error}") from None
    if not files:
        raise ImagesUnreachable(f"images not reachable: {repo_id}@{revision} has no {split_glob(split)}")
    return ParquetImages(files, filesystem=filesystem)


def spot_check(
    results: list[ResultRecord],
    images: ImageSource,
    prompts: PromptIndex,
    score: ScoreFn,
    *,
    k: int,
    seed: int | None = None,
) -> list[str]:
    """Re-score k random submitted images; the list of disagreements (empty when all agree)."""
    chosen = random.Random(seed).sample(results, min(k, len(results)))
    mismatches = []
    for submitted in chosen:
        image = images.image(submitted.prompt_id, submitted.sample_index)
        rescored = score(image, prompts[submitted.prompt_id], submitted.model_key, submitted.sample_index)
        ours = [s.satisfied for s in rescored.statements]
        theirs = [s.satisfied for s in submitted.statements]
        if rescored.passed != submitted.passed or ours != theirs:
            mismatches.append(
                f"{submitted.prompt_id} sample {submitted.sample_index}: submitted "
                f"{'pass' if submitted.passed else 'fail'} {theirs}, re-scored "
                f"{'pass' if rescored.passed else 'fail'} {ours}"
            )
    return mismatches


def spot_check_failure(error: BaseException) -> str:
    """Why a spot check could not run, in one line (the submission waits for the next attempt).

    Any error counts: the images dataset not reachable, the evaluator's weights missing here, a
    ZeroGPU quota error (a `gradio.Error` from `spaces`), the GPU out of memory, or anything else."""
    message = getattr(error, "message", None)  # gradio.Error's own text (its str() is a repr)
    if isinstance(error, NegT2IError):
        message = error.one_line()
    text = str(message if isinstance(message, str) else error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    if isinstance(error, ImagesUnreachable):
        return first if first.startswith("images") else f"images not reachable: {first}"
    if isinstance(error, MissingWeightsError):
        return f"the scorer's models are not on this machine ({first})"
    if "out of memory" in first.lower() or "OutOfMemory" in type(error).__name__:
        return f"the GPU ran out of memory ({type(error).__name__})"
    if "quota" in first.lower() or "gpu limit" in first.lower():
        return f"no GPU time left here now ({first})"
    return f"the spot check failed: {type(error).__name__}: {first}"
