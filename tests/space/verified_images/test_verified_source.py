"""Where the Gallery gets records and images: fetched once, kept on disk, each failure its own
reason, remembered for a while (a fake clock), and the records read from the store once."""

from __future__ import annotations

import threading

import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from leaderboard.store.image_sources import ImagesUnreachable
from leaderboard.store.sqlite_store import SQLiteStore
from space.resources import CacheBudget
from space.verified_images.fair_fetch import FairQueue
from space.verified_images.verified_source import BUSY, SUPERSEDED, EntryRecords, GalleryImages
from space.visitors import Visit
from tests.helpers.gallery_helpers import add_entry, some_prompts, varied_results


@pytest.fixture(scope="module")
def prompts():
    return some_prompts(load_prompts(None), per_setting=1)  # 48 prompts


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Images:
    """An image source whose images are coloured squares; `broken` keys fail as a corrupt image
    does (mid-read), `absent` ones are missing (reported after the others, as ParquetImages does)."""

    def __init__(self, broken=(), absent=()):
        self.broken, self.absent = set(broken), set(absent)
        self.reads: list[list] = []

    def images(self, keys):
        self.reads.append(list(keys))
        for key in keys:
            if key in self.broken:
                raise ImagesUnreachable(f"{key[0]} sample {key[1]} is not a usable image: truncated")
            if key not in self.absent:
                yield key, Image.new("RGB", (64, 48), (10 * key[1], 120, 200))
        if any(key in self.absent for key in keys):
            raise ImagesUnreachable(f"images dataset has no image for {min(k for k in keys if k in self.absent)}")


class Factory:
    def __init__(self, source=None, error=None):
        self.source, self.error, self.opened = source, error, 0
        self.asked: tuple | None = None

    def __call__(self, repo_id, revision, split):
        self.opened += 1
        self.asked = (repo_id, revision, split)
        if self.error is not None:
            raise self.error
        return self.source


@pytest.fixture
def entry_and_records(prompts, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    results = varied_results(prompts, "m")
    entry = add_entry(store, "M", results)
    return store, entry, results


def test_one_bad_image_costs_only_itself(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    records = results[:8]
    keys = [(r.prompt_id, r.sample_index) for r in records]
    source = Images(broken=[keys[2]], absent=[keys[5]])
    images = GalleryImages(Factory(source), lambda: tmp_path / "work", clock=Clock())
    shown = images.thumbnails(entry, "m", records)
    reasons = [s.reason for s in shown]
    assert reasons[2] == f"{keys[2][0]} sample 2 is not a usable image: truncated"
    assert reasons[5] == f"images dataset has no image for {keys[5]}"
    assert [i for i, r in enumerate(reasons) if r] == [2, 5]
    assert all(Image.open(s.path).size[0] > 0 for s in shown)
    # one read of the page, then one per image the failed read left unread, each with its reason
    assert source.reads[0] == keys and sorted(map(tuple, source.reads[1:])) == sorted((k,) for k in keys[2:])


def test_images_come_from_the_entrys_repo_at_its_submitted_revision(prompts, tmp_path):
    """Not the repo's newest images: the commit the submitter named, which the spot check re-scored."""
    store = SQLiteStore(tmp_path / "lb.sqlite")
    results = varied_results(prompts, "m")
    commit = "0123456789abcdef0123456789abcdef01234567"
    entry = add_entry(store, "M", results, images_repo="org/pinned-images", images_revision=commit)
    factory = Factory(Images())
    GalleryImages(factory, lambda: tmp_path / "work", clock=Clock()).thumbnails(entry, "m", results[:2])
    assert factory.asked == ("org/pinned-images", commit, "m")


def test_failures_are_remembered_for_a_while_then_retried(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    clock = Clock()
    factory = Factory(error=ImagesUnreachable("images not reachable: HTTP 503"))
    images = GalleryImages(factory, lambda: tmp_path / "work", retry_seconds=300, clock=clock)
    first = images.thumbnails(entry, "m", results[:4])
    assert {s.reason for s in first} == {"images not reachable: HTTP 503"} and factory.opened == 1
    clock.now = 299.0
    assert images.thumbnails(entry, "m", results[:4])[0].reason == "images not reachable: HTTP 503"
    assert factory.opened == 1  # not asked again within the retry time
    factory.error, factory.source = None, Images()
    clock.now = 301.0
    assert [s.reason for s in images.thumbnails(entry, "m", results[:4])] == [""] * 4 and factory.opened == 2


def test_any_error_of_a_source_is_a_reason_not_a_failure(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    images = GalleryImages(Factory(error=PermissionError("401 private repo")), lambda: tmp_path / "w")
    image, reason = images.full(entry, "m", results[0])
    # a sentence of ours: the library's text goes to the log (`leaderboard.store.image_sources.unreachable_reason`)
    assert (
        image is None and reason == "images not reachable: org/gallery-images@main could not be read: permission denied"
    )
    no_repo = entry.model_copy(update={"images_repo": ""})
    assert images.thumbnails(no_repo, "m", results[:1])[0].reason == "this entry names no images repo"


def test_kept_images_are_under_the_apps_cache_bound(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    source = Images()
    work = tmp_path / "work"
    images = GalleryImages(Factory(source), lambda: work)
    images.thumbnails(entry, "m", results[:6])
    assert len(source.reads) == 1
    kept = [p for p in work.rglob("*.png")]
    assert len(kept) == 12  # six images and six thumbnails, all in the app's folder
    budget = CacheBudget(sum(p.stat().st_size for p in kept) // 2, list, lambda: [work])
    assert budget.enforce() > 0 and budget.size() <= budget.max_bytes
    shown = images.thumbnails(entry, "m", results[:6])  # what was swept is fetched again
    assert all(not s.reason for s in shown) and len(source.reads) == 2


def test_the_bound_is_told_what_a_fetch_kept_and_nothing_after_one_that_kept_nothing(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    told: list[int] = []
    work = tmp_path / "work"
    images = GalleryImages(Factory(Images()), lambda: work, after_write=told.append)
    images.thumbnails(entry, "m", results[:6])
    kept = sum(p.stat().st_size for p in work.rglob("*.png"))
    assert told == [kept] and kept > 0  # once for the fetch, its twelve files' bytes
    images.thumbnails(entry, "m", results[:6])  # all kept already: no fetch
    no_repo = entry.model_copy(update={"images_repo": ""})
    images.thumbnails(no_repo, "m", results[6:8])  # a fetch that kept nothing
    assert told == [kept]


def test_a_write_walks_the_files_only_when_they_may_be_over_the_bound(tmp_path):
    from space.resources import LOW_WATER

    walks: list[int] = []

    def folders():
        walks.append(1)
        return [tmp_path]

    def kept(name: str, size: int) -> int:
        (tmp_path / name).write_bytes(b"x" * size)
        return size

    budget = CacheBudget(100, list, folders)
    assert budget.after_write(kept("a", 10)) == 0 and len(walks) == 1  # nothing known yet: it walks
    assert budget.after_write(kept("b", 50)) == 0 and len(walks) == 1  # 10 + 50: under, no walk
    assert budget.after_write(kept("c", 40)) == 0 and len(walks) == 1  # 100: at the bound, still no walk
    freed = budget.after_write(kept("d", 1))  # 101: over, a walk, down to LOW_WATER of the bound
    assert len(walks) == 2 and freed > 0 and budget.size() <= LOW_WATER * 100 and budget.size() == 101 - freed
    (tmp_path / "gradio_copy").write_bytes(b"x" * 95)  # a file the app did not say it kept ...
    budget.enforce()  # ... is found by the next walk (the periodic sweep's)
    assert budget.size() <= LOW_WATER * 100


def test_records_are_read_once_per_entry_version(entry_and_records, prompts):
    store, entry, results = entry_and_records

    class Counting:
        reads = 0

        def get_results(self, submission_id):
            Counting.reads += 1
            return store.get_results(submission_id)

    records = EntryRecords(Counting(), [p.prompt_id for p in prompts], max_entries=1)  # type: ignore[arg-type]
    indexed = records.of(entry)
    assert records.of(entry) is indexed and Counting.reads == 1
    assert [r.key for r in indexed.rows] == [(p.prompt_id, s) for p in prompts for s in range(4)]
    assert indexed.record(("color_pos0_neg1_000", 1)) == next(
        r for r in results if (r.prompt_id, r.sample_index) == ("color_pos0_neg1_000", 1)
    )
    changed = entry.model_copy(update={"status": "rejected"})  # the entry changed: read again
    records.of(changed)
    assert Counting.reads == 2
    records.of(entry)  # only one entry is kept: the first was dropped
    assert Counting.reads == 3


class FirstThenGate:
    """An image source that hands over its first image, then waits at `gate` before the rest (a slow
    repo, caught mid-page); `given` is set once the first image is out."""

    def __init__(self):
        self.inner, self.given, self.gate = Images(), threading.Event(), threading.Event()

    def images(self, keys):
        for number, pair in enumerate(self.inner.images(keys)):
            if number == 1:
                self.given.set()
                assert self.gate.wait(300)
            yield pair


def visit_by_thread() -> Visit:
    """Alice asks from every thread, in one tab, each thread its own request (a page of hers)."""
    return Visit("alice", "tab", threading.current_thread().name)


def in_thread(name: str, call):
    """Run CALL in a thread named NAME; its result once it has returned (`done`, a list)."""
    done: list = []
    thread = threading.Thread(target=lambda: done.append(call()), name=name, daemon=True)
    thread.start()
    return thread, done


def test_a_visitors_newer_page_stops_the_older_ones_fetch_and_is_fetched_next(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    source = FirstThenGate()
    images = GalleryImages(Factory(source), lambda: tmp_path / "work", page_seconds=3600, visit=visit_by_thread)
    older, older_shown = in_thread("page-1", lambda: images.thumbnails(entry, "m", results[:8]))
    assert source.given.wait(300)  # her first page is mid-fetch, waiting on its repo
    newer, newer_shown = in_thread("page-2", lambda: images.thumbnails(entry, "m", results[8:16]))
    older.join(300)  # its wait ended when the newer page came, with the repo still waiting
    assert not source.gate.is_set()
    reasons = [s.reason for s in older_shown[0]]
    assert reasons[0] == "" and set(reasons[1:]) == {SUPERSEDED}  # what came is kept; the rest not fetched
    source.gate.set()
    newer.join(300)
    assert [s.reason for s in newer_shown[0]] == [""] * 8  # fetched once the older one stopped
    pages = (results[:8], results[8:16])
    assert source.inner.reads == [[(r.prompt_id, r.sample_index) for r in rows] for rows in pages]
    again = images.thumbnails(entry, "m", results[:8])  # superseded is no failure: asked again, fetched now
    assert [s.reason for s in again] == [""] * 8


def test_another_visitors_page_is_fetched_while_a_slow_page_waits(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    slow, fast = FirstThenGate(), Images()
    factory = lambda repo, revision, split: slow if repo == "org/slow" else fast  # noqa: E731
    asking = threading.local()
    images = GalleryImages(
        factory, lambda: tmp_path / "work", page_seconds=3600, visit=lambda: Visit(asking.who, asking.who, asking.who)
    )
    slow_entry = entry.model_copy(update={"images_repo": "org/slow"})

    def alice():
        asking.who = "alice"
        return images.thumbnails(slow_entry, "m", results[:8])

    waiting, _ = in_thread("alice", alice)
    assert slow.given.wait(300)
    asking.who = "bob"
    assert [s.reason for s in images.thumbnails(entry, "m", results[8:16])] == [""] * 8
    assert not slow.gate.is_set() and waiting.is_alive()  # hers still waits on its repo
    slow.gate.set()
    waiting.join(300)


class WatchedQueue(FairQueue):
    """A fair queue that says when a job has been queued (`added`, the count so far)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.added, self.changed = 0, threading.Condition()

    def add(self, job):
        ended = super().add(job)
        with self.changed:
            self.added += 1
            self.changed.notify_all()
        return ended


def test_a_page_shed_from_the_full_queue_is_answered_at_once_as_busy(entry_and_records, tmp_path):
    _, entry, results = entry_and_records
    slow, fast = FirstThenGate(), Images()
    factory = lambda repo, revision, split: slow if repo == "org/slow" else fast  # noqa: E731
    queue = WatchedQueue(1, 1, 1, 1)  # one worker, and one page waiting at most
    by_thread = lambda: Visit(*[threading.current_thread().name] * 3)  # noqa: E731 - each thread a visitor
    images = GalleryImages(factory, lambda: tmp_path / "work", page_seconds=3600, visit=by_thread, fetches=queue)
    slow_entry = entry.model_copy(update={"images_repo": "org/slow"})
    alice, _ = in_thread("alice", lambda: images.thumbnails(slow_entry, "m", results[:8]))
    assert slow.given.wait(300)  # the one worker is hers, waiting on the slow repo
    bob, bob_shown = in_thread("bob", lambda: images.thumbnails(entry, "m", results[8:16]))
    with queue.changed:
        assert queue.changed.wait_for(lambda: queue.added == 2, timeout=300)  # bob's page waits: the queue is full
    # carol's page comes next: one page too many waiting, so bob's, waiting longest, is shed
    carol, carol_shown = in_thread("carol", lambda: images.thumbnails(entry, "m", results[16:24]))
    bob.join(300)
    assert [s.reason for s in bob_shown[0]] == [BUSY] * 8 and carol.is_alive()
    slow.gate.set()
    alice.join(300)
    carol.join(300)
    assert [s.reason for s in carol_shown[0]] == [""] * 8
    assert [s.reason for s in images.thumbnails(entry, "m", results[8:16])] == [""] * 8  # bob's, asked again
