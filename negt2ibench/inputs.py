"""Checks and conversions at the entry of the Python API (`negt2ibench.api`): every argument is
validated once, before any work, with an error that names it; images and prompts are normalised
once. Pure helpers, no models."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_builder.loading import prompt_index as load_prompt_index
from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import EvaluatorConfig, get_preset
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check, non_negative_int, positive_int, split_name

if TYPE_CHECKING:
    from evaluator.sources import ImageItem


def config_of(preset: str | EvaluatorConfig) -> EvaluatorConfig:
    if isinstance(preset, EvaluatorConfig):
        return preset
    if not isinstance(preset, str):
        raise TypeError(f"preset must be a preset name or an EvaluatorConfig, got {type(preset).__name__}")
    return get_preset(preset)  # UnknownPresetError (a UsageError) lists the presets


def positive(name: str, value: int) -> int:
    return check(name, value, positive_int)


def non_negative(name: str, value: int) -> int:
    return check(name, value, non_negative_int)


def check_model_key(model_key: str) -> None:
    check("model_key", model_key, split_name)


def prompt_index(source: str | Path | Iterable[PromptRecord] | None) -> PromptIndex:
    """The prompts by id: a dataset folder, prompts file or None (the built-in corpus) is read by
    `dataset_builder.loading`, whose errors are `UserError`s naming the source; records are indexed as given."""
    if source is None or isinstance(source, (str, Path)):
        return load_prompt_index(source)
    return PromptIndex(source)


def running_counts(prompt_ids: Sequence[str]) -> list[int]:
    """0, 1, 2, … for each prompt id, in order: the default sample index of each image."""
    seen: Counter[str] = Counter()
    indices = []
    for prompt_id in prompt_ids:
        indices.append(seen[prompt_id])
        seen[prompt_id] += 1
    return indices


def batches(
    entries: Sequence[tuple[ImageItem, PromptRecord | None]], size: int
) -> Iterator[list[tuple[ImageItem, PromptRecord | None]]]:
    """Consecutive batches of `size`, as `negt2ibench score` makes them. A batch is also closed
    early where an id would stand for two different records (several parsed texts are all `custom`)."""
    batch: list[tuple[ImageItem, PromptRecord | None]] = []
    meaning: dict[str, PromptRecord | None] = {}
    for item, record in entries:
        clash = item.prompt_id in meaning and meaning[item.prompt_id] != record
        if batch and (len(batch) == size or clash):
            yield batch
            batch, meaning = [], {}
        batch.append((item, record))
        meaning[item.prompt_id] = record
    if batch:
        yield batch


def image_source(image: Any, argument: str) -> Any:
    """A path, bytes or PIL image as given (read later, where an unreadable one becomes an error
    row); an array converted to a PIL image now."""
    from PIL import Image

    if isinstance(image, (str, Path, bytes, bytearray, Image.Image)):
        return image
    import numpy as np

    if not isinstance(image, np.ndarray):
        raise TypeError(
            f"{argument} must be a PIL image, a path, encoded bytes or an H×W×3 array, got {type(image).__name__}"
        )
    array = image
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (3, 4))):
        raise UserError(f"{argument}: an image array is H×W, H×W×3 or H×W×4; got shape {image.shape}")
    if array.dtype.kind == "f":
        if array.size and not (np.isfinite(array).all() and array.min() >= 0.0 and array.max() <= 1.0):
            raise UserError(f"{argument}: a float image array must hold values in [0, 1]")
        array = np.round(array * 255.0).astype(np.uint8)
    elif array.dtype != np.uint8:
        if array.dtype.kind not in "iu" or (array.size and (array.min() < 0 or array.max() > 255)):
            raise UserError(f"{argument}: an image array must be uint8 (0-255) or float in [0, 1], got {array.dtype}")
        array = array.astype(np.uint8)
    return Image.fromarray(np.ascontiguousarray(array))


def fetcher(image: Any, argument: str) -> Callable[[], Any]:
    source = image_source(image, argument)
    return lambda: source


def rgb_image(image: Any, argument: str):
    """8-bit RGB from any accepted image; an image that cannot be scored is a UserError naming it."""
    from evaluator.images import ImageError, load_image

    try:
        return load_image(image_source(image, argument))
    except ImageError as error:
        raise UserError(f"{argument}: {error}") from None
