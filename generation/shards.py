"""Image records in parquet shards `DIR/images/{key}-r{rank:03d}-{n:05d}.parquet` (`dataset_builder.layout`).

Each shard is written whole to a hidden temp file and renamed into place (`negt2ibench.core.atomic.atomic_file`), so
a shard on disk is always complete: a killed run loses at most the rows it had not flushed yet. The schema
carries `datasets` feature metadata, so `load_dataset(DIR, "images", split=key)` decodes the
`image` column as PIL images.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataset_builder.layout import image_file_name, shard_path, shard_rank_index, split_files
from negt2ibench.core.atomic import atomic_file
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check, positive_int

ROW_GROUP_SIZE = 100  # rows per parquet row group: what the Hub's viewer reads at once

ImageKey = tuple[str, int]  # (prompt_id, sample_index)


def image_features():
    """The `datasets.Features` of one image record (docs/records.md)."""
    from datasets import Features, Image, Value

    return Features(
        {
            "prompt_id": Value("string"),
            "sample_index": Value("int32"),
            "seed": Value("int64"),
            "image": Image(),
            "model_id": Value("string"),
            "model_key": Value("string"),
            "params": Value("string"),
            "nsfw_flagged": Value("bool"),
        }
    )


@dataclass(frozen=True)
class ImageRecord:
    """One generated image, PNG-encoded."""

    prompt_id: str
    sample_index: int
    seed: int
    png: bytes
    model_id: str
    model_key: str
    params: str  # JSON
    nsfw_flagged: bool = False

    @property
    def key(self) -> ImageKey:
        return (self.prompt_id, self.sample_index)

    def row(self) -> dict[str, Any]:
        return {
            "prompt_id": self.prompt_id,
            "sample_index": self.sample_index,
            "seed": self.seed,
            "image": {"bytes": self.png, "path": image_file_name(self.prompt_id, self.sample_index)},
            "model_id": self.model_id,
            "model_key": self.model_key,
            "params": self.params,
            "nsfw_flagged": self.nsfw_flagged,
        }


def png_bytes(image) -> bytes:
    """Lossless PNG bytes of a PIL image (RGB)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def write_shard_atomically(rows: list[dict[str, Any]], path: Path) -> None:
    """Write rows as one parquet file, whole or not at all (`negt2ibench.core.atomic.atomic_file`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=image_features().arrow_schema)
    with atomic_file(path) as handle:
        pq.write_table(table, handle, row_group_size=ROW_GROUP_SIZE)


def read_keys(path: Path) -> list[ImageKey]:
    """The (prompt_id, sample_index) of every row of one shard (reads two columns only)."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=["prompt_id", "sample_index"])
    except Exception as error:  # noqa: BLE001 - any unreadable file gets the same clear message
        raise UserError(f"{path} is not a readable image shard ({error}); move it away and run again") from None
    return list(zip(table.column("prompt_id").to_pylist(), table.column("sample_index").to_pylist(), strict=False))


def existing_keys(dataset_dir: Path, key: str) -> set[ImageKey]:
    """Every image already written for this split, by any rank."""
    done: set[ImageKey] = set()
    for path in split_files(dataset_dir, key):
        done.update(read_keys(path))
    return done


class ShardWriter:
    """Buffers image records of one rank and flushes them as numbered, atomically written shards."""

    def __init__(self, dataset_dir: Path, key: str, rank: int = 0, shard_size: int = 128):
        self.shard_size = check("shard_size", shard_size, positive_int)
        self.dataset_dir = Path(dataset_dir)
        self.key = key
        self.rank = rank
        self._buffer: list[dict[str, Any]] = []
        self._next_index = self._first_free_index()
        self.written: list[Path] = []

    def _first_free_index(self) -> int:
        used = [
            parsed[2]
            for p in split_files(self.dataset_dir, self.key)
            if (parsed := shard_rank_index(p)) and parsed[1] == self.rank
        ]
        return max(used, default=-1) + 1

    def add(self, record: ImageRecord) -> Path | None:
        """Buffer one record; returns the shard path when this filled and flushed a shard."""
        self._buffer.append(record.row())
        if len(self._buffer) >= self.shard_size:
            return self.flush()
        return None

    def flush(self) -> Path | None:
        if not self._buffer:
            return None
        path = shard_path(self.dataset_dir, self.key, self.rank, self._next_index)
        write_shard_atomically(self._buffer, path)
        self._buffer = []
        self._next_index += 1
        self.written.append(path)
        return path

    @property
    def pending(self) -> int:
        return len(self._buffer)


@dataclass
class CompletenessReport:
    """What `merge-images` found for one split."""

    key: str
    shards: int
    images: int
    expected: int
    missing: list[ImageKey] = field(default_factory=list)
    duplicates: dict[ImageKey, int] = field(default_factory=dict)  # key -> extra copies
    unexpected: list[ImageKey] = field(default_factory=list)  # rows outside the selection
    removed_duplicates: int = 0

    @property
    def complete(self) -> bool:
        return not self.missing and not self.duplicates

    def summary_lines(self, show: int = 20) -> list[str]:
        lines = [
            f"split {self.key}: {self.images} images in {self.shards} shards; expected {self.expected}",
        ]
        if self.removed_duplicates:
            lines.append(f"removed {self.removed_duplicates} duplicate rows")
        if self.duplicates:
            lines.append(
                f"{sum(self.duplicates.values())} duplicate rows of {len(self.duplicates)} images "
                f"(run with --drop-duplicates to keep the first copy)"
            )
        if self.unexpected:
            lines.append(f"{len(self.unexpected)} images outside the selected prompts/samples (kept)")
        if self.missing:
            lines.append(f"missing {len(self.missing)} images, e.g.:")
            lines.extend(f"  {prompt_id} sample {index}" for prompt_id, index in self.missing[:show])
            if len(self.missing) > show:
                lines.append(f"  ... and {len(self.missing) - show} more")
        if self.complete:
            lines.append("complete: every expected image present exactly once")
        return lines


def check_completeness(dataset_dir: Path, key: str, expected: Iterable[ImageKey]) -> CompletenessReport:
    """Compare the split on disk with the expected (prompt_id, sample_index) pairs."""
    expected_list = list(expected)
    counts: Counter[ImageKey] = Counter()
    paths = split_files(dataset_dir, key)
    for path in paths:
        counts.update(read_keys(path))
    expected_set = set(expected_list)
    return CompletenessReport(
        key=key,
        shards=len(paths),
        images=sum(counts.values()),
        expected=len(expected_set),
        missing=[k for k in expected_list if k not in counts],
        duplicates={k: n - 1 for k, n in counts.items() if n > 1},
        unexpected=sorted(k for k in counts if k not in expected_set),
    )


def drop_duplicates(dataset_dir: Path, key: str) -> int:
    """Keep the first copy (in shard-name order) of each image; rewrite affected shards atomically."""
    import pyarrow.parquet as pq

    seen: set[ImageKey] = set()
    removed = 0
    for path in split_files(dataset_dir, key):
        keys = read_keys(path)
        keep = []
        for row, image_key in enumerate(keys):
            if image_key in seen:
                continue
            seen.add(image_key)
            keep.append(row)
        if len(keep) == len(keys):
            continue
        removed += len(keys) - len(keep)
        if not keep:
            path.unlink()
            continue
        rows = pq.read_table(path).take(keep).to_pylist()
        write_shard_atomically(rows, path)
    return removed


def read_params(dataset_dir: Path, key: str) -> list[dict[str, Any]]:
    """The distinct `params` JSON objects of a split (one per setting used)."""
    import pyarrow.parquet as pq

    distinct: dict[str, dict[str, Any]] = {}
    for path in split_files(dataset_dir, key):
        for text in pq.read_table(path, columns=["params"]).column("params").to_pylist():
            if text not in distinct:
                distinct[text] = json.loads(text)
    return list(distinct.values())
