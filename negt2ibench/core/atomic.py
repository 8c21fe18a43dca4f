"""Atomic writes of the dataset folder's files and folders, and the recovery of a killed one.

A file is written to a hidden temp file next to it and renamed over it (`atomic_file`). A folder
is built in a hidden staging folder next to it and swapped in (`atomic_folder`); a process killed
during the swap leaves hidden siblings that `recover_folder` finishes or drops, so the next
command finds the old folder or the new one, whole. `dataset_builder.layout` re-exports these:
every reader and writer of a dataset folder (the builder, generation, the scorer, the report)
gets them there. Nothing here imports another module of the project but the errors.
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
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from .errors import UserError

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
def atomic_file(path: str | Path, mode: str = "wb", *, durable: bool = True) -> Iterator[IO]:
    """Write PATH whole or not at all: a hidden temp file next to it, fsync, then rename over it.

    A reader sees the old file or the new one, never half of one. A killed writer leaves a hidden
    `.{name}.{pid}@{host}.*.tmp` that no glob of the layout matches; the next write of PATH on
    that machine removes it. The file gets the usual permissions (as `open` would give it), not
    mkstemp's private ones. `mode` is "wb" or "w" (UTF-8, "\\n" lines). `durable=False` leaves
    out the fsync, for files a crash may lose (a cache in a temporary folder): still never half a file
    to a reader, and many times faster.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_temp_files(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_owner()}.", suffix=".tmp")
    try:
        opened: IO = (
            os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") if mode == "w" else os.fdopen(descriptor, "wb")
        )
        with opened as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~current_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, data: bytes | str, *, durable: bool = True) -> Path:
    """Write bytes or text (UTF-8) to PATH atomically (see `atomic_file`)."""
    with atomic_file(path, "w" if isinstance(data, str) else "wb", durable=durable) as handle:
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


_held = threading.local()  # the folders this thread has locked (the lock is re-entrant per thread)


@contextlib.contextmanager
def _folder_lock(parent: Path) -> Iterator[None]:
    """Hold an advisory lock (filelock's flock) on PARENT itself, so one process at a time swaps
    folders there; no lock file is left behind. Re-entrant within a thread (a block of
    `atomic_folder` may recover a sibling); where a folder cannot be locked, go on unlocked."""
    from filelock import lock_descriptor

    held: set[str] = _held.__dict__.setdefault("folders", set())
    key = str(parent.resolve())
    if key in held:
        yield
        return
    try:
        descriptor = os.open(parent, os.O_RDONLY)
    except OSError:
        yield
        return
    held.add(key)
    try:
        try:
            if not lock_descriptor(descriptor, blocking=False):
                print(f"waiting for another process writing in {parent} ...", file=sys.stderr, flush=True)
                lock_descriptor(descriptor, blocking=True)
        except OSError:
            pass  # a filesystem without locks
        yield
    finally:
        held.discard(key)
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
