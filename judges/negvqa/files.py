"""The rows of one data file, each with its row number, its cells and its image read on demand.

Three formats, the ones NegVQA and its parent VMCBench are released in:

- JSONL (the authors' `NegVQA-7379*.jsonl`, add_negation.ipynb): one object per line; row N is line N;
- TSV (VLMEvalKit's format, in which the authors ran their models): a header line, then one row per
  record, pandas' quoting; row N is the N-th record after the header;
- parquet (a Hub dataset's format, `datasets`' Image feature as a ``{bytes, path}`` struct): row N is
  the N-th row of the file.

Images are not held in memory: a JSONL or TSV row remembers where it starts in the file and reads
itself again when the loader fetches its image; a parquet row reads its row group's image column
(the last few groups are cached). An image cell may be a ``{bytes, path}`` struct, raw bytes, a path
(absolute, or relative to the data file's folder), base64 text (VLMEvalKit), or a one-element list.
"""

from __future__ import annotations

import base64
import binascii
import csv
import json
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import IO, Any

from evaluator.images import ImageError
from negt2ibench.core.errors import UserError

DATA_SUFFIXES = (".jsonl", ".tsv", ".parquet")
SHORT_CELL = 64  # VLMEvalKit: an image cell this short names the row (by index) whose image it shares


@dataclass(frozen=True)
class Row:
    """One data row: its number in the file, every cell but the image, and the image cell on demand."""

    number: int
    cells: dict[str, Any]
    image: Callable[[], Any]  # the raw image cell (struct, bytes, text); None when the row has none
    image_column: str | None  # the column the image came from (None: none of the candidates)
    short_image: str | None = None  # a short text image cell (VLMEvalKit's reference to another row)


def missing(value: Any) -> bool:
    """Whether a cell holds nothing: None, NaN (pandas' empty cell) or blank text.

    Args:
        value: a cell.

    Returns:
        True when it is empty.
    """
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value)


def _image_column(cells: dict[str, Any], candidates: Sequence[str]) -> str | None:
    return next((name for name in candidates if name in cells and not missing(cells[name])), None)


def _split(cells: dict[str, Any], candidates: Sequence[str]) -> tuple[dict[str, Any], str | None, str | None]:
    """(cells without the image, the image's column, the image cell when it is short text)."""
    column = _image_column(cells, candidates)
    if column is None:
        return cells, None, None
    value = cells.pop(column)
    short = value if isinstance(value, str) and len(value) <= SHORT_CELL else None
    return cells, column, short


# -- JSONL --------------------------------------------------------------------------------------------


def _jsonl_line(path: str, offset: int) -> dict[str, Any]:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return json.loads(handle.readline())


def _cell_at(read: Callable[[], dict[str, Any]], column: str) -> Any:
    return read().get(column)


def _none() -> None:
    return None


def jsonl_rows(path: Path, image_columns: Sequence[str], bad: list[tuple[int, str]]) -> Iterator[Row]:
    """The rows of a JSONL file.

    Args:
        path: the file.
        image_columns: the names the image column may have (the first present is used).
        bad: where a line that is not a JSON object goes, as (line, reason).

    Yields:
        Each row: its number, its cells, and a reader of its image cell (read again when needed).
    """
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                cells = json.loads(raw)
            except ValueError as error:
                bad.append((number, f"not JSON ({error})"))
                continue
            if not isinstance(cells, dict):
                bad.append((number, f"not a JSON object (a {type(cells).__name__})"))
                continue
            cells, column, short = _split(cells, image_columns)
            read = partial(_jsonl_line, str(path), start)
            image = partial(_cell_at, read, column) if column else _none
            yield Row(number, cells, image, column, short)


# -- TSV ----------------------------------------------------------------------------------------------


class _Lines:
    """Text lines of a binary file, counting the bytes handed out (where the next record starts)."""

    def __init__(self, handle: IO[bytes]):
        self.handle = handle
        self.offset = handle.tell()

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self.handle.readline()
        if not line:
            raise StopIteration
        self.offset += len(line)
        return line.decode("utf-8")


def _raise_field_limit() -> None:
    # Base64 images are far longer than the csv module's default field limit (128 KiB).
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def _tsv_record(path: str, header: tuple[str, ...], offset: int) -> dict[str, Any]:
    _raise_field_limit()
    with open(path, "rb") as handle:
        handle.seek(offset)
        values = next(csv.reader(_Lines(handle), delimiter="\t"))
    return dict(zip(header, values, strict=False))


def tsv_rows(path: Path, image_columns: Sequence[str], bad: list[tuple[int, str]]) -> Iterator[Row]:
    """The records of a TSV file with a header line.

    Args:
        path: the file.
        image_columns: the names the image column may have.
        bad: where a record whose cell count differs from the header's goes, as (row, reason).

    Yields:
        Each row: its number, its cells, and a reader of its image cell.

    Raises:
        UserError: the header line is not TSV.
    """
    _raise_field_limit()
    with open(path, "rb") as handle:
        lines = _Lines(handle)
        reader = csv.reader(lines, delimiter="\t")
        try:
            header = tuple(next(reader))
        except StopIteration:
            return
        except csv.Error as error:
            raise UserError(f"{path}: the header line is not TSV ({error})") from None
        number = 0
        while True:
            start = lines.offset
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                number += 1
                bad.append((number, f"not a TSV record ({error})"))
                continue
            number += 1
            if not any(values):
                continue
            if len(values) != len(header):
                bad.append((number, f"{len(values)} cells, the header has {len(header)}"))
                continue
            cells, column, short = _split(dict(zip(header, values, strict=True)), image_columns)
            read = partial(_tsv_record, str(path), header, start)
            image = partial(_cell_at, read, column) if column else _none
            yield Row(number, cells, image, column, short)


# -- parquet ------------------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _group_column(path: str, group: int, column: str) -> list:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(group, columns=[column]).column(column).to_pylist()


def _parquet_cell(path: str, group: int, column: str, offset: int) -> Any:
    return _group_column(path, group, column)[offset]


def parquet_rows(path: Path, image_columns: Sequence[str], bad: list[tuple[int, str]]) -> Iterator[Row]:
    """The rows of a parquet file; the image column is the first of IMAGE_COLUMNS in its schema.

    Args:
        path: the file.
        image_columns: the names the image column may have.
        bad: unused (a parquet row is whole); kept for the readers' one signature.

    Yields:
        Each row: its number, its cells, and a reader of its image cell.

    Raises:
        UserError: not a parquet file.
    """
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # noqa: BLE001 - pyarrow raises several kinds for a file that is not parquet
        raise UserError(f"{path}: not a parquet file ({error})") from None
    names = parquet.schema_arrow.names
    column = next((name for name in image_columns if name in names), None)
    others = [name for name in names if name != column]
    number = 0
    for group in range(parquet.num_row_groups):
        for offset, cells in enumerate(parquet.read_row_group(group, columns=others).to_pylist()):
            number += 1
            image = partial(_parquet_cell, str(path), group, column, offset) if column else _none
            yield Row(number, cells, image, column)


READERS: dict[str, Callable[[Path, Sequence[str], list[tuple[int, str]]], Iterator[Row]]] = {
    ".jsonl": jsonl_rows,
    ".tsv": tsv_rows,
    ".parquet": parquet_rows,
}


def read_rows(path: Path, image_columns: Sequence[str], bad: list[tuple[int, str]]) -> list[Row]:
    """Every row of PATH (by its suffix).

    Args:
        path: a .jsonl, .tsv or .parquet file.
        image_columns: the names the image column may have.
        bad: where rows that cannot be parsed go, as (row, reason).

    Returns:
        The rows, in file order.

    Raises:
        UserError: another suffix, text that is not UTF-8, or a file that cannot be read.
    """
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise UserError(f"{path}: not a data file NegVQA is read from ({', '.join(DATA_SUFFIXES)})")
    try:
        return list(reader(path, image_columns, bad))
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise UserError(f"{path}: cannot be read ({error.strerror or error})") from None


# -- image cells --------------------------------------------------------------------------------------


def _file(text: str, base: Path) -> Path | None:
    if len(text) > 4096 or "\n" in text:
        return None
    for candidate in (Path(text), base / text):
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a name the file system refuses (too long): not a path
            return None
    return None


def image_data(cell: Any, base: Path) -> bytes | Path:
    """The encoded image of an image cell (see the module's docstring).

    Args:
        cell: the cell: bytes, base64 text, a path, a {bytes, path} dict, or a list of one of them.
        base: the folder relative paths are read from.

    Returns:
        The image's bytes, or its file.

    Raises:
        ImageError: the cell holds no image (or several).
    """
    if isinstance(cell, list):
        if len(cell) != 1:
            raise ImageError(f"the image cell holds {len(cell)} images; a NegVQA question has one")
        return image_data(cell[0], base)
    if isinstance(cell, dict):
        if not missing(cell.get("bytes")):
            return image_data(cell["bytes"], base)
        if not missing(cell.get("path")):
            path = _file(str(cell["path"]), base)
            if path is None:
                raise ImageError(f"no image file at {cell['path']}")
            return path
        raise ImageError("the image cell has neither bytes nor a path")
    if isinstance(cell, (bytes, bytearray, memoryview)):
        return bytes(cell)
    if isinstance(cell, str) and cell.strip():
        path = _file(cell.strip(), base)
        if path is not None:
            return path
        try:
            return base64.b64decode(cell.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise ImageError("the image cell is neither a file nor base64 image data") from None
    raise ImageError("the row has no image")


def fetch_image(row_image: Callable[[], Any], base: Path) -> bytes | Path:
    """Read a row's image cell now and decode it (the loader's `fetch`).

    Args:
        row_image: reads the row's image cell again.
        base: the folder relative paths are read from.

    Returns:
        The image's bytes, or its file.

    Raises:
        ImageError: the row cannot be read again, or its cell holds no image.
    """
    try:
        cell = row_image()
    except (OSError, ValueError) as error:
        raise ImageError(f"cannot read the row again: {error}") from None
    return image_data(cell, base)


def describe_columns(rows: Sequence[Row]) -> list[str]:
    """The columns found in ROWS (the image column included), in first-seen order.

    Args:
        rows: rows of a data file.

    Returns:
        The column names.
    """
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row.cells))
        if row.image_column:
            seen[row.image_column] = None
    return list(seen)
