"""The dataset folder's layout, in one place: names, split names, shard paths, slugs, atomic writes.

A dataset folder is a Hugging Face dataset repo as it will be pushed:

    README.md                                 the dataset card (rendered from dataset_card.md)
    prompts/test-00000-of-00001.parquet       config "prompts", split "test"
    prompts.jsonl                             the same records for people who do not use `datasets`
    images/{key}-r{rank:03d}-{n:05d}.parquet  config "images", one split per model key (generation)
    results/                                  anything the user keeps there (pushed as is)

Every module that reads or writes such a folder (the builder, generation, the scorer, the Space)
asks this module where things are, so a change of layout is made here once. Nothing here imports
another module of the project but the errors, so everyone can import it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from negt2ibench.errors import OptionError, UsageError, UserError

CARD_FILE = "README.md"
PROMPTS_DIR = "prompts"
PROMPTS_PARQUET = f"{PROMPTS_DIR}/test-00000-of-00001.parquet"
PROMPTS_JSONL = "prompts.jsonl"
IMAGES_DIR = "images"
RESULTS_DIR = "results"
DEFAULT_DATASET_DIR = Path("build/negt2ibench")

# A split name (= a model key): the Hub's split rule, and the prefix of the split's shard files.
SPLIT_NAME = re.compile(r"^[a-z0-9_]+$")
# The shards generation writes; any other `{key}-*.parquet` (e.g. a Hub download's
# `{key}-00000-of-00001.parquet`) still belongs to the split, as the card's `data_files` glob says.
SHARD_NAME = re.compile(r"^(?P<key>[a-z0-9_]+)-r(?P<rank>\d{3})-(?P<index>\d{5})\.parquet$")
# A loose image file of a folder of images: `{prompt_id}_{sample_index}.png` (the scorer also reads
# JPEG, WebP, BMP and TIFF; `import-images` takes PNG only, so images stay lossless).
IMAGE_FILE_NAME = re.compile(
    r"^(?P<prompt_id>.+)_(?P<sample_index>\d+)\.(?P<extension>png|jpe?g|webp|bmp|tiff?)$", re.IGNORECASE
)


# --------------------------------------------------------------------------- names


def check_split_name(name: str, *, what: str = "model key") -> str:
    """NAME if it is a valid split name ([a-z0-9_]+), else an `OptionError` (exit 2) that says the rule."""
    if not isinstance(name, str) or not SPLIT_NAME.match(name):
        prefix = f"{what} " if what else ""
        raise OptionError(
            f"{prefix}{name!r} is not a valid split name: use lowercase letters, digits and _ only ([a-z0-9_]+)"
        )
    return name


class SlugError(UsageError, ValueError):
    """A name with no letter or digit, so it has no split-safe slug."""


def slug(name: str, *, fallback: str | None = None) -> str:
    """The split-safe key of a free-form name: lower case, every run of other characters as one `_`.

    ``slug(" SD 1.5 + NegationCLIP ") == "sd_1_5_negationclip"``; ``slug("my__model") == "my_model"``.
    A name with no letter or digit gives `fallback`, or raises `SlugError` when there is none.
    """
    key = re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")
    if key:
        return key
    if fallback is not None:
        return fallback
    raise SlugError(f"name {name!r} has no letters or digits")


# --------------------------------------------------------------------------- the images config


def images_dir(dataset_dir: str | Path) -> Path:
    return Path(dataset_dir) / IMAGES_DIR


def split_glob(key: str) -> str:
    """The files of split KEY relative to the folder (the card's `data_files` and the Hub glob)."""
    return f"{IMAGES_DIR}/{key}-*.parquet"


def shard_path(dataset_dir: str | Path, key: str, rank: int, index: int) -> Path:
    """Where rank RANK writes its INDEX-th shard of split KEY."""
    return images_dir(dataset_dir) / f"{key}-r{rank:03d}-{index:05d}.parquet"


def shard_rank_index(path: Path) -> tuple[str, int, int] | None:
    """(key, rank, index) of a shard named as generation names them, else None."""
    match = SHARD_NAME.match(Path(path).name)
    return (match["key"], int(match["rank"]), int(match["index"])) if match else None


def image_splits(dataset_dir: str | Path) -> dict[str, list[Path]]:
    """Every image split of the folder: `images/{key}-*.parquet` (key = before the first '-'), sorted.

    Hidden files (a writer's temp files) never match. Files whose prefix is not a valid split
    name are not a split.
    """
    splits: dict[str, list[Path]] = {}
    folder = images_dir(dataset_dir)
    if not folder.is_dir():
        return splits
    for path in sorted(folder.glob("*-*.parquet")):
        key = path.name.split("-", 1)[0]
        if SPLIT_NAME.match(key) and path.is_file():
            splits.setdefault(key, []).append(path)
    return dict(sorted(splits.items()))


def split_files(dataset_dir: str | Path, key: str) -> list[Path]:
    """The parquet files of split KEY, in name order (empty when the split is absent)."""
    return image_splits(dataset_dir).get(key, [])


def has_images(dataset_dir: str | Path) -> bool:
    """Whether the folder holds an images config (at least one parquet file under images/)."""
    return images_dir(dataset_dir).is_dir() and any(images_dir(dataset_dir).glob("*.parquet"))


def prompt_file(dataset_dir: str | Path) -> Path | None:
    """The folder's prompt records: prompts.jsonl, else the first prompts/*.parquet, else None."""
    root = Path(dataset_dir)
    if (root / PROMPTS_JSONL).is_file():
        return root / PROMPTS_JSONL
    parquet = sorted((root / PROMPTS_DIR).glob("*.parquet"))
    return parquet[0] if parquet else None


def image_file_key(name: str, *, png_only: bool = False) -> tuple[str, int] | None:
    """(prompt_id, sample_index) of a file named `{prompt_id}_{sample_index}.png`, else None."""
    match = IMAGE_FILE_NAME.match(name)
    if not match or (png_only and match["extension"].lower() != "png"):
        return None
    return match["prompt_id"], int(match["sample_index"])


def image_file_name(prompt_id: str, sample_index: int) -> str:
    """`{prompt_id}_{sample_index}.png`: the name of an image outside a dataset (and inside a shard row)."""
    return f"{prompt_id}_{sample_index}.png"


def rank_path(out_path: str | Path, rank: int) -> Path:
    """`results.jsonl` → `results.rank{rank}.jsonl`: the file one process writes under a launcher."""
    out_path = Path(out_path)
    return out_path.with_name(f"{out_path.stem}.rank{rank}{out_path.suffix or '.jsonl'}")


# --------------------------------------------------------------------------- atomic writes


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """Write PATH whole or not at all: a hidden temp file next to it, fsync, then rename over it.

    A reader sees the old file or the new one, never half of one; a crash leaves at most a hidden
    `.{name}.*.tmp` that no glob of the layout matches. The file gets the usual permissions (as
    `open` would give it), not mkstemp's private ones. `mode` is "wb" or "w" (UTF-8, "\\n" lines).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        text = {"encoding": "utf-8", "newline": "\n"} if mode == "w" else {}
        with os.fdopen(descriptor, mode, **text) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~current_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write bytes or text (UTF-8) to PATH atomically (see `atomic_file`)."""
    with atomic_file(path, "w" if isinstance(data, str) else "wb") as handle:
        handle.write(data)
    return Path(path)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


@contextlib.contextmanager
def atomic_folder(out: str | Path, *, keep: Iterable[str] = ()) -> Iterator[Path]:
    """Build a folder whole or not at all: yield an empty staging folder next to OUT, then rename it to OUT.

    The entries named in KEEP of an existing OUT (e.g. generated images) move into the staging
    folder before the caller fills it, and the rest of the old OUT is deleted once the new one
    is in place. If the block fails (an interruption included), the old OUT is put back exactly
    as it was and the staging folder is removed: a crash leaves the old folder or none.
    """
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        staging.chmod(0o777 & ~current_umask())  # mkdtemp makes it private; a dataset folder is not
    except OSError as error:
        raise UserError(f"cannot write to {out}: {error.strerror or error}") from None
    backup: Path | None = None
    moved: list[str] = []
    emptied = False
    try:
        if out.is_dir():
            if any(out.iterdir()):
                backup = out.with_name(f".{out.name}.old-{os.getpid()}")
                shutil.rmtree(backup, ignore_errors=True)
                out.rename(backup)
                for name in sorted(set(keep)):
                    if (backup / name).exists():
                        (backup / name).rename(staging / name)
                        moved.append(name)
            else:
                out.rmdir()
                emptied = True
        yield staging
        staging.rename(out)
    except BaseException:
        if backup is not None:  # put the old folder back exactly as it was
            for name in moved:
                (staging / name).rename(backup / name)
            if not out.exists():
                backup.rename(out)
            backup = None
        elif emptied and not out.exists():
            out.mkdir()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def writable_parent(out: str | Path) -> Path:
    """The nearest existing ancestor of OUT (where a new folder would be created)."""
    return _nearest_existing(Path(out).parent)
