"""Where the Gallery and Compare tabs get their records and images: the store, and each verified
entry's images repo at its submitted revision.

- `EntryRecords`: an entry's results, read from the store once and kept compact (the filters'
  `GalleryRow`s, and each record as its JSON line, parsed again only when shown), for a bounded
  number of entries, newest use last out.
- `GalleryImages`: images fetched lazily through the app's `ImageSourceFactory` (the spot check's
  `leaderboard.images.hub_images`: only the rows asked for), a page's missing ones in one read. Each
  fetched image is kept on disk, with its thumbnail drawn once, in a folder of the app's own
  temporary folder, so the Space's cache bound (`space.resources.CacheBudget`, which sweeps that
  folder) bounds it too; a file swept away is fetched again when next shown. An image that cannot
  be fetched gets a placeholder and the reason, and is not asked for again for `retry_seconds`
  (nor is a repo that cannot be opened): one unreachable repo never fails the page, nor is it
  asked again on every page.
"""

from __future__ import annotations

import hashlib
import io
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from evaluator.results import ResultRecord
from leaderboard.images import ImageSource, ImageSourceFactory, unreachable_reason
from leaderboard.store import Entry, LeaderboardStore
from negt2ibench.core.atomic import write_atomic

from . import view

log = logging.getLogger(__name__)
RECORDS_CACHED = 8  # entries whose records are kept in memory (about 15 MB each for 19,200 records)
SOURCES_CACHED = 16  # images repos kept open
RETRY_SECONDS = 300.0  # an image or repo that could not be fetched is not asked for again for this long

Key = view.Key


@dataclass
class IndexedRecords:
    """One entry's records: `rows` in corpus order (prompt, then sample), each record's JSON by key."""

    split: str  # the images split: the results' model key
    rows: list[view.GalleryRow]
    lines: dict[Key, str]
    by_prompt: dict[str, list[view.GalleryRow]] = field(default_factory=dict)

    def record(self, key: Key) -> ResultRecord:
        return ResultRecord.model_validate_json(self.lines[key])


def index_records(records: Sequence[ResultRecord], order: Callable[[str], int]) -> IndexedRecords:
    """The compact form of an entry's records; `order` gives a prompt id's place in the corpus."""
    ordered = sorted(records, key=lambda r: (order(r.prompt_id), r.prompt_id, r.sample_index))
    rows = [view.gallery_row(record) for record in ordered]
    lines = {(r.prompt_id, r.sample_index): r.model_dump_json() for r in ordered}
    by_prompt: dict[str, list[view.GalleryRow]] = {}
    for row in rows:
        by_prompt.setdefault(row.prompt_id, []).append(row)
    split = ordered[0].model_key if ordered else ""
    return IndexedRecords(split, rows, lines, by_prompt)


class EntryRecords:
    """The records of entries, read from the store once each (while the entry is unchanged)."""

    def __init__(self, store: LeaderboardStore, prompt_ids: Sequence[str], max_entries: int = RECORDS_CACHED):
        self.store = store
        self.max_entries = max_entries
        self._position = {prompt_id: i for i, prompt_id in enumerate(prompt_ids)}
        self._cached: OrderedDict[tuple, IndexedRecords] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _version(entry: Entry) -> tuple:
        check = entry.verification
        return (entry.submission_id, entry.status, check.method if check else "", check.at if check else 0.0)

    def of(self, entry: Entry) -> IndexedRecords:
        version = self._version(entry)
        with self._lock:  # one read of a store at a time: two tabs asking at once read it once
            if version in self._cached:
                self._cached.move_to_end(version)
                return self._cached[version]
            indexed = index_records(
                self.store.get_results(entry.submission_id), lambda p: self._position.get(p, len(self._position))
            )
            self._cached[version] = indexed
            while len(self._cached) > self.max_entries:
                self._cached.popitem(last=False)
            return indexed


@dataclass(frozen=True)
class Shown:
    """A thumbnail to show: its file (the drawn image, or a placeholder) and, when the image
    itself could not be fetched, why."""

    path: str
    reason: str = ""


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:40]


class GalleryImages:
    """Entries' images, fetched on first view and kept on disk (see the module's docstring)."""

    def __init__(
        self,
        open_images: ImageSourceFactory,
        folder: Callable[[], Path],
        *,
        retry_seconds: float = RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.open_images = open_images
        self._folder = folder
        self.retry_seconds = retry_seconds
        self._clock = clock
        self._sources: OrderedDict[tuple[str, str, str], ImageSource] = OrderedDict()
        self._failed: dict[tuple, tuple[float, str]] = {}  # (source,) or (source, key) → (when, reason)
        self._lock = threading.Lock()

    # -- files
    def _file(self, kind: str, digest: str) -> Path:
        """`gallery/KIND/ab/abcdef….png`: a folder per first two hex digits keeps folders small."""
        return self._folder() / "gallery" / kind / digest[:2] / f"{digest}.png"

    @staticmethod
    def _source_of(entry: Entry, split: str) -> tuple[str, str, str]:
        return (entry.images_repo, entry.images_revision or "main", split)

    def _image_path(self, source: tuple[str, str, str], key: Key) -> Path:
        return self._file("images", _digest(*source, *key))

    def _thumb_path(self, entry: Entry, source: tuple[str, str, str], key: Key) -> Path:
        return self._file("thumbs", _digest(entry.submission_id, *source, *key))

    def placeholder(self, reason: str, side: int = view.THUMB_SIDE) -> str:
        path = self._file("placeholders", _digest(reason, side))
        if not path.exists():
            _keep(path, _png(view.placeholder(reason, side)))
        return str(path)

    # -- failures remembered for a while
    def _remembered(self, what: tuple) -> str:
        with self._lock:
            failed = self._failed.get(what)
            if failed is None:
                return ""
            if self._clock() - failed[0] >= self.retry_seconds:
                del self._failed[what]
                return ""
            return failed[1]

    def _remember(self, what: tuple, reason: str) -> None:
        with self._lock:
            self._failed[what] = (self._clock(), reason)

    # -- fetching
    def _open(self, source: tuple[str, str, str]) -> ImageSource:
        with self._lock:
            if source in self._sources:
                self._sources.move_to_end(source)
                return self._sources[source]
        opened = self.open_images(*source)
        with self._lock:
            self._sources[source] = opened
            while len(self._sources) > SOURCES_CACHED:
                self._sources.popitem(last=False)
        return opened

    def _read(self, opened: ImageSource, keys: list[Key], got: dict[Key, Image.Image]) -> str:
        """Read `keys` into `got`; "" when all came, else why the rest did not."""
        try:
            for key, image in opened.images(keys):
                got[key] = image
        except Exception as error:  # noqa: BLE001 - any failure of a read is this page's reason, not its end
            return unreachable_reason(error)  # a sentence of ours: the library's text goes to the log
        return ""

    def fetch(self, source: tuple[str, str, str], keys: Sequence[Key]) -> tuple[dict[Key, Image.Image], dict[Key, str]]:
        """The images of `keys` that can be had, and why each other one cannot (in one read, then,
        after a failure, one read per image left, so each gets its own reason)."""
        failed = {key: self._remembered((source, key)) or self._remembered((source,)) for key in keys}
        failed = {key: reason for key, reason in failed.items() if reason}
        wanted = [key for key in keys if key not in failed]
        got: dict[Key, Image.Image] = {}
        if not wanted:
            return got, failed
        if not source[0]:
            reason = "this entry names no images repo"
            return got, {**failed, **dict.fromkeys(wanted, reason)}
        try:
            opened = self._open(source)
        except Exception as error:  # noqa: BLE001 - unreachable, private, missing ...
            reason = unreachable_reason(error, f"{source[0]}@{source[1] or 'main'}")
            self._remember((source,), reason)
            return got, {**failed, **dict.fromkeys(wanted, reason)}
        reason = self._read(opened, wanted, got)
        reasons = dict.fromkeys((key for key in wanted if key not in got), reason or "not in the images repo")
        if reason and len(reasons) > 1:  # the read stopped at one image: each of the rest alone, for its own reason
            for key in list(reasons):
                alone: dict[Key, Image.Image] = {}
                why = self._read(opened, [key], alone)
                if key in alone:
                    got[key] = alone[key]
                    del reasons[key]
                elif why:
                    reasons[key] = why
        for key, why in reasons.items():
            failed[key] = why
            self._remember((source, key), why)
        return got, failed

    def thumbnails(self, entry: Entry, split: str, records: Sequence[ResultRecord]) -> list[Shown]:
        """One thumbnail per record (in order): drawn once from its fetched image and kept; the
        images of those not made yet are fetched in one read."""
        source = self._source_of(entry, split)
        keys = [(r.prompt_id, r.sample_index) for r in records]
        paths = [self._thumb_path(entry, source, key) for key in keys]
        missing = [i for i, path in enumerate(paths) if not path.exists()]
        shown: dict[int, Shown] = {i: Shown(str(paths[i])) for i in range(len(keys)) if i not in missing}
        if missing:
            cached = {i: self._cached_image(source, keys[i]) for i in missing}
            got, failed = self.fetch(source, [keys[i] for i in missing if cached[i] is None])
            for i in missing:
                image = cached[i] or got.get(keys[i])
                if image is None:
                    reason = failed.get(keys[i], "not fetched")
                    shown[i] = Shown(self.placeholder(reason), reason)
                    continue
                try:
                    if cached[i] is None:
                        _keep(self._image_path(source, keys[i]), _png(image, compress_level=1))
                    _keep(paths[i], _png(view.drawn(image, records[i], view.THUMB_SIDE)))
                    shown[i] = Shown(str(paths[i]))
                except Exception as error:  # noqa: BLE001 - a record that cannot be drawn, a full disk: this image only
                    log.exception("thumbnail of %s failed", keys[i])
                    reason = f"could not draw it: {type(error).__name__}: {error}"
                    shown[i] = Shown(self.placeholder(reason), reason)
        return [shown[i] for i in range(len(keys))]

    def _cached_image(self, source: tuple[str, str, str], key: Key) -> Image.Image | None:
        path = self._image_path(source, key)
        try:
            with Image.open(path) as stored:
                return stored.convert("RGB")
        except (OSError, ValueError):  # not there (never fetched, or swept by the cache bound), or torn
            return None

    def image(self, entry: Entry, split: str, key: Key) -> tuple[Image.Image | None, str]:
        """The full image of `key` (kept from its thumbnail's fetch, else fetched now), or None and why."""
        source = self._source_of(entry, split)
        cached = self._cached_image(source, key)
        if cached is not None:
            return cached, ""
        got, failed = self.fetch(source, [key])
        if key not in got:
            return None, failed.get(key, "not fetched")
        _keep(self._image_path(source, key), _png(got[key], compress_level=1))
        return got[key], ""


def _keep(path: Path, data: bytes) -> None:
    """Write a cache file whole (a reader never sees half of it); no fsync: the cache lives in the
    app's temporary folder, which a crash loses anyway."""
    write_atomic(path, data, durable=False)


def _png(image: Image.Image, compress_level: int = 6) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()
