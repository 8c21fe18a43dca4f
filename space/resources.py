"""Bounded resources of the Space: the upload cache, scoring per client, and image sizes.

- `CacheBudget`: the files the app holds (gradio's uploads and outputs, which it tracks in the
  Blocks' `temp_file_sets`, and the app's own temporary folder) are kept under `max_bytes`, oldest
  first out, after every event that took an upload and every `SWEEP_SECONDS` in the background
  (an upload never handed to an event counts too). Gradio's own `delete_cache` (`DELETE_CACHE`)
  removes what is older than an hour, and everything when the server stops.
- `ClientSlots`: at most `per_client` scoring (or submitting) events of one client
  (`leaderboard.intake.identity.requester`) run at once; the event's `concurrency_limit` and the queue's
  `max_size` bound the rest (`QUEUE_SIZE`, `SCORE_CONCURRENCY`, `SUBMIT_CONCURRENCY`), so one
  client's burst is answered at once with a refusal instead of queueing in front of everyone.
- `RecentEvents`: per client, the times of recent events of a kind (uploads refused as invalid
  files) within a window, for a per-client hourly limit; in memory (a restart forgets them).
- `bounded_image`: an upload above `MAX_SCORE_PIXELS` is downscaled before the models: each model
  resizes to its own input size anyway (RF-DETR, SAM 2.1 at 1024, SigLIP 2, Depth-Anything V2 at
  518), and the rules read relative geometry; the 2048 x 2048 images of the largest generators
  pass untouched.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from PIL import Image

log = logging.getLogger(__name__)
CACHE_BYTES = 2 * 2**30  # the app's files on disk, at most
DELETE_CACHE = (600, 3600)  # gradio's delete_cache: every 10 minutes, files older than an hour
SWEEP_SECONDS = 30.0
LOW_WATER = 0.9  # a walk that finds the app's files over their bound leaves them at this share of it
QUEUE_SIZE = 64  # events waiting in the queue, at most
SCORE_CONCURRENCY = 2  # scoring events running at once (a second client is not stuck behind the first)
SUBMIT_CONCURRENCY = 2  # submit events validating at once: one per client, so another client is never queued
MAX_SCORE_PIXELS = 2048 * 2048
# Gallery and Compare events of one kind running at once (gradio runs one at a time by default). Each
# browser tab waits on at most one page of a lane: its newer page ends the older one's wait at once
# (`space.verified_images.fair_fetch`), so however fast a tab pages it holds one of these while its
# fetch takes its turn, and up to 15 tabs waiting on a slow repo leave room for another's page. The
# fetches themselves are bounded there (`verified_source.FETCH_WORKERS` running, `FETCH_QUEUED`
# waiting), not here.
GALLERY_CONCURRENCY = 16


def release_memory() -> None:
    """Hand freed memory back to the system: a page of large images leaves glibc's heap and
    pyarrow's pool holding what they no longer use (tens of MB an image). A no-op elsewhere."""
    try:
        import pyarrow

        pyarrow.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - nothing to release, or no pyarrow: nothing to do
        pass
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): its allocator returns memory itself
        pass


def bounded_image(image: Image.Image, max_pixels: int = MAX_SCORE_PIXELS) -> Image.Image:
    """`image`, or a copy downscaled (Lanczos, aspect kept) to at most `max_pixels` pixels."""
    width, height = image.size
    if width * height <= max_pixels:
        return image
    scale = (max_pixels / (width * height)) ** 0.5
    size = (max(1, int(width * scale)), max(1, int(height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


class ClientSlots:
    """How many events each client has running; `hold(client)` refuses one over `per_client`."""

    def __init__(self, per_client: int = 1):
        self.per_client = per_client
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, client: str):
        """Yields True with a slot held for the block, or False (nothing held) when the client has none left."""
        with self._lock:
            taken = self._running.get(client, 0) < self.per_client
            if taken:
                self._running[client] = self._running.get(client, 0) + 1
        try:
            yield taken
        finally:
            if taken:
                with self._lock:
                    self._running[client] -= 1
                    if not self._running[client]:
                        del self._running[client]


class RecentEvents:
    """Per client, when its recent events happened: `count` within the last `window` seconds."""

    def __init__(self, window: float = 3600.0):
        self.window = window
        self._times: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> list[float]:
        recent = [t for t in self._times.get(client, []) if t > now - self.window]
        if recent:
            self._times[client] = recent
        else:
            self._times.pop(client, None)  # clients with nothing recent take no memory
        return recent

    def count(self, client: str, now: float) -> int:
        with self._lock:
            return len(self._recent(client, now))

    def add(self, client: str, now: float) -> None:
        with self._lock:
            self._times[client] = [*self._recent(client, now), now]

    def free_at(self, client: str, now: float, limit: int) -> float:
        """When the client will have fewer than `limit` events in the window again (now if it has)."""
        with self._lock:
            recent = self._recent(client, now)
        return now if len(recent) < limit else recent[len(recent) - limit] + self.window


class CacheBudget:
    """Keeps the app's files under `max_bytes`: `enforce()` walks them and, when they are over it,
    removes the oldest until they fit in `LOW_WATER` of it; `after_write(added)` walks only when what
    was kept since the last walk may have taken them over."""

    def __init__(self, max_bytes: int, tracked: Callable[[], Iterable[set]], folders: Callable[[], Iterable[Path]]):
        self.max_bytes = max_bytes
        self._tracked = tracked  # gradio's sets of temporary files (uploads, outputs)
        self._folders = folders  # folders whose files are all the app's (its temporary folder)
        self._lock = threading.Lock()
        self._swept: int | None = None  # the files' bytes the last walk left (None: no walk yet)
        self._added = 0  # bytes the app said it kept since

    def after_write(self, added: int) -> int:
        """After the app kept ADDED bytes of files: `enforce()` if the last walk's total and what was
        kept since may be over the bound, else nothing; the bytes removed.

        A walk visits every file of the app (tens of ms with thousands of thumbnails); after every
        fetch, visitors paging fast made it a large share of the app's time. Files the app did not
        say it kept (gradio's copies of what it serves, uploads) are found by the next walk: this
        one's, or the periodic sweep's (`SWEEP_SECONDS`)."""
        with self._lock:
            self._added += added
            under = self._swept is not None and self._swept + self._added <= self.max_bytes
        return 0 if under else self.enforce()

    def _files(self) -> list[tuple[float, int, str, set | None]]:
        found: dict[str, tuple[float, int, str, set | None]] = {}
        for owner in self._tracked():
            for _ in range(3):  # gradio adds to the set from its event loop: copy it again if it changed
                try:
                    names = list(owner)
                    break
                except RuntimeError:
                    continue
            else:
                names = []
            for name in names:
                try:
                    status = os.lstat(name)
                except OSError:
                    owner.discard(name)
                    continue
                found[name] = (status.st_ctime, status.st_size, name, owner)
        for folder in self._folders():
            for path in folder.rglob("*") if folder.is_dir() else ():
                try:
                    status = path.lstat()
                except OSError:
                    continue
                if path.is_file() and str(path) not in found:
                    found[str(path)] = (status.st_ctime, status.st_size, str(path), None)
        return sorted(found.values())

    def size(self) -> int:
        return sum(size for _, size, _, _ in self._files())

    def enforce(self) -> int:
        """Walk the app's files; when they are over `max_bytes`, remove the oldest until the rest fit in
        `LOW_WATER` of it. The bytes removed."""
        with self._lock:
            files = self._files()
            total = sum(size for _, size, _, _ in files)
            # over the bound: down to LOW_WATER of it, so the next writes do not each need a walk
            excess = total - int(self.max_bytes * LOW_WATER) if total > self.max_bytes else 0
            freed = 0
            for _, size, name, owner in files:
                if freed >= excess:
                    break
                try:
                    os.remove(name)
                except OSError:
                    continue
                if owner is not None:
                    owner.discard(name)
                freed += size
            if freed:
                log.info("upload cache over %d bytes: removed %d bytes of the oldest files", self.max_bytes, freed)
            self._swept, self._added = total - freed, 0
            return freed


def blocks_cache(blocks: Any, max_bytes: int, folders: Callable[[], Iterable[Path]]) -> CacheBudget:
    """The `CacheBudget` of a gradio Blocks: its `temp_file_sets` and `folders`."""
    return CacheBudget(max_bytes, lambda: list(getattr(blocks, "temp_file_sets", [])), folders)
