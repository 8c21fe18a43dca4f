"""Who fetches next: the Gallery's and Compare's image fetches, shared among visitors.

A page's fetch is a job (`FetchJob`) of one visitor (its identity, `leaderboard.intake.identity`:
a Hugging Face account, else the client's hashed address), one session of it (a browser tab: gradio's
session hash), one request (the gradio event that asked), one lane (a page of thumbnails, or one
image's full view) and one images source (repo, revision, split). `FairQueue` decides, without
threads (its tests drive it step by step):

- at most `workers` jobs run at once in the whole app, so at most that many fetches hold images
  (the memory bound of the pages); at most `per_source` of them read one source, so a slow repo
  holds no more; at most `per_visitor` belong to one visitor, so a visitor paging a slow repo,
  however often, holds no more either;
- at most `max_queued` jobs wait (they hold records, never images); one more sheds the oldest
  waiting job of the visitor with the most waiting (`SHED`), so a flood sheds its own jobs first;
- visitors take turns (round-robin): a visitor joins the end of the turns when it has a job
  waiting, and after it starts one goes to the end again. While a visitor waits with a job that
  may start, each other visitor starts at most one job before it: a visitor paging fast gets at
  most one start more than another waiting one, so at most twice its share once that one started;
- a visitor's job to start is its newest; a session's newer request in a lane drops the jobs its
  older requests still have queued in that lane and asks their running ones to stop at their next
  image (`FetchJob.stop`): only the page the visitor looks at now is fetched, and the older page's
  wait ends at once (`FetchJob.over`). Another session of the same visitor (another tab, or other
  people behind one address) is not cancelled: it only shares the visitor's turns.

`FairFetcher` runs the queue on `workers` threads, started when work comes and ended when idle.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

QUEUED, RUNNING, DONE, DROPPED, SHED = "queued", "running", "done", "dropped", "shed"
IDLE_SECONDS = 60.0  # a worker thread with nothing to do for this long ends (another starts with new work)
_numbers = itertools.count()


@dataclass(eq=False)
class FetchJob:
    """One request's fetch from one source: `work(stopped)` does it, asking `stopped()` between images."""

    visitor: str
    request: str
    lane: str
    source: tuple[str, ...]
    work: Callable[[Callable[[], bool]], Any]
    session: str = ""  # the visitor's tab: only its own newer request drops this one
    number: int = field(default_factory=lambda: next(_numbers))  # arrival order: higher is newer
    state: str = QUEUED
    stop: bool = False  # a newer request of its session came (or it was shed): end at the next image
    result: Any = None
    error: BaseException | None = None
    over: threading.Event = field(default_factory=threading.Event)  # done, dropped, shed or stopped: wait no more

    def stopped(self) -> bool:
        return self.stop


class FairQueue:
    """The jobs queued and running, and which may start next (see the module's docstring)."""

    def __init__(self, workers: int, per_source: int, per_visitor: int, max_queued: int):
        self.workers, self.per_source, self.per_visitor = workers, per_source, per_visitor
        self.max_queued = max_queued
        self.queued: list[FetchJob] = []
        self.running: list[FetchJob] = []
        # The visitors with jobs queued, in turn order (their next turn first). Only visitors with a
        # job queued are in it, so it is bounded by `max_queued`; one that comes back joins the end.
        self._turns: OrderedDict[str, None] = OrderedDict()

    def add(self, job: FetchJob) -> list[FetchJob]:
        """Queue JOB; the jobs it ends (all `over` now): its session's older requests in its lane (the
        queued ones dropped, the running ones asked to stop), and one shed if the queue was full."""
        ended = []
        for other in [*self.running, *self.queued]:
            same_lane = (other.visitor, other.session, other.lane) == (job.visitor, job.session, job.lane)
            if same_lane and other.request != job.request and not other.stop:
                if other.state == QUEUED:
                    self.queued.remove(other)
                    other.state = DROPPED
                other.stop = True
                ended.append(other)
        self.queued.append(job)
        self._turns.setdefault(job.visitor)
        if len(self.queued) > self.max_queued:
            ended.append(self._shed())
        return ended

    def next(self) -> FetchJob | None:
        """The job to start now (marked running), or None when none may start."""
        if len(self.running) >= self.workers:
            return None
        for visitor in list(self._turns):
            waiting = [job for job in self.queued if job.visitor == visitor]
            if not waiting:  # its jobs were dropped or shed: it waits no more
                del self._turns[visitor]
                continue
            startable = [job for job in waiting if self._has_room(job)]
            if not startable:  # keeps its place: it goes first once room is made
                continue
            job = max(startable, key=lambda j: j.number)
            self.queued.remove(job)
            self.running.append(job)
            job.state = RUNNING
            del self._turns[visitor]
            if len(waiting) > 1:
                self._turns[visitor] = None  # its next job waits for every other visitor's turn
            return job
        return None

    def done(self, job: FetchJob) -> None:
        """JOB has ended."""
        self.running.remove(job)
        job.state = DONE

    def _shed(self) -> FetchJob:
        """Drop the oldest queued job of the visitor with the most queued (of those, the one whose
        oldest waits longest): one visitor's flood sheds its own jobs, and no visitor's newest page
        is shed while it has an older one waiting."""
        counts: dict[str, int] = {}
        for queued in self.queued:
            counts[queued.visitor] = counts.get(queued.visitor, 0) + 1
        most = max(counts.values())
        shed = min((j for j in self.queued if counts[j.visitor] == most), key=lambda j: j.number)
        self.queued.remove(shed)
        shed.state, shed.stop = SHED, True
        if not any(queued.visitor == shed.visitor for queued in self.queued):
            del self._turns[shed.visitor]  # waits no more: its next job joins the end of the turns
        return shed

    def _has_room(self, job: FetchJob) -> bool:
        same_source = sum(other.source == job.source for other in self.running)
        same_visitor = sum(other.visitor == job.visitor for other in self.running)
        return same_source < self.per_source and same_visitor < self.per_visitor


class FairFetcher:
    """`FairQueue` on worker threads: `submit` queues a job and returns it; `job.over` is set when it
    has ended (its `result` or `error` set), was dropped or shed, or was asked to stop."""

    def __init__(self, queue: FairQueue, name: str = "negt2i-gallery"):
        self.queue = queue
        self.name = name
        self._changed = threading.Condition()
        self._threads = 0

    def submit(self, job: FetchJob) -> FetchJob:
        with self._changed:
            for ended in self.queue.add(job):
                ended.over.set()
            while self._threads < self.queue.workers:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self.name}-{self._threads}", daemon=True).start()
            self._changed.notify_all()
        return job

    def _next(self) -> FetchJob | None:
        """The next job for this thread, waited for; None when it has been idle for IDLE_SECONDS (it ends then)."""
        idle_until = time.monotonic() + IDLE_SECONDS
        with self._changed:
            job = self.queue.next()
            while job is None:
                left = idle_until - time.monotonic()
                if left <= 0:
                    self._threads -= 1  # `submit` starts another when work comes
                    return None
                self._changed.wait(left)
                job = self.queue.next()
            return job

    def _work(self) -> None:
        while (job := self._next()) is not None:
            try:
                job.result = job.work(job.stopped)
            except BaseException as error:  # noqa: BLE001 - handed to whoever waits on the job
                job.error = error
            finally:
                with self._changed:
                    self.queue.done(job)
                    self._changed.notify_all()
                job.over.set()
