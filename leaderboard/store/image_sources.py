"""A submission's images, read from its images dataset: a Hub dataset repo or a local folder laid out
as one (``images/<split>-*.parquet``, `dataset_builder.layout`).

An `ImageSource` yields the images of given (prompt_id, sample_index) keys; `ParquetImages` reads
only the row groups and cells it needs; `hub_images` opens a Hub repo's split lazily over HTTP.
Any failure to read is `ImagesUnreachable` (a one-line `UserError`): the spot check then waits,
and the Gallery says so instead of showing a picture. Its message is public (a pending entry's
reason, a Gallery caption), so it is a sentence of ours (`unreachable_reason`), never a library's
exception text: the full error goes to the log.

What a submitter controls reaches no further than its own split (`source_problem`): a Hub read
names a repo id valid by the Hub's rules, a commit sha (the revision was resolved to one when the
submission was stored, `hub_commit`: a branch that moves later changes nothing) and a split name
`[a-z0-9_]+`; anything else is refused before any filesystem is made. Submitted repos are read
with no token (public repos), or with NEGT2I_IMAGES_TOKEN, a read token the owner scopes, never the
Space's own HF_TOKEN. Reads are bounded: at most `MAX_FILES` parquet files, a row group's image
column at most `MAX_GROUP_BYTES`, an image cell at most `MAX_CELL_BYTES`, and only its bytes
(a cell's `path` is never followed: it would be a path of this machine).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from dataset_builder.layout import split_files, split_glob
from negt2ibench.core.errors import UserError

log = logging.getLogger(__name__)
IMAGES_TOKEN_ENV = "NEGT2I_IMAGES_TOKEN"  # a read token for submitted images repos (default: none)
COMMIT = re.compile(r"[0-9a-f]{40}")
MAX_FILES = 64  # parquet files of one split
MAX_GROUP_BYTES = 512 * 2**20  # a row group's image column, compressed, as the file's footer says
MAX_CELL_BYTES = 64 * 2**20  # one encoded image
DECODES_AT_ONCE = 2  # images decoded at once in a process (at most 40 MP each: `evaluator.images`)
_decodes = threading.BoundedSemaphore(DECODES_AT_ONCE)


class ImagesUnreachable(UserError, RuntimeError):
    """The submitted images dataset cannot be read from here."""


class ImagesRefused(ImagesUnreachable):
    """A submitted image was read and refused (too large, too small, corrupt: `evaluator.images.load_image`).
    The images are read at a pinned commit, so this never changes: the entry ends with the reason
    (`leaderboard.checks.verification_run.end_refused`) instead of waiting for a read that cannot succeed."""


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
# Resolves a submitted revision to the commit it names now: (repo_id, revision) -> commit sha.
RevisionResolver = Callable[[str, str], str]


def images_token() -> str | bool:
    """The token submitted images repos are read with: NEGT2I_IMAGES_TOKEN, else none (False: not
    even the machine's login), never HF_TOKEN, which on the Space may write."""
    return os.environ.get(IMAGES_TOKEN_ENV) or False


def source_problem(repo_id: str, revision: str, split: str) -> str:
    """Why (repo_id, revision, split) may not be read from the Hub ("" when it may)."""
    from leaderboard.text.submitted_names import clip, hub_repo_id
    from negt2ibench.core.names import SPLIT_NAME

    try:
        hub_repo_id(repo_id)
    except ValueError as error:
        return str(error)
    if not COMMIT.fullmatch(revision or ""):
        return f"the images revision {clip(revision, 60)!r} is not pinned to a commit (submit again to pin it)"
    if not SPLIT_NAME.match(split or "") or len(split) > 100:
        return f"the split {clip(split, 60)!r} is not a split name ([a-z0-9_]+)"
    return ""


def hub_commit(repo_id: str, revision: str, api: Any = None) -> str:
    """The commit sha REVISION (a branch, tag or commit) of the Hub dataset REPO_ID names now
    (`HfApi.dataset_info(..., revision=...)`); ImagesUnreachable, in our words, when it cannot be read."""
    from leaderboard.text.submitted_names import clip, hub_repo_id

    try:
        repo_id = hub_repo_id(repo_id)
    except ValueError as error:
        raise ImagesUnreachable(f"images not reachable: {error}") from None
    try:
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi(token=images_token())
        sha = str(api.dataset_info(repo_id, revision=revision or "main").sha or "")
    except Exception as error:  # noqa: BLE001 - offline, missing, private, no such revision ...
        raise ImagesUnreachable(unreachable_reason(error, f"{repo_id}@{clip(revision, 60)}")) from None
    if not COMMIT.fullmatch(sha):
        raise ImagesUnreachable(f"images not reachable: the Hub gave no commit for {repo_id}@{clip(revision, 60)}")
    return sha


def keep_revision(repo_id: str, revision: str) -> str:
    """The resolver of a local images source (a folder, a test's double): no commits, the revision as typed."""
    return revision


def default_resolver(open_images: object) -> RevisionResolver:
    """How a submission's revision is pinned for OPEN_IMAGES: the Hub's commit (`hub_commit`) for Hub
    images (`HubImages`); another source's own `resolve_revision`, else the revision as typed."""
    if isinstance(open_images, HubImages):
        return hub_commit
    resolver = getattr(open_images, "resolve_revision", None)
    return resolver if callable(resolver) else keep_revision


class ParquetImages:
    """Images of one split read from parquet files (a local dataset folder or Hub paths)."""

    def __init__(self, files: Sequence[str], filesystem: Any = None):
        if not files:
            raise ImagesUnreachable("no image parquet files for this split")
        if len(files) > MAX_FILES:
            raise ImagesUnreachable(
                f"images not reachable: the split has {len(files):,} parquet files (at most {MAX_FILES})"
            )
        self.files = list(files)
        self.filesystem = filesystem

    @classmethod
    def from_folder(cls, folder: str | Path, split: str) -> ParquetImages:
        """A dataset folder laid out as the Hub repo: ``images/<split>-*.parquet`` (`dataset_builder.layout`)."""
        from negt2ibench.core.names import SPLIT_NAME

        if not SPLIT_NAME.match(split or ""):
            raise ImagesUnreachable(f"images not reachable: {split[:60]!r} is not a split name ([a-z0-9_]+)")
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
                _check_group(parquet, group)
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
                        with _decodes:  # whatever reads at once, at most DECODES_AT_ONCE full images in memory
                            image = load_image(cell_bytes(cell))
                    except ImageError as error:
                        raise ImagesRefused(f"{key[0]} sample {key[1]} is not a usable image: {error}") from None
                    yield key, image, other
        except ImagesUnreachable:
            raise
        except Exception as error:  # noqa: BLE001 - any read failure means: not reachable
            raise ImagesUnreachable(unreachable_reason(error)) from None
        if wanted:
            prompt_id, sample_index = min(wanted)
            raise ImagesUnreachable(
                f"images dataset has no image for {prompt_id} sample {sample_index} ({len(wanted)} missing)"
            )


def _check_group(parquet: Any, group: int) -> None:
    """Refuse a row group whose image column is larger than MAX_GROUP_BYTES (its footer says so)."""
    metadata = parquet.metadata.row_group(group)
    names = [metadata.column(i).path_in_schema.split(".")[0] for i in range(metadata.num_columns)]
    size = sum(metadata.column(i).total_compressed_size for i, name in enumerate(names) if name == "image")
    if size > MAX_GROUP_BYTES:
        raise ImagesUnreachable(
            f"images not reachable: a row group holds {size / 2**20:,.0f} MB of images "
            f"(at most {MAX_GROUP_BYTES // 2**20} MB; write smaller row groups)"
        )


def cell_bytes(cell: object) -> bytes:
    """The encoded image of a submitted ``image`` cell: its bytes, at most MAX_CELL_BYTES. A cell
    that names a `path` instead is refused: a submitted path would be read on this machine."""
    from evaluator.images import ImageError

    data = cell.get("bytes") if isinstance(cell, dict) else cell
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise ImageError("the row has no image bytes (a path in the cell is not followed)")
    if len(data) > MAX_CELL_BYTES:
        raise ImageError(f"the image is {len(data) / 2**20:,.0f} MB encoded (at most {MAX_CELL_BYTES // 2**20} MB)")
    return bytes(data)


class HubImages:
    """`ImageSourceFactory` of Hub dataset repos: the split's parquet files, read lazily over HTTP
    (only the rows needed), at a pinned commit, with `images_token()`. `filesystem` makes the
    filesystem (default `HfFileSystem`; a test's double): it is made only for a source that
    `source_problem` lets through."""

    def __init__(self, filesystem: Callable[[], Any] | None = None):
        self._filesystem = filesystem

    def __call__(self, repo_id: str, revision: str, split: str) -> ImageSource:
        problem = source_problem(repo_id, revision, split)
        if problem:
            raise ImagesUnreachable(f"images not reachable: {problem}")
        where = f"{repo_id}@{revision[:8]}"
        try:
            if self._filesystem is not None:
                filesystem = self._filesystem()
            else:
                from huggingface_hub import HfFileSystem

                filesystem = HfFileSystem(token=images_token())
            files = filesystem.glob(f"datasets/{repo_id}@{revision}/{split_glob(split)}")
        except Exception as error:  # noqa: BLE001 - offline, missing repo, private repo ...
            raise ImagesUnreachable(unreachable_reason(error, where)) from None
        if not files:
            raise ImagesUnreachable(f"images not reachable: {where} has no {split_glob(split)}")
        return ParquetImages(files, filesystem=filesystem)


hub_images = HubImages()
