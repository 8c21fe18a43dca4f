"""A submission's images, read from its images dataset: a Hub dataset repo or a local folder laid out
as one (``images/<split>-*.parquet``, `dataset_builder.layout`).

An `ImageSource` yields the images of given (prompt_id, sample_index) keys; `ParquetImages` reads
only the row groups and cells it needs; `hub_images` opens a Hub repo's split lazily over HTTP.
Any failure to read is `ImagesUnreachable` (a one-line `UserError`): the spot check then waits,
and the Gallery says so instead of showing a picture. Its message is public (a pending entry's
reason, a Gallery caption), so it is a sentence of ours (`unreachable_reason`), never a library's
exception text: the full error goes to the log.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from dataset_builder.layout import split_files, split_glob
from negt2ibench.core.errors import UserError

log = logging.getLogger(__name__)


class ImagesUnreachable(UserError, RuntimeError):
    """The submitted images dataset cannot be read from here."""


def _http_status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _hub_reason(error: BaseException, repo: str) -> str | None:
    """Our words for a Hub library error, or None for an error that is not one. (The CLI's own
    Hub errors, for the operator, are `dataset_builder.hub.hub_errors`; these are public.)"""
    try:
        from huggingface_hub import errors as hub_errors
    except ImportError:  # without the Hub library no error can come from it
        return None
    if isinstance(error, hub_errors.OfflineModeIsEnabled):
        return "the Hub cannot be reached from here (offline mode is on)"
    if isinstance(error, hub_errors.GatedRepoError):
        return f"{repo} is gated: this Space cannot read it"
    if isinstance(error, hub_errors.RepositoryNotFoundError):
        return f"{repo} does not exist on the Hub, or is private"
    if isinstance(error, hub_errors.RevisionNotFoundError):
        return f"{repo} has no such revision"
    if isinstance(error, hub_errors.HfHubHTTPError):
        status = _http_status(error)
        if status in (401, 403):
            return f"{repo} is private or needs a token this Space does not have"
        return f"the Hub answered with an error{f' (HTTP {status})' if status else ''}; it may be down for now"
    return None


def unreachable_reason(error: BaseException, repo: str = "") -> str:
    """Why images could not be read, as a public sentence of ours ("images not reachable: ..."),
    from the error a reading library raised; the full error goes to the log. An
    `ImagesUnreachable` is ours already: its first line."""
    if isinstance(error, ImagesUnreachable):
        return (str(error).strip().splitlines() or ["images not reachable"])[0]
    log.warning("images of %s not reachable: %s: %s", repo or "a submission", type(error).__name__, error)
    where = repo or "the images repo"
    reason = _hub_reason(error, where)
    if reason is None:
        from dataset_builder.hub import is_network_error  # the one test of "the Hub was not reached"

        if isinstance(error, FileNotFoundError):
            reason = f"a file of {where} is missing"
        elif isinstance(error, PermissionError):
            reason = f"{where} could not be read: permission denied"
        elif is_network_error(error):
            reason = "the Hub could not be reached from here (a network error)"
        else:
            reason = f"{where} could not be read (the error is in the server's log)"
    return f"images not reachable: {reason}"


Key = tuple[str, int]  # (prompt_id, sample_index)


class ImageSource(Protocol):
    def images(self, keys: Sequence[Key]) -> Iterator[tuple[Key, Image.Image]]:
        """The submitted images of `keys` (in the source's order); raises ImagesUnreachable if one
        cannot be read or is missing."""


RECORD_COLUMNS = ("seed", "model_id", "model_key", "params")  # what an image row records of its making


@dataclass(frozen=True)
class GenerationRecord:
    """What an image's row records of how it was made (`generation.shards.ImageRecord`); a row
    without these columns (images written by other tools) gives its defaults."""

    seed: int | None = None
    model_id: str = ""
    model_key: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    params_problem: str = ""  # why `params` could not be read ("" when it was, or is absent)

    @classmethod
    def from_cells(cls, cells: dict[str, Any]) -> GenerationRecord:
        seed = cells.get("seed")
        text = cells.get("params")
        params: Any = {}
        problem = ""
        if isinstance(text, str) and text:
            try:
                params = json.loads(text[:MAX_PARAMS])
            except ValueError:
                problem = "its params are not JSON"
        if not isinstance(params, dict):
            params, problem = {}, "its params are not a JSON object"
        return cls(
            seed=int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None,
            model_id=str(cells.get("model_id") or "")[:MAX_NAME_CELL],
            model_key=str(cells.get("model_key") or "")[:MAX_NAME_CELL],
            params=params,
            params_problem=problem,
        )


MAX_PARAMS = 64 * 1024  # a params cell longer than this is cut (and then not JSON): a generator writes ~1 KB
MAX_NAME_CELL = 300  # a hub id or split key longer than this is cut


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

    def _row_groups(self) -> Iterator[tuple[Any, int]]:
        import pyarrow.parquet as pq

        for file in self.files:
            handle = self.filesystem.open(file, "rb") if self.filesystem is not None else file
            parquet = pq.ParquetFile(handle)
            for group in range(parquet.num_row_groups):
                yield parquet, group

    def images(self, keys: Sequence[Key]) -> Iterator[tuple[Key, Image.Image]]:
        """Read the key columns of each row group, then the image cells of the wanted rows only."""
        for key, image, _ in self._rows(keys, ()):
            yield key, image

    def image_records(self, keys: Sequence[Key]) -> Iterator[tuple[Key, Image.Image, GenerationRecord]]:
        """The images of `keys` with what their rows record of how they were made (seed, model, params)."""
        for key, image, cells in self._rows(keys, RECORD_COLUMNS):
            yield key, image, GenerationRecord.from_cells(cells)

    def first_record(self) -> GenerationRecord:
        """What the first row records of how its image was made (the model a whole split names)."""
        import pyarrow.parquet as pq

        try:
            handle = self.filesystem.open(self.files[0], "rb") if self.filesystem is not None else self.files[0]
            parquet = pq.ParquetFile(handle)
            present = [name for name in RECORD_COLUMNS if name in parquet.schema_arrow.names]
            rows = parquet.read_row_group(0, columns=present).slice(0, 1).to_pylist() if present else [{}]
        except Exception as error:  # noqa: BLE001 - any read failure means: not reachable
            raise ImagesUnreachable(unreachable_reason(error)) from None
        return GenerationRecord.from_cells(rows[0] if rows else {})

    def _rows(self, keys: Sequence[Key], extra: Sequence[str]) -> Iterator[tuple[Key, Image.Image, dict[str, Any]]]:
        from evaluator.images import ImageError, load_image
        from evaluator.sources import image_bytes

        wanted = set(keys)
        try:
            for parquet, group in self._row_groups():
                rows = parquet.read_row_group(group, columns=["prompt_id", "sample_index"]).to_pylist()
                hits = [i for i, row in enumerate(rows) if (row["prompt_id"], int(row["sample_index"])) in wanted]
                if not hits:
                    continue
                present = [name for name in extra if name in parquet.schema_arrow.names]
                table = parquet.read_row_group(group, columns=["image", *present]).take(hits)
                cells = table.column("image").to_pylist()
                others = table.select(present).to_pylist() if present else [{}] * len(hits)
                for position, cell, other in zip(hits, cells, others, strict=True):
                    key = (rows[position]["prompt_id"], int(rows[position]["sample_index"]))
                    if key not in wanted:
                        continue  # a key listed twice: the first row counts
                    wanted.discard(key)
                    try:
                        yield key, load_image(image_bytes(cell)), other
                    except ImageError as error:
                        raise ImagesUnreachable(f"{key[0]} sample {key[1]} is not a usable image: {error}") from None
        except ImagesUnreachable:
            raise
        except Exception as error:  # noqa: BLE001 - any read failure means: not reachable
            raise ImagesUnreachable(unreachable_reason(error)) from None
        if wanted:
            prompt_id, sample_index = min(wanted)
            raise ImagesUnreachable(
                f"images dataset has no image for {prompt_id} sample {sample_index} ({len(wanted)} missing)"
            )


def hub_images(repo_id: str, revision: str, split: str) -> ImageSource:
    """The images split of a Hub dataset repo, read lazily over HTTP (only the rows needed)."""
    try:
        from huggingface_hub import HfFileSystem

        filesystem = HfFileSystem(token=os.environ.get("HF_TOKEN"))
        files = filesystem.glob(f"datasets/{repo_id}@{revision or 'main'}/{split_glob(split)}")
    except Exception as error:  # noqa: BLE001 - offline, missing repo, private repo ...
        raise ImagesUnreachable(unreachable_reason(error, f"{repo_id}@{revision or 'main'}")) from None
    if not files:
        raise ImagesUnreachable(f"images not reachable: {repo_id}@{revision} has no {split_glob(split)}")
    return ParquetImages(files, filesystem=filesystem)
