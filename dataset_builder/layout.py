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
import functools
import json
import os
import re
import shutil
import sys
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
# The form of a benchmark prompt id, `{category}_pos{P}_neg{N}_{k:03d}`: a file named after one with
# no `_{sample_index}` (`color_pos1_neg0_000.png`) lacks its sample index; it is not prompt `..._neg0` image 0.
BENCHMARK_ID_FORM = re.compile(r"^[a-z]+_pos\d+_neg\d+_\d{3}$")


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
    """(prompt_id, sample_index) of a file named `{prompt_id}_{sample_index}.png`, else None
    (also for a benchmark prompt id without its sample index, see `lacks_sample_index`)."""
    match = IMAGE_FILE_NAME.match(name)
    if not match or (png_only and match["extension"].lower() != "png") or lacks_sample_index(name):
        return None
    return match["prompt_id"], int(match["sample_index"])


def lacks_sample_index(name: str) -> bool:
    """Whether NAME is a benchmark prompt id plus an image extension, without `_{sample_index}`."""
    stem, _, extension = name.rpartition(".")
    return bool(extension and BENCHMARK_ID_FORM.match(stem))


def image_file_name(prompt_id: str, sample_index: int) -> str:
    """`{prompt_id}_{sample_index}.png`: the name of an image outside a dataset (and inside a shard row)."""
    return f"{prompt_id}_{sample_index}.png"


def rank_path(out_path: str | Path, rank: int) -> Path:
    """`results.jsonl` → `results.rank{rank}.jsonl`: the file one process writes under a launcher."""
    out_path = Path(out_path)
    return out_path.with_name(f"{out_path.stem}.rank{rank}{out_path.suffix or '.jsonl'}")


# --------------------------------------------------------------------------- atomic writes
#
# A file is written to a hidden temp file next to it and renamed over it. A folder is built in a
# hidden staging folder next to it; once the caller has filled it, the staging folder is renamed
# `.{name}.new-{token}` (the commit point: from then on the new folder wins), the old folder is
# renamed `.{name}.old-{token}`, the entries to keep move from old to new, new becomes the
# folder, and old is deleted. Between those renames there is a moment with no folder under the
# name: a process killed then leaves `.new-`/`.old-` siblings, which `recover_folder` (run by
# every `atomic_folder` before anything else, and by commands that read such a folder) finishes.

# The swap's journal inside `.{name}.new-{token}`: the entries to carry over from the old folder.
SWAP_JOURNAL = ".negt2ibench-swap.json"
_STAGES = ("tmp", "new", "old")
_TOKEN = re.compile(r"^\w+$")


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@functools.cache
def _host() -> str:
    import hashlib
    import socket

    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def _owner() -> str:
    """`{pid}@{host}` of this process, as written into temp file names (host: a short hash)."""
    return f"{os.getpid()}@{_host()}"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process, or we cannot tell: leave its files alone
    return True


def _remove_dead_temp_files(path: Path) -> None:
    """Delete the temp files of earlier writers of PATH on this machine whose process is gone."""
    import glob

    for temporary in path.parent.glob(f".{glob.escape(path.name)}.*@{_host()}.*.tmp"):
        pid = temporary.name[len(path.name) + 2 :].split("@", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_file(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """Write PATH whole or not at all: a hidden temp file next to it, fsync, then rename over it.

    A reader sees the old file or the new one, never half of one. A killed writer leaves a hidden
    `.{name}.{pid}@{host}.*.tmp` that no glob of the layout matches; the next write of PATH on
    that machine removes it. The file gets the usual permissions (as `open` would give it), not
    mkstemp's private ones. `mode` is "wb" or "w" (UTF-8, "\\n" lines).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_temp_files(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_owner()}.", suffix=".tmp")
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


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _stage_folders(out: Path) -> dict[str, dict[str, Path]]:
    """The hidden siblings `.{name}.{tmp|new|old}-{token}` of OUT, by stage and token."""
    stages: dict[str, dict[str, Path]] = {stage: {} for stage in _STAGES}
    if not out.parent.is_dir():
        return stages
    for entry in out.parent.iterdir():
        for stage in _STAGES:
            prefix = f".{out.name}.{stage}-"
            if entry.name.startswith(prefix) and _TOKEN.match(entry.name[len(prefix) :]):
                stages[stage][entry.name[len(prefix) :]] = entry
    return stages


def _fsync_folder(folder: Path) -> None:
    """Make the renames in FOLDER durable where the platform allows it (best effort)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


@contextlib.contextmanager
def _folder_lock(parent: Path) -> Iterator[None]:
    """Hold an advisory lock (filelock's flock) on PARENT itself, so one process at a time swaps
    folders there; no lock file is left behind. Where a folder cannot be locked, go on unlocked."""
    from filelock import lock_descriptor

    try:
        descriptor = os.open(parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            if not lock_descriptor(descriptor, blocking=False):
                print(f"waiting for another process writing in {parent} ...", file=sys.stderr, flush=True)
                lock_descriptor(descriptor, blocking=True)
        except OSError:
            pass  # a filesystem without locks
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def _finish_swap(out: Path, new: Path, old: Path) -> None:
    """Complete a committed swap: OUT → OLD, the journal's entries OLD → NEW, NEW → OUT, delete OLD.

    Every step can be repeated after a kill: each looks at what is already done.
    """
    journal = new / SWAP_JOURNAL
    keep: list[str] = json.loads(journal.read_text(encoding="utf-8"))["keep"] if journal.is_file() else []
    if _exists(out):
        if _exists(old):
            raise UserError(
                f"{out} was created again while an interrupted rewrite of it was unfinished: its previous "
                f"content is in {old}, the rewritten one in {new}; keep what you need, remove the others, "
                f"and run the command again"
            )
        out.rename(old)
    if old.is_dir():
        for name in keep:
            if _exists(old / name) and not _exists(new / name):
                (old / name).rename(new / name)
    journal.unlink(missing_ok=True)
    new.rename(out)
    _fsync_folder(out.parent)
    if _exists(old):
        _remove(old)


def _recover(out: Path) -> list[str]:
    """Finish or undo what a killed `atomic_folder` left next to OUT (the caller holds the lock)."""
    stages = _stage_folders(out)
    done: list[str] = []
    for token, new in sorted(stages["new"].items()):  # committed: the new folder wins
        old = stages["old"].pop(token, out.with_name(f".{out.name}.old-{token}"))
        _finish_swap(out, new, old)
        done.append(f"finished the interrupted rewrite of {out}")
    for old in stages["old"].values():  # not committed
        if _exists(out):
            _remove(old)  # what a finished swap had not deleted yet
            done.append(f"removed the leftover {old.name}")
            continue
        # OUT is missing (or an older release was killed mid-swap): put the previous folder back,
        # with the entries the older release had moved into its staging folder.
        old.rename(out)
        for staging in stages["tmp"].values():
            for entry in sorted(staging.iterdir()) if staging.is_dir() else ():
                if not _exists(out / entry.name):
                    entry.rename(out / entry.name)
        done.append(f"restored {out} from the interrupted rewrite")
    for staging in stages["tmp"].values():  # never committed: an unfinished new folder
        _remove(staging)
        done.append(f"removed the unfinished {staging.name}")
    return done


def recover_folder(out: str | Path) -> list[str]:
    """Finish, or undo, an `atomic_folder` rewrite of OUT that a killed process left half done.

    A rewrite that reached its commit point is completed (the new folder, with the entries it
    keeps from the old one); one that did not is dropped, leaving the old folder as it was; the
    hidden `.{name}.tmp-*`, `.new-*` and `.old-*` siblings are gone afterwards. `atomic_folder`
    runs this first; commands that read a folder written that way may run it too. Returns what
    was done (empty when there was nothing to recover).
    """
    out = Path(out).expanduser().absolute()
    if not out.parent.is_dir():
        return []
    with _folder_lock(out.parent):
        return _recover(out)


@contextlib.contextmanager
def atomic_folder(out: str | Path, *, keep: Iterable[str] = ()) -> Iterator[Path]:
    """Build a folder whole or not at all: yield an empty staging folder next to OUT, then swap it in.

    The caller fills the staging folder while OUT stays in place (it may read OUT meanwhile).
    If the block fails (an interruption included), the staging folder is removed and OUT is
    untouched. Otherwise the staging folder replaces OUT, and the entries named in KEEP of the
    old OUT (e.g. generated images) move into the new one unless the block wrote them too. A
    process killed at any moment leaves OUT as it was, or hidden siblings that the next
    `atomic_folder` or `recover_folder` of OUT completes before anything else.
    """
    out = Path(out).expanduser().absolute()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot write to {out}: {error.strerror or error}") from None
    with contextlib.suppress(OSError):  # (a deleted current folder has no path)
        if Path.cwd().resolve().is_relative_to(out.resolve()):
            raise UserError(f"cannot replace {out}: it holds the current folder; choose another output folder")
    with _folder_lock(out.parent):
        _recover(out)
        if _exists(out) and not out.is_dir():
            raise UserError(f"{out} exists and is not a folder")
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
            staging.chmod(0o777 & ~current_umask())  # mkdtemp makes it private; the folder is not
        except OSError as error:
            raise UserError(f"cannot write to {out}: {error.strerror or error}") from None
        try:
            yield staging
            write_atomic(staging / SWAP_JOURNAL, json.dumps({"keep": sorted(set(keep))}))
        except BaseException:
            _remove(staging)
            raise
        token = staging.name[len(f".{out.name}.tmp-") :]
        new = out.with_name(f".{out.name}.new-{token}")
        staging.rename(new)  # the commit point
        _fsync_folder(out.parent)
        _finish_swap(out, new, out.with_name(f".{out.name}.old-{token}"))


def writable_parent(out: str | Path) -> Path:
    """The nearest existing ancestor of OUT (where a new folder would be created)."""
    return _nearest_existing(Path(out).parent)
