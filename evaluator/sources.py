"""Where the images to score come from: a folder, a dataset folder's image split, a Hub dataset, one file.

`resolve_source` turns what `score --images` (and `judge`, `ablate`, the Space's annotation
sample) names into `ImageItem`s: each image's key and how to fetch its bytes, read only when the
loader asks; a `Work` is one of them with its prompt (or why it has none). It opens no image and
imports no model library, so a command checks its source (and then whether the model weights are
here) before anything heavy loads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from dataset_builder.layout import has_images, image_file_key, image_splits, lacks_sample_index
from dataset_builder.records import PromptIndex, PromptLookupError, PromptRecord
from evaluator.images import ImageError, ImageSource
from negt2ibench.core.atomic import recover_folder
from negt2ibench.core.errors import UserError
from negt2ibench.core.names import slug
from negt2ibench.core.options import REPO_ID


@dataclass(frozen=True)
class ImageItem:
    """One image to score: its key and how to fetch its data (a path, bytes, or a loader)."""

    prompt_id: str
    sample_index: int
    fetch: Callable[[], ImageSource]
    label: str = ""  # where it came from, for error messages


class ImageItemLike(Protocol):
    """An image to score (`evaluator.sources.ImageItem`): its key and how to fetch its data (read only)."""

    @property
    def prompt_id(self) -> str: ...

    @property
    def sample_index(self) -> int: ...

    @property
    def fetch(self) -> Callable[[], ImageSource]: ...

    @property
    def label(self) -> str:
        """Where the image came from, for error messages and result lines."""
        ...


P = TypeVar("P")  # a prompt: a `PromptRecord`, a GenEval prompt, ...


@dataclass(frozen=True)
class Work(Generic[P]):
    """One image of the work list: the item, its prompt, or why it has none (the error row)."""

    item: ImageItemLike
    prompt: P | None
    problem: str | None = None

    @property
    def record(self) -> P:
        """The prompt of work that has one (the only work whose image reaches a forward)."""
        if self.prompt is None:
            raise ValueError(f"no prompt for {self.item.prompt_id!r}: {self.problem}")
        return self.prompt

    @staticmethod
    def look_up(item: ImageItemLike, prompts: PromptIndex) -> Work[PromptRecord]:
        """The item with its prompt record from `prompts`; an unknown id keeps the index's message."""
        try:
            return Work(item, prompts[item.prompt_id])
        except PromptLookupError as error:
            return Work(item, None, str(error))


def folder_items(folder: Path, skipped: list[str] | None = None) -> list[ImageItem]:
    """Images named `{prompt_id}_{sample_index}.png` (or .jpg, .webp, .bmp, .tiff) in a folder.

    Other entries are not scored; their names (hidden ones aside) are appended to `skipped`, so
    the caller can say which files it left alone. A file whose prompt id is not a benchmark
    prompt is an image and is scored into an error row."""
    items = []
    for path in sorted(folder.iterdir()):
        key = image_file_key(path.name)
        if key and path.is_file():
            items.append(ImageItem(key[0], key[1], fetch_path(path), str(path)))
        elif skipped is not None and not path.name.startswith("."):
            note = " (no sample index)" if lacks_sample_index(path.name) else "/" if path.is_dir() else ""
            skipped.append(path.name + note)
    if not items:
        others = [p.name for p in sorted(folder.iterdir()) if not p.name.startswith(".")][:3]
        found = f" (it holds {', '.join(others)}{' ...' if len(others) == 3 else ''})" if others else " (it is empty)"
        raise UserError(f"{folder} holds no images named {{prompt_id}}_{{sample_index}}.png{found}")
    return items


def _local_shards(dataset_dir: Path, split: str | None) -> tuple[str, list[Path]]:
    splits = image_splits(dataset_dir)
    keys = list(splits)
    if split is None:
        if len(keys) != 1:
            raise UserError(f"{dataset_dir} holds image splits {', '.join(keys) or '(none)'}: choose one with --split")
        split = keys[0]
    if split not in splits:
        where = dataset_dir / "images"
        raise UserError(f"no split {split!r} in {where} (splits there: {', '.join(keys) or 'none'})")
    return split, splits[split]


@lru_cache(maxsize=4)
def _row_group_images(path: str, row_group: int) -> list:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(row_group, columns=["image"]).column("image").to_pylist()


def _same(path: Path) -> Path:
    return path


def fetch_path(path: Path) -> Callable[[], ImageSource]:
    """An item's `fetch` that hands the loader the file's path (it reads the file)."""
    return functools.partial(_same, path)


def _row_image(dataset: Any, index: int) -> bytes:
    """Row `index`'s encoded image, read when the loader fetches it."""
    return image_bytes(dataset[index]["image"])


def image_bytes(cell: object) -> bytes:
    """The encoded image of a parquet/datasets ``image`` cell (``{"bytes", "path"}`` struct, or raw bytes)."""
    if isinstance(cell, dict):
        if cell.get("bytes"):
            return cell["bytes"]
        if cell.get("path"):
            return Path(cell["path"]).read_bytes()
    if isinstance(cell, (bytes, bytearray)):
        return bytes(cell)
    raise ImageError("dataset row has no image bytes")


def local_dataset_items(dataset_dir: Path, split: str | None) -> tuple[str, list[ImageItem]]:
    """Rows of `images/{split}-*.parquet`; image bytes are read one row group at a time, on demand."""
    import pyarrow.parquet as pq

    split, shards = _local_shards(dataset_dir, split)
    items = []
    for shard in shards:
        parquet = pq.ParquetFile(shard)
        for group in range(parquet.num_row_groups):
            keys = parquet.read_row_group(group, columns=["prompt_id", "sample_index"]).to_pylist()
            for offset, row in enumerate(keys):
                fetch = lambda s=str(shard), g=group, o=offset: image_bytes(_row_group_images(s, g)[o])  # noqa: E731
                label = f"{shard.name}#{group}:{offset}"
                items.append(ImageItem(row["prompt_id"], int(row["sample_index"]), fetch, label))
    return split, items


def hub_dataset_items(repo_id: str, split: str) -> list[ImageItem]:
    """Rows of the Hub dataset's `images` config, split `split` (downloaded through `datasets`)."""
    import datasets

    try:
        dataset = datasets.load_dataset(repo_id, "images", split=split)
    except Exception as error:  # noqa: BLE001 - datasets raises many kinds; one line is enough here
        raise UserError(f"could not load split {split!r} of the images config of {repo_id}: {error}") from None
    dataset = dataset.cast_column("image", datasets.Image(decode=False))
    keys = dataset.select_columns(["prompt_id", "sample_index"]).to_list()
    return [
        ImageItem(
            row["prompt_id"],
            int(row["sample_index"]),
            functools.partial(_row_image, dataset, index),
            f"{repo_id}[{split}][{index}]",
        )
        for index, row in enumerate(keys)
    ]


def resolve_source(
    images: str | Path,
    *,
    split: str | None = None,
    prompt_id: str | None = None,
    sample_index: int = 0,
    skipped: list[str] | None = None,
) -> tuple[list[ImageItem], str]:
    """The items of a source and a default model key (the split, the folder name, or `upload`).

    A folder's entries that are not images named `{prompt_id}_{sample_index}.png` go to `skipped`."""
    path = Path(images)
    if not path.is_file():
        recover_folder(path)  # a dataset folder whose rebuild was killed mid-swap is put right first
    if path.is_file():
        if prompt_id is None:
            named = image_file_key(path.name)
            if not named:
                raise UserError(f"{path.name} is not named {{prompt_id}}_{{sample_index}}.png: pass --prompt-id")
            prompt_id, sample_index = named
        return [ImageItem(prompt_id, sample_index, fetch_path(path), str(path))], "upload"
    if path.is_dir():
        if has_images(path):
            key, items = local_dataset_items(path, split)
            return items, key
        if split is not None:  # a split names a dataset's images; a folder of files has none
            raise UserError(
                f"{path} holds no image splits (no {path / 'images'}/{split}-*.parquet), so --split {split} names "
                f"nothing there: give the dataset folder that `generate` or `import-images` filled, or drop --split "
                f"to score the image files of {path}"
            )
        items = folder_items(path, skipped)
        return items, slug(path.resolve().name, fallback="images")
    if path.exists():
        raise UserError(f"{path} is neither an image file nor a folder")
    if REPO_ID.match(str(images)):
        if not split:
            raise UserError("a Hub dataset source needs --split (the model key, e.g. sd_1_5)")
        return hub_dataset_items(str(images), split), split
    raise UserError(f"no such image, folder or dataset: {images}")
