"""Checks and conversions at the entry of the Python API (`negt2ibench.api`): every argument is
validated once, before any work, with an error that names it; images and prompts are normalised
once. Pure helpers, no models."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_builder.loading import prompt_index as load_prompt_index
from dataset_builder.records import PromptIndex, PromptLookupError, PromptRecord
from evaluator.config import EvaluatorConfig, get_preset
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check, non_negative_int, positive_int, split_name

if TYPE_CHECKING:
    from evaluator.sources import ImageItem


def config_of(preset: str | EvaluatorConfig) -> EvaluatorConfig:
    """The evaluator config a preset argument stands for.

    Args:
        preset: a preset's name, or an `EvaluatorConfig` (used as given).

    Returns:
        The config.

    Raises:
        TypeError: `preset` is neither a string nor an `EvaluatorConfig`.
        UnknownPresetError: no preset has that name (a `UsageError` that lists the presets).
    """
    if isinstance(preset, EvaluatorConfig):
        return preset
    if not isinstance(preset, str):
        raise TypeError(f"preset must be a preset name or an EvaluatorConfig, got {type(preset).__name__}")
    return get_preset(preset)  # UnknownPresetError (a UsageError) lists the presets


def positive(name: str, value: int) -> int:
    """A whole number argument checked to be at least 1.

    Args:
        name: the argument's name, for the error.
        value: its value.

    Returns:
        The value, checked.

    Raises:
        OptionError: the value is not a positive whole number (a `UsageError` whose message starts with
            `name`).
    """
    return check(name, value, positive_int)


def non_negative(name: str, value: int) -> int:
    """A whole number argument checked to be at least 0.

    Args:
        name: the argument's name, for the error.
        value: its value.

    Returns:
        The value, checked.

    Raises:
        OptionError: the value is not a non-negative whole number (a `UsageError` whose message starts
            with `name`).
    """
    return check(name, value, non_negative_int)


def check_model_key(model_key: str) -> None:
    """Refuse a model key that cannot name a split of the results (`options.split_name`).

    Args:
        model_key: the key every record of a run carries.

    Raises:
        OptionError: the key is not a valid split name (a `UsageError`).
    """
    check("model_key", model_key, split_name)


def prompt_index(source: str | Path | Iterable[PromptRecord] | None) -> PromptIndex:
    """The prompts by id.

    Args:
        source: a dataset folder or prompts file, read by `dataset_builder.loading`; None for the
            built-in corpus; or prompt records, indexed as given.

    Returns:
        The prompts, by id.

    Raises:
        UserError: the folder or file cannot be read as prompts (the error names the source).
    """
    if source is None or isinstance(source, (str, Path)):
        return load_prompt_index(source)
    return PromptIndex(source)


def running_counts(prompt_ids: Sequence[str]) -> list[int]:
    """0, 1, 2, … for each prompt id, in order: the default sample index of each image.

    Args:
        prompt_ids: the images' prompt ids, in order.

    Returns:
        For each image, how many images of its prompt came before it.
    """
    seen: Counter[str] = Counter()
    indices = []
    for prompt_id in prompt_ids:
        indices.append(seen[prompt_id])
        seen[prompt_id] += 1
    return indices


def batches(
    entries: Sequence[tuple[ImageItem, PromptRecord | None]], size: int
) -> Iterator[list[tuple[ImageItem, PromptRecord | None]]]:
    """Consecutive batches of `size`, as `negt2ibench score` makes them.

    A batch is also closed early where an id would stand for two different records (several parsed
    texts are all `custom`).

    Args:
        entries: (image, its prompt record or None) in scoring order.
        size: the most entries in a batch.

    Yields:
        Lists of at most `size` entries, in order, no prompt id in one batch meaning two records.
    """
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
    """An image argument as the scorer reads it.

    A path, bytes or PIL image is kept as given (read later, where an unreadable one becomes an error
    row); an array is converted to a PIL image now.

    Args:
        image: a PIL image, a path, encoded bytes, or an H×W, H×W×1, H×W×3 or H×W×4 array (uint8, or
            floats in [0, 1]).
        argument: the argument's name, for the errors.

    Returns:
        The path, bytes or PIL image given, or the array as a PIL image.

    Raises:
        TypeError: `image` is none of the accepted kinds.
        UserError: an array of another shape, or with values out of range.
    """
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
    """A loader of one image argument, as an `ImageItem` fetches its image.

    Args:
        image: any image `image_source` accepts.
        argument: the argument's name, for the errors.

    Returns:
        A function that returns `image_source(image, argument)` (an array is converted once, now).

    Raises:
        TypeError: as `image_source`.
        UserError: as `image_source`.
    """
    source = image_source(image, argument)
    return lambda: source


def rgb_image(image: Any, argument: str):
    """8-bit RGB from any accepted image.

    Args:
        image: any image `image_source` accepts.
        argument: the argument's name, for the errors.

    Returns:
        The image as an 8-bit RGB PIL image.

    Raises:
        TypeError: as `image_source`.
        UserError: the image cannot be scored (unreadable, empty, too large ...), naming `argument`.
    """
    from evaluator.images import ImageError, load_image

    try:
        return load_image(image_source(image, argument))
    except ImageError as error:
        raise UserError(f"{argument}: {error}") from None


def resolve_prompt(prompt: str | PromptRecord, prompts: PromptIndex) -> PromptRecord:
    """What a prompt argument means, the one rule of the API, `score`, `explain` and the Space.

    - a `PromptRecord` is itself;
    - a text without white space is a prompt id, looked up in PROMPTS;
    - any other text is parsed in the benchmark's grammar. When the parse equals a benchmark
      prompt (the same text, objects and statements: a benchmark prompt typed by hand), the
      result is that prompt's record, with its id and group, so it scores and reports as the
      benchmark prompt; otherwise it is the parsed record, with id `custom`.

    Args:
        prompt: a prompt record, a prompt id, or a text in the benchmark's grammar.
        prompts: the prompt records ids are looked up in.

    Returns:
        The prompt's record.

    Raises:
        TypeError: `prompt` is neither a string nor a `PromptRecord`.
        UserError: an empty text, an unknown id (the message shows what ids look like), or a text
            outside the grammar ("cannot parse the prompt: ...").
    """
    if isinstance(prompt, PromptRecord):
        return prompt
    if not isinstance(prompt, str):
        raise TypeError(
            f"prompt must be a prompt id, a PromptRecord or a text in the grammar, got {type(prompt).__name__}"
        )
    text = prompt.strip()
    if not text:
        raise UserError("prompt is empty: give a prompt id (e.g. 'color_pos1_neg0_000') or a text in the grammar")
    if not any(character.isspace() for character in text):
        try:
            return prompts[text]
        except PromptLookupError as error:  # its message shows what ids look like
            raise UserError(str(error)) from None
    from dataset_builder.grammar import PromptParseError, parse_prompt

    try:
        parsed = parse_prompt(text)
    except PromptParseError as error:
        raise UserError(f"cannot parse the prompt: {error}") from error
    known = prompts.with_text(parsed.prompt)
    if known is not None and (known.objects, known.statements) == (parsed.objects, parsed.statements):
        return known
    return parsed
