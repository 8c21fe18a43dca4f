"""The Gallery's fair share of image fetches (space/verified_images/fair_fetch.py): the queue's rules
step by step without threads (each bound pinned at its edge), then its workers with gates (waits
on state, never on time)."""

from __future__ import annotations

import random
import threading

import pytest

from space.verified_images.fair_fetch import DONE, DROPPED, QUEUED, RUNNING, SHED, FairFetcher, FairQueue, FetchJob

SLOW, FAST, OTHER = ("org/slow", "main", "m"), ("org/fast", "main", "m"), ("org/other", "main", "m")


def job(visitor: str, request: str, source=SLOW, lane: str = "page", work=None, session: str = "tab") -> FetchJob:
    return FetchJob(visitor, request, lane, source, work or (lambda stopped: {}), session=session)


def fair(workers: int = 4, per_source: int = 2, per_visitor: int = 1, max_queued: int = 32) -> FairQueue:
    return FairQueue(workers, per_source, per_visitor, max_queued)


def started(queue: FairQueue) -> list[FetchJob]:
    """Every job the queue lets start now, in its order."""
    out = []
    while (chosen := queue.next()) is not None:
        out.append(chosen)
    return out


def served(queue: FairQueue) -> list[FetchJob]:
    """Start and end the queue's jobs one at a time until none is left: the order they ran in."""
    order = []
    while (chosen := queue.next()) is not None:
        order.append(chosen)
        queue.done(chosen)
    return order


def test_one_visitor_holds_at_most_its_share_however_many_pages_it_asks_for():
    queue = fair()
    pages = [job("alice", "r1", source) for source in (SLOW, FAST, OTHER)]  # one request, three sources
    for page in pages:
        queue.add(page)
    assert started(queue) == [pages[-1]]  # one of hers at a time (per_visitor 1, exactly): her newest first
    bob = job("bob", "r2", SLOW)
    queue.add(bob)
    assert started(queue) == [bob]  # another visitor starts at once
    assert [p.state for p in pages] == [QUEUED, QUEUED, RUNNING]


def test_a_slow_source_holds_at_most_its_share_of_the_workers():
    queue = fair()
    slow = [job(f"visitor{i}", f"r{i}", SLOW) for i in range(5)]
    for page in slow:
        queue.add(page)
    assert len(started(queue)) == 2  # the slow repo's two (per_source, exactly); three wait for it
    fresh = job("newcomer", "r9", FAST)
    queue.add(fresh)
    assert started(queue) == [fresh]  # not behind the slow repo's queue
    assert len(queue.running) == 3 and len(queue.queued) == 3


def test_no_more_than_the_workers_run_at_once():
    queue = fair(workers=2)
    for i, source in enumerate((SLOW, FAST, OTHER)):
        queue.add(job(f"visitor{i}", f"r{i}", source))
    assert len(started(queue)) == 2  # exactly the workers
    queue.done(queue.running[0])
    assert len(started(queue)) == 1


def test_visitors_take_turns_and_each_ones_newest_page_comes_first():
    queue = fair(workers=1, per_source=1)
    a1, a2 = job("alice", "ra"), job("alice", "ra")  # one request's two jobs (Compare's rows)
    b1, b2 = job("bob", "rb"), job("bob", "rb")
    for page in (a1, a2, b1, b2):
        queue.add(page)
    assert served(queue) == [a2, b2, a1, b1]  # in turn, in the order they came; each one's newest first


def test_a_visitor_that_comes_back_waits_behind_those_already_waiting():
    queue = fair(workers=1, per_source=1)
    first = job("alice", "r1")
    queue.add(first)
    assert started(queue) == [first]
    bobs = job("bob", "r2")
    queue.add(bobs)  # waits for the one worker
    queue.done(first)
    assert first.state == DONE
    again = job("alice", "r3")  # she pages again before the worker picks the next job
    queue.add(again)
    assert served(queue) == [bobs, again]  # her new page is newer, but bob's turn comes first


def test_a_visitor_paging_fast_gets_at_most_twice_the_share_of_a_waiting_one():
    """Alice asks for a new page before every start; bob has a Compare request of 6 rows waiting.
    Counted from bob's first start, alice's starts are at most twice his, and exactly twice at the
    worst (one start ahead of his one): the bound is reached, never passed."""
    queue = fair(workers=1, per_source=1)
    queue.add(job("alice", "a0"))
    for _ in range(6):
        queue.add(job("bob", "b"))
    counts = {"alice": 0, "bob": 0}
    ratios = []
    for step in range(1, 13):
        queue.add(job("alice", f"a{step}"))  # drops her page still queued
        chosen = queue.next()
        counts[chosen.visitor] += 1
        queue.done(chosen)
        if counts["bob"]:
            ratios.append(counts["alice"] / counts["bob"])
    assert counts == {"alice": 6, "bob": 6}  # turn for turn
    assert max(ratios) == 2.0  # 2 starts of hers to his 1, exactly, and never more


def test_while_a_visitor_waits_each_other_visitor_starts_at_most_once_before_it():
    """Random adds, starts and ends (a seeded sequence) of four visitors in two sessions each: at
    every start, no visitor that waited all along has seen another start twice since its own turn."""
    chance = random.Random(53)
    queue = fair(workers=2, per_source=9, per_visitor=9, max_queued=64)
    visitors = ["alice", "bob", "carol", "dan"]
    seen: dict[str, dict[str, int]] = {}  # waiting visitor -> starts of each other since it waited
    for step in range(2000):
        move = chance.random()
        if move < 0.45:
            visitor = chance.choice(visitors)
            queue.add(job(visitor, f"r{chance.randrange(3)}", session=chance.choice(("tab1", "tab2"))))
        elif move < 0.75 and (chosen := queue.next()) is not None:
            seen.pop(chosen.visitor, None)  # its turn came: counted again from now
            for other, counts in seen.items():
                counts[chosen.visitor] = counts.get(chosen.visitor, 0) + 1
                assert counts[chosen.visitor] <= 1, (step, other, chosen.visitor)
        elif queue.running:
            queue.done(chance.choice(queue.running))
        waiting = {page.visitor for page in queue.queued}
        seen = {visitor: seen.get(visitor, {}) for visitor in waiting}


def test_a_newer_request_drops_the_older_queued_page_and_stops_the_running_one():
    queue = fair()
    running, waiting = job("alice", "r1"), job("alice", "r2")
    queue.add(running)
    assert started(queue) == [running]
    assert queue.add(waiting) == [running]  # asked to stop at its next image
    assert running.stop and running.state == RUNNING
    newest = job("alice", "r3")
    assert queue.add(newest) == [waiting]  # the running one was asked already
    assert waiting.state == DROPPED and waiting.stop and queue.queued == [newest]
    assert started(queue) == []  # her one share is still the stopping page's
    queue.done(running)
    assert started(queue) == [newest]


def test_a_requests_own_jobs_other_lanes_sessions_and_visitors_are_left_alone():
    queue = fair()
    row1, full, bobs = job("alice", "r1"), job("alice", "r0", lane="full"), job("bob", "r0")
    other_tab = job("alice", "r7", session="tab2")
    for page in (row1, full, bobs, other_tab):
        queue.add(page)
    row2 = job("alice", "r1", FAST)  # the same Compare request, its next row
    assert queue.add(row2) == []
    assert not any(page.stop for page in (row1, full, bobs, other_tab)) and len(queue.queued) == 5


def test_at_the_queue_bound_nothing_is_shed_and_one_more_sheds_the_heaviest_visitors_oldest():
    queue = fair(workers=1, per_source=1, max_queued=3)
    running = job("carol", "c")
    queue.add(running)
    assert started(queue) == [running]  # a running job is not queued: it counts for the workers
    a1, a2, bobs = job("alice", "ra"), job("alice", "ra"), job("bob", "rb")
    for page in (a1, a2, bobs):
        assert queue.add(page) == []  # up to 3 waiting, exactly: none shed
    dans = job("dan", "rd")
    assert queue.add(dans) == [a1]  # the 4th: alice waits with the most, her oldest goes
    assert a1.state == SHED and a1.stop and queue.queued == [a2, bobs, dans]
    eves = job("eve", "re")
    assert queue.add(eves) == [a2]  # one each now: the one waiting longest goes
    assert len(queue.queued) == 3


class Gated:
    """A job's work that says when it runs and ends only when its gate opens."""

    def __init__(self):
        self.entered, self.gate = threading.Event(), threading.Event()
        self.saw_stop = None

    def __call__(self, stopped):
        self.entered.set()
        assert self.gate.wait(300)
        self.saw_stop = stopped()
        return {"done": True}


def test_the_workers_end_an_older_pages_wait_at_once_and_run_the_newest_after_it():
    fetcher = FairFetcher(fair(workers=2), name="test-fair")
    older, newer, bobs = Gated(), Gated(), Gated()
    first = fetcher.submit(job("alice", "r1", work=older))
    assert older.entered.wait(300)
    second = fetcher.submit(job("alice", "r2", work=newer))
    assert first.over.wait(300) and first.stop  # her older page's wait ends now, its work still inside
    assert not newer.entered.is_set()  # her share is still taken by the stopping page
    bob = fetcher.submit(job("bob", "r3", FAST, work=bobs))
    assert bobs.entered.wait(300)  # another visitor's fetch runs meanwhile
    bobs.gate.set()
    assert bob.over.wait(300) and bob.result == {"done": True} and bob.state == DONE
    older.gate.set()  # the older page sees it was stopped, and ends; then her newest runs
    assert newer.entered.wait(300) and older.saw_stop is True
    newer.gate.set()
    assert second.over.wait(300) and second.result == {"done": True} and not second.stop


def test_a_failing_fetch_hands_its_error_to_whoever_waits():
    fetcher = FairFetcher(fair(workers=1, per_source=1), name="test-fair")

    def broken(stopped):
        raise OSError("disk full")

    failed = fetcher.submit(job("alice", "r1", work=broken))
    assert failed.over.wait(300)
    assert isinstance(failed.error, OSError) and failed.state == DONE
    after = fetcher.submit(job("alice", "r2"))  # the worker goes on
    assert after.over.wait(300) and after.result == {}


@pytest.mark.parametrize("workers", [1, 3])
def test_no_more_jobs_run_at_once_than_the_workers(workers):
    fetcher = FairFetcher(fair(workers=workers, per_source=9, per_visitor=9), name="test-fair")
    inside = threading.Condition()
    count = {"now": 0, "most": 0}
    gate = threading.Event()

    def work(stopped):
        with inside:
            count["now"] += 1
            count["most"] = max(count["most"], count["now"])
            inside.notify_all()
        assert gate.wait(300)
        with inside:
            count["now"] -= 1
        return {}

    jobs = [fetcher.submit(job(f"visitor{i}", f"r{i}", work=work)) for i in range(workers + 2)]
    with inside:  # the workers are all taken: the rest wait for one of them
        assert inside.wait_for(lambda: count["now"] == workers, timeout=300)
    gate.set()
    assert all(page.over.wait(300) for page in jobs)
    assert count["most"] == workers
