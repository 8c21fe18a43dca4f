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

import json
from dataclasses import dataclass
from pathlib import Path

from dataset_builder.layout import SPLIT_NAME, check_split_name
from evaluator.pipeline import ImageItem, resolve_source
from negt2ibench.errors import UserError

SAMPLE_FIELDS = ("prompt_id", "model_key", "sample_index", "images")
LOCATION_FIELDS = ("images", "dataset")  # where the line's dataset is: either name


@dataclass(frozen=True)
class JudgeItem:
    """One image to judge and the model key its records carry."""

    model_key: str
    image: ImageItem

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.model_key, self.image.prompt_id, self.image.sample_index)


def _sample_line(path: Path, number: int, text: str) -> dict:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{path}:{number}: not JSON ({error.msg})") from None
    if not isinstance(row, dict):
        raise UserError(f"{path}:{number}: expected an object with {', '.join(SAMPLE_FIELDS)}")
    missing = [name for name in SAMPLE_FIELDS[:3] if name not in row]
    if not any(row.get(name) for name in LOCATION_FIELDS):
        missing.append("images")
    if missing:
        raise UserError(f"{path}:{number}: missing {', '.join(missing)} (a sample line has {', '.join(SAMPLE_FIELDS)})")
    if not isinstance(row["sample_index"], int) or isinstance(row["sample_index"], bool):
        raise UserError(f"{path}:{number}: sample_index must be an integer, got {row['sample_index']!r}")
    if not isinstance(row["model_key"], str) or not SPLIT_NAME.match(row["model_key"]):
        raise UserError(f"{path}:{number}: model_key {row['model_key']!r} must match [a-z0-9_]+")
    return row


def _images_location(value: str, sample_path: Path) -> str:
    if Path(value).exists() or Path(value).is_absolute():
        return value
    beside = sample_path.parent / value
    return str(beside) if beside.exists() else value  # else: a Hub repo id, or an error from resolve_source


def annotation_sample_items(path: str | Path) -> list[JudgeItem]:
    """The images an annotation sample names, each found in its dataset split (errors name the line)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise UserError(f"cannot read the annotation sample {path}: {error.strerror or error}") from None
    wanted: list[tuple[int, dict]] = [
        (number, _sample_line(path, number, text)) for number, text in enumerate(lines, 1) if text.strip()
    ]
    if not wanted:
        raise UserError(f"{path} names no images (expected JSON lines with {', '.join(SAMPLE_FIELDS)})")
    splits: dict[tuple[str, str], dict[tuple[str, int], ImageItem]] = {}
    items: list[JudgeItem] = []
    seen: set[tuple[str, str, int]] = set()
    for number, row in wanted:
        location = _images_location(str(row.get("images") or row["dataset"]), path)
        source = (location, row["model_key"])
        if source not in splits:
            found, _ = resolve_source(location, split=row["model_key"])
            splits[source] = {(item.prompt_id, item.sample_index): item for item in found}
        image = splits[source].get((row["prompt_id"], row["sample_index"]))
        if image is None:
            raise UserError(
                f"{path}:{number}: no image {row['prompt_id']} sample {row['sample_index']} "
                f"in split {row['model_key']} of {location}"
            )
        item = JudgeItem(row["model_key"], image)
        if item.key not in seen:
            seen.add(item.key)
            items.append(item)
    return items


def judge_items(
    images: str | Path, *, split: str | None = None, prompt_id: str | None = None, model_key: str | None = None
) -> list[JudgeItem]:
    """The images of SRC: an annotation sample (`.jsonl`), or any source `score` reads."""
    path = Path(images)
    if path.suffix == ".jsonl" and path.is_file():
        if model_key:
            raise UserError("--model-key does not apply to an annotation sample: each line names its model_key")
        return annotation_sample_items(path)
    items, default_key = resolve_source(images, split=split, prompt_id=prompt_id)
    key = check_split_name(model_key or default_key, what="model key")
    return [JudgeItem(key, item) for item in items]
