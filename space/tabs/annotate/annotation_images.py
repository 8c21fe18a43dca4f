"""The Annotate tab's images: each sample line's image, fetched from where the sample says it is.

A line of ``sample.jsonl`` (`validation.sample.SampleItem`) names its image twice: by key
(model_key = the images split, prompt_id, sample_index) and by place (``dataset`` folder,
``shard`` inside it, ``row`` in that parquet file). The place is read first, one row group at a
time, and the row's key is checked against the line (a rebuilt dataset may have moved rows);
when the shard is missing or the key differs, the split is searched by key through
`evaluator.sources.resolve_source`, which also reads a Hub dataset (``images`` config).

Where the dataset is: `images` when given (``serve --annotation-images``, env
``NEGT2I_ANNOTATION_IMAGES``: a dataset folder or a Hub dataset repo id, for a Space whose
sample was drawn on another machine), else the line's ``dataset``, a relative folder looked up
from the working directory, then beside the sample file.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

from PIL import Image

from evaluator.images import ImageError, load_image
from evaluator.sources import ImageItem, image_bytes, resolve_source
from negt2ibench.core.errors import UserError
from validation.sample import SampleItem


class SampleImageError(UserError):
    """A sample line's image cannot be found or read."""


@lru_cache(maxsize=2)
def _row_group(path: str, group: int) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(group, columns=["prompt_id", "sample_index", "image"]).to_pylist()


def read_shard_row(shard: Path, row: int) -> dict:
    """Row `row` of a parquet shard ({prompt_id, sample_index, image}), reading only its row group."""
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(shard).metadata
    start = 0
    for group in range(metadata.num_row_groups):
        rows = metadata.row_group(group).num_rows
        if row < start + rows:
            return _row_group(str(shard), group)[row - start]
        start += rows
    raise IndexError(f"{shard.name} has {start} rows, no row {row}")


class SampleImages:
    """Fetches the image of a sample line (see the module docstring for where it looks)."""

    def __init__(self, *, sample_path: str | Path | None = None, images: str | Path | None = None):
        self.sample_dir = Path(sample_path).resolve().parent if sample_path else None
        self.images = str(images) if images else None
        self._splits: dict[tuple[str, str], dict[tuple[str, int], ImageItem]] = {}
        self._lock = threading.Lock()

    def location(self, item: SampleItem) -> str:
        """The dataset folder (or Hub repo id) holding the line's image."""
        if self.images:
            return self.images
        if not item.dataset:
            raise SampleImageError(
                f"sample line {item.prompt_id}#{item.sample_index} names no dataset: "
                "pass --annotation-images (or set NEGT2I_ANNOTATION_IMAGES)"
            )
        here = Path(item.dataset)
        if here.exists() or here.is_absolute() or self.sample_dir is None:
            return item.dataset
        beside = self.sample_dir / item.dataset
        return str(beside) if beside.exists() else item.dataset

    def _by_key(self, location: str, item: SampleItem) -> ImageItem:
        with self._lock:
            source = (location, item.model_key)
            if source not in self._splits:
                found, _ = resolve_source(location, split=item.model_key)
                self._splits[source] = {(i.prompt_id, i.sample_index): i for i in found}
            split = self._splits[source]
        found_item = split.get((item.prompt_id, item.sample_index))
        if found_item is None:
            raise SampleImageError(
                f"no image {item.prompt_id} sample {item.sample_index} in split {item.model_key} of {location}"
            )
        return found_item

    def load(self, item: SampleItem) -> Image.Image:
        """The line's image as 8-bit RGB; `SampleImageError` (one line) when it cannot be had."""
        location = self.location(item)
        try:
            shard = Path(location) / item.shard if item.shard and item.row >= 0 else None
            if shard is not None and shard.is_file():
                row = read_shard_row(shard, item.row)
                if (row["prompt_id"], int(row["sample_index"])) == (item.prompt_id, item.sample_index):
                    return load_image(image_bytes(row["image"]))
            return load_image(self._by_key(location, item).fetch())
        except SampleImageError:
            raise
        except (UserError, ImageError, OSError, IndexError, KeyError) as error:
            raise SampleImageError(
                f"cannot read the image of {item.prompt_id}#{item.sample_index} ({item.model_key}): {error}"
            ) from None
