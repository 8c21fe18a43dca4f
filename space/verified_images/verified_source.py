"""Where the Gallery and Compare tabs get their records and images: the store, and each verified
entry's images repo at its submitted revision.

- `EntryRecords`: an entry's results, read from the store once and kept compact (the filters'
  `GalleryRow`s, and each record as its JSON line, parsed again only when shown), for a bounded
  number of entries, newest use last out.
- `GalleryImages`: images fetched lazily through the app's `ImageSourceFactory` (the spot check's
  `leaderboard.store.image_sources.hub_images`: only the rows asked for, at the entry's pinned commit), a page's
  missing ones in one read. Each fetched image is drawn twice (its thumbnail, and its full view at
  most `FULL_SIDE` a side; the thumbnail is made from that, so a large image is resized once) and
  dropped before the next one is decoded; both drawings are kept in a
  folder of the app's own temporary folder, so the Space's cache bound
  (`space.resources.CacheBudget`, enforced after each page's writes and by the sweep) bounds them
  too; a file swept away is fetched again when next shown. Fetches are shared among visitors
  (`fair_fetch`): at most `FETCH_WORKERS` at once in the app (so at most that many images
  decoded and drawn at once), `FETCH_PER_SOURCE` of one images repo (a slow repo delays only its
  own pages), `FETCH_PER_VISITOR` of one visitor (the visitor, its session and the request come
  from `space.visitors.current_visit`), and `FETCH_QUEUED` waiting (one more sheds the oldest
  of the visitor with the most waiting: `BUSY`); visitors take turns, a visitor's newest page is
  fetched first, and a session's newer page drops its older one's fetch (stopped at its next
  image; that page's wait ends at once, its missing images `SUPERSEDED`). A page waits for its
  images `page_seconds` at most (the rest show as "still being fetched", and are there on the
  next load). After a page's images are drawn, the memory they took is handed back to the
  system (`space.resources.release_memory`). An image that cannot be fetched gets a placeholder
  and the reason, and is not asked for again for `retry_seconds` (nor is a repo that cannot be
  opened): one unreachable repo never fails the page, nor is it asked again on every page.
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
from typing import NamedTuple

from PIL import Image

from evaluator.results import ResultRecord
from leaderboard.store.image_sources import ImageSource, ImageSourceFactory, unreachable_reason
from leaderboard.store.sqlite_store import Entry, LeaderboardStore
from negt2ibench.core.atomic import write_atomic

from ..resources import release_memory
from ..visitors import Visit, current_visit
from . import verified_views
from .fair_fetch import DONE, SHED, FairFetcher, FairQueue, FetchJob

log = logging.getLogger(__name__)
RECORDS_CACHED = 8  # entries whose records are kept in memory (about 15 MB each for 19,200 records)
SOURCES_CACHED = 16  # images repos kept open
RETRY_SECONDS = 300.0  # an image or repo that could not be fetched is not asked for again for this long
FETCH_WORKERS = 4  # fetches at once in the app: at most this many images decoded and drawn at once
FETCH_PER_SOURCE = 2  # of them, at once from one images source (repo, commit, split)
FETCH_PER_VISITOR = 1  # of them, at once for one visitor (its newest page first)
FETCH_QUEUED = 32  # fetches waiting, at most (they hold records, not images): one more sheds one
PAGE_SECONDS = 20.0  # a page waits this long for its images, then shows what came
FULL_SIDE = 2048  # the full view is kept drawn at most this large a side
PENDING = "still being fetched from its images repo (a slow repo); shown when it arrives"
SUPERSEDED = "not fetched: a newer page of yours came first (only the newest is fetched); show this one again"
BUSY = "not fetched: too many pages were waiting for their images; show this one again"
PAGE, FULL = "page", "full"  # the lanes of a visitor's fetches: a newer page ends only an older page's

Key = verified_views.Key
Take = Callable[[Key, Image.Image], None]  # what a fetch hands each image to, as it comes
Stopped = Callable[[], bool]  # asked between images: has a newer page of the visitor come?


@dataclass
class IndexedRecords:
    """One entry's records: `rows` in corpus order (prompt, then sample), each record's JSON by key."""

    split: str  # the images split: the results' model key
    rows: list[verified_views.GalleryRow]
    lines: dict[Key, str]
    by_prompt: dict[str, list[verified_views.GalleryRow]] = field(default_factory=dict)

    def record(self, key: Key) -> ResultRecord:
        return ResultRecord.model_validate_json(self.lines[key])


def index_records(records: Sequence[ResultRecord], order: Callable[[str], int]) -> IndexedRecords:
    """The compact form of an entry's records; `order` gives a prompt id's place in the corpus."""
    ordered = sorted(records, key=lambda r: (order(r.prompt_id), r.prompt_id, r.sample_index))
    rows = [verified_views.gallery_row(record) for record in ordered]
    lines = {(r.prompt_id, r.sample_index): r.model_dump_json() for r in ordered}
    by_prompt: dict[str, list[verified_views.GalleryRow]] = {}
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


class FullView(NamedTuple):
    """One image's full view (`GalleryImages.full`): the drawn image, or None and why not."""

    image: Image.Image | None
    reason: str  # "" when the image is there


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
        page_seconds: float | None = None,
        after_write: Callable[[int], object] | None = None,
        visit: Callable[[], Visit] = current_visit,
        fetches: FairQueue | None = None,
    ):
        self.open_images = open_images
        self._folder = folder
        self.retry_seconds = retry_seconds
        self.page_seconds = PAGE_SECONDS if page_seconds is None else page_seconds
        self.after_write = after_write  # the app's cache bound, told the bytes each fetch kept
        self._clock = clock
        self._visit = visit  # who asks, and in which request (`space.visitors`)
        self._fetcher = FairFetcher(
            fetches or FairQueue(FETCH_WORKERS, FETCH_PER_SOURCE, FETCH_PER_VISITOR, FETCH_QUEUED)
        )
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

    def _thumb_path(self, entry: Entry, source: tuple[str, str, str], key: Key) -> Path:
        return self._file("thumbs", _digest(entry.submission_id, *source, *key))

    def _full_path(self, entry: Entry, source: tuple[str, str, str], key: Key) -> Path:
        return self._file("full", _digest(entry.submission_id, *source, *key))

    def placeholder(self, reason: str, side: int = verified_views.THUMB_SIDE) -> str:
        path = self._file("placeholders", _digest(reason, side))
        if not path.exists():
            _keep(path, _png(verified_views.placeholder(reason, side)))
        return str(path)

    def _written(self, kept_bytes: int) -> None:
        if self.after_write is not None:
            try:
                self.after_write(kept_bytes)
            except Exception:  # noqa: BLE001 - a failed sweep must not fail the page; the next one retries
                log.exception("cache bound after a gallery write failed")

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

    # -- fetching: jobs of the fair queue (`fair_fetch`), one per page of a visitor's request
    def _submit(self, lane: str, source: tuple[str, str, str], work: Callable[[Stopped], dict[Key, str]]) -> FetchJob:
        visit = self._visit()
        return self._fetcher.submit(FetchJob(visit.visitor, visit.request, lane, source, work, session=visit.session))

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

    @staticmethod
    def _read(opened: ImageSource, keys: list[Key], take: Take, got: set[Key], stopped: Stopped) -> str:
        """Read `keys`, each image handed to `take` as it comes (and dropped); "" when all came (or the
        read was stopped), else why the rest did not."""
        images = opened.images(keys)
        try:
            for key, image in images:
                got.add(key)
                take(key, image)
                del image
                if stopped():
                    break
        except Exception as error:  # noqa: BLE001 - any failure of a read is this page's reason, not its end
            return unreachable_reason(error)  # a sentence of ours: the library's text goes to the log
        finally:
            getattr(images, "close", lambda: None)()  # a generator stopped early lets go of its files now
        return ""

    def fetch(
        self, source: tuple[str, str, str], keys: Sequence[Key], take: Take, stopped: Stopped = lambda: False
    ) -> dict[Key, str]:
        """Hand each image of `keys` that can be had to `take`, one at a time; why each other one
        cannot be had (in one read, then, after a failure, one read per image left, so each gets
        its own reason). Once `stopped()` says so, the rest are `SUPERSEDED` (not remembered)."""
        failed = {key: self._remembered((source, key)) or self._remembered((source,)) for key in keys}
        failed = {key: reason for key, reason in failed.items() if reason}
        wanted = [key for key in keys if key not in failed]
        if not wanted:
            return failed
        if not source[0]:
            return {**failed, **dict.fromkeys(wanted, "this entry names no images repo")}
        try:
            opened = self._open(source)
        except Exception as error:  # noqa: BLE001 - unreachable, private, missing ...
            reason = unreachable_reason(error, f"{source[0]}@{source[1][:12] or 'main'}")
            self._remember((source,), reason)
            return {**failed, **dict.fromkeys(wanted, reason)}
        got: set[Key] = set()
        reason = self._read(opened, wanted, take, got, stopped)
        left = [key for key in wanted if key not in got]
        reasons: dict[Key, str] = {}
        if reason and len(left) > 1:  # the read stopped at one image: each of the rest alone, for its own reason
            for key in left:
                if stopped():
                    break
                why = self._read(opened, [key], take, got, stopped)
                if key not in got:
                    reasons[key] = why or reason
        elif not stopped():
            reasons = dict.fromkeys(left, reason or "not in the images repo")
        for key, why in reasons.items():
            failed[key] = why
            self._remember((source, key), why)
        # Not read because a newer page of the visitor came: no failure, so not remembered either.
        failed.update({key: SUPERSEDED for key in left if key not in got and key not in reasons})
        return failed

    def _make(
        self, entry: Entry, source: tuple[str, str, str], records: Sequence[ResultRecord], stopped: Stopped
    ) -> dict[Key, str]:
        """Fetch the records' images and keep each one's thumbnail and full view, drawn, one image
        in memory at a time; why each image that is not kept is not. Runs as a job of the fair queue."""
        by_key = {(r.prompt_id, r.sample_index): r for r in records}
        broken: dict[Key, str] = {}
        kept: list[int] = []  # the bytes of each file kept

        def take(key: Key, image: Image.Image) -> None:
            try:
                record = by_key[key]
                full = verified_views.shrunk(image, FULL_SIDE)  # resized once; the thumbnail comes from this
                scale = full.width / image.width
                drawn_full = _png(verified_views.drawn(full, record, scale=scale), 1)
                _keep(self._full_path(entry, source, key), drawn_full)
                kept.append(len(drawn_full))
                thumbnail = _png(verified_views.drawn(full, record, verified_views.THUMB_SIDE, scale=scale))
                _keep(self._thumb_path(entry, source, key), thumbnail)
                kept.append(len(thumbnail))
            except Exception as error:  # noqa: BLE001 - a record that cannot be drawn, a full disk: this image only
                log.exception("drawing %s failed", key)
                broken[key] = f"could not draw it: {type(error).__name__}: {error}"

        try:
            return {**self.fetch(source, list(by_key), take, stopped), **broken}
        finally:
            release_memory()
            # once per fetch, in its worker, and only when it kept a file: a page whose images are
            # kept already, or that a newer page ended, never reaches the bound (it walked the cache
            # once per page event: a visitor paging fast slowed every other visitor's page)
            if kept:
                self._written(sum(kept))

    def _wait(self, job: FetchJob) -> Callable[[Key], str]:
        """Wait for the job `page_seconds` at most; why an image it was to make is not there: its
        reason when the job ended, `SUPERSEDED` when a newer page of the visitor ended it, `BUSY` when
        the full queue shed it, else `PENDING` (it goes on; its images show on the next load)."""
        job.over.wait(self.page_seconds)
        if job.state == DONE and job.error is not None:
            raise job.error
        if job.state == DONE:
            reasons: dict[Key, str] = job.result
            return lambda key: reasons.get(key, "not fetched")
        if job.state == SHED:
            return lambda key: BUSY
        return lambda key: SUPERSEDED if job.stop else PENDING

    def thumbnails(self, entry: Entry, split: str, records: Sequence[ResultRecord]) -> list[Shown]:
        """One thumbnail per record (in order), drawn once from its fetched image and kept; those
        not made yet are made by one job of the fair queue, waited for `page_seconds` at most (what
        comes later shows on the next load)."""
        source = self._source_of(entry, split)
        keys = [(r.prompt_id, r.sample_index) for r in records]
        paths = [self._thumb_path(entry, source, key) for key in keys]
        missing = [records[i] for i, path in enumerate(paths) if not path.exists()]
        why: Callable[[Key], str] = lambda key: "not fetched"  # noqa: E731
        if missing:
            why = self._wait(self._submit(PAGE, source, lambda stopped: self._make(entry, source, missing, stopped)))
        shown = []
        for key, path in zip(keys, paths, strict=True):
            if path.exists():
                shown.append(Shown(str(path)))
            else:
                shown.append(Shown(self.placeholder(why(key)), why(key)))
        return shown

    def full(self, entry: Entry, split: str, record: ResultRecord) -> FullView:
        """The full view of the record's image, drawn with its boxes (at most FULL_SIDE a side): kept
        from its thumbnail's fetch, else fetched now by a job of the fair queue; or None and why."""
        source = self._source_of(entry, split)
        key = (record.prompt_id, record.sample_index)
        path = self._full_path(entry, source, key)
        if not path.exists():
            why = self._wait(self._submit(FULL, source, lambda stopped: self._make(entry, source, [record], stopped)))
            if not path.exists():
                return FullView(None, why(key))
        try:
            with Image.open(path) as kept:
                return FullView(kept.convert("RGB"), "")
        except (OSError, ValueError):  # swept by the cache bound meanwhile, or torn
            return FullView(None, "not kept any more; show it again")


def _keep(path: Path, data: bytes) -> None:
    """Write a cache file whole (a reader never sees half of it); no fsync: the cache lives in the
    app's temporary folder, which a crash loses anyway."""
    write_atomic(path, data, durable=False)


def _png(image: Image.Image, compress_level: int = 6) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()
