"""A stand-in for accelerate's PartialState, so that the ranks of a two-process run can run in turn
in one test process."""

from __future__ import annotations

from contextlib import contextmanager


class FakeState:
    """One rank of a two-process run (ranks run in turn here)."""

    def __init__(self, rank: int):
        self.process_index, self.num_processes = rank, 2
        self.is_main_process = self.is_local_main_process = rank == 0

    @contextmanager
    def split_between_processes(self, items):
        half = (len(items) + 1) // 2
        yield items[:half] if self.process_index == 0 else items[half:]

    def wait_for_everyone(self):
        pass
