"""Where a judge's images come from: everything `negt2ibench score` reads, plus an annotation sample.

The annotation sample (written by `negt2ibench annotation-sample`) is a JSONL file whose lines
name images across several models' splits::

    {"prompt_id": "color_pos1_neg1_004", "model_key": "sd_1_5", "sample_index": 2, "images": "build/negt2ibench"}

`images` is the dataset folder (or Hub repo id) whose split `model_key` holds the image; a
relative folder is looked up from the working directory, then next to the sample file.
`dataset` is accepted in its place (the name `annotation-sample`'s `SampleItem` uses). Other
fields on a line (category, setting, shard, row, ...) are ignored. Each record keeps its line's
`model_key`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, StrictInt, field_validator, model_validator

from evaluator.sources import ImageItem, resolve_source
from negt2ibench.core.errors import UserError
from negt2ibench.core.jsonl import read_jsonl
from negt2ibench.core.names import SPLIT_NAME, check_split_name


@dataclass(frozen=True)
class JudgeItem:
    """One image to judge and the model key its records carry."""

    model_key: str
    image: ImageItem

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.model_key, self.image.prompt_id, self.image.sample_index)


class SampleLine(BaseModel):
    """One line of an annotation sample: an image key and the dataset that holds it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    prompt_id: str
    model_key: str
    sample_index: StrictInt
    images: str = ""
    dataset: str = ""  # `annotation-sample`'s name for the same thing

    @field_validator("model_key")
    @classmethod
    def _split_name(cls, value: str) -> str:
        if not SPLIT_NAME.match(value):
            raise ValueError("must be a split name ([a-z0-9_]+)")
        return value

    @model_validator(mode="after")
    def _has_location(self) -> SampleLine:
        if not (self.images or self.dataset):
            raise ValueError("needs images (or dataset): the dataset folder or Hub repo holding the image")
        return self

    @property
    def location(self) -> str:
        return self.images or self.dataset


def _images_location(value: str, sample_path: Path) -> str:
    if Path(value).exists() or Path(value).is_absolute():
        return value
    beside = sample_path.parent / value
    return str(beside) if beside.exists() else value  # else: a Hub repo id, or an error from resolve_source


def annotation_sample_items(path: str | Path) -> list[JudgeItem]:
    """The images an annotation sample names, each found in its dataset split (duplicates once).

    Args:
        path: an annotation sample (JSON lines with prompt_id, model_key, sample_index, images).

    Returns:
        One item per image, in the sample's order.

    Raises:
        UserError: a sample that names no image, or an image not in its split.
    """
    path = Path(path)
    lines = read_jsonl(path, SampleLine.model_validate_json, kind="sample")
    if not lines:
        raise UserError(f"{path} names no images (expected JSON lines with prompt_id, model_key, sample_index, images)")
    splits: dict[tuple[str, str], dict[tuple[str, int], ImageItem]] = {}
    items: list[JudgeItem] = []
    seen: set[tuple[str, str, int]] = set()
    for line in lines:
        location = _images_location(line.location, path)
        source = (location, line.model_key)
        if source not in splits:
            found, _ = resolve_source(location, split=line.model_key)
            splits[source] = {(item.prompt_id, item.sample_index): item for item in found}
        image = splits[source].get((line.prompt_id, line.sample_index))
        if image is None:
            raise UserError(
                f"{path}: no image {line.prompt_id} sample {line.sample_index} in split {line.model_key} of {location}"
            )
        item = JudgeItem(line.model_key, image)
        if item.key not in seen:
            seen.add(item.key)
            items.append(item)
    return items


def judge_items(
    images: str | Path, *, split: str | None = None, prompt_id: str | None = None, model_key: str | None = None
) -> list[JudgeItem]:
    """The images of SRC: an annotation sample (`.jsonl`), or any source `score` reads.

    Args:
        images: an annotation sample, or a folder, dataset or image file.
        split: the dataset's split to judge.
        prompt_id: the prompt of a single image file.
        model_key: the images' model key (default: the source's; not with a sample).

    Returns:
        The images to judge, each with its model key.

    Raises:
        UserError: a model key given with a sample, or a source that cannot be read.
        OptionError: a model key that is not a split name.
    """
    path = Path(images)
    if path.suffix == ".jsonl" and path.is_file():
        if model_key:
            raise UserError("--model-key does not apply to an annotation sample: each line names its model_key")
        return annotation_sample_items(path)
    items, default_key = resolve_source(images, split=split, prompt_id=prompt_id)
    key = check_split_name(model_key or default_key, what="model key")
    return [JudgeItem(key, item) for item in items]
