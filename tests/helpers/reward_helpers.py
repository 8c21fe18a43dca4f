"""Reward servers for tests: `negt2ibench reward serve` (or the double's server below) in a child process
on a free loopback port, waited on by state: each worker's "ready" line, then GET /health. Also the
bounds docs/reward.md states (tests read their limits there, not from the code's constants) and a judge
double for the audit."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.helpers.net import free_port

REPO = Path(__file__).resolve().parents[2]
READY = "negt2ibench reward worker ready"


DOC = REPO / "docs" / "reward.md"


def documented_bound(row: str) -> tuple[int, int]:
    """(value, HTTP status) of the row of docs/reward.md's bounds table (*Bounds and failures*) whose
    first cell starts with ROW; a value in MiB is given in bytes."""
    section = DOC.read_text(encoding="utf-8").split("## Bounds and failures", 1)[1].split("\n## ", 1)[0]
    found = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        number = re.match(r"[0-9][0-9,]*", cells[1]) if len(cells) == 3 else None
        if number and cells[0].startswith(row):
            value = int(number.group().replace(",", ""))
            found.append((value * 2**20 if "MiB" in cells[1] else value, int(cells[2])))
    assert len(found) == 1, f"docs/reward.md's bounds table has {len(found)} rows starting with {row!r}"
    return found[0]


class RewardServer:
    """A running server: its URL, its process and every line it wrote to stderr so far."""

    def __init__(self, command: Sequence[str], workers: int):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self._ready = threading.Semaphore(0)
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._ended = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        for _ in range(workers):  # a semaphore released per ready line, or for good when the process ends
            self._ready.acquire(timeout=300)
            if self._ended.is_set():
                raise AssertionError("the reward server ended before it was ready:\n" + "\n".join(self.lines[-30:]))
        health = requests.get(f"{self.url}/health", timeout=60)
        assert health.status_code == 200, health.text

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if READY in line:
                self._ready.release()
        self._ended.set()
        for _ in range(64):
            self._ready.release()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def reward_server(arguments: Sequence[str], workers: int = 1) -> Iterator[RewardServer]:
    """`negt2ibench reward serve ARGUMENTS --port <free>` until the block ends."""
    server = RewardServer([sys.executable, "-m", "negt2ibench", "reward", "serve", *arguments], workers)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def double_reward_server(workers: int = 1) -> Iterator[RewardServer]:
    """The same server (`negt2ibench.reward_server.serve`) over the rectangle double's negation reward."""
    server = RewardServer([sys.executable, "-m", "tests.helpers.reward_helpers", str(workers)], workers)
    try:
        yield server
    finally:
        server.stop()


def _serve_the_double(workers: int, port: int) -> None:
    from dataset_builder.corpus import build_corpus
    from negt2ibench.reward import Reward
    from negt2ibench.reward_server import serve
    from tests.helpers.space_helpers import RectanglePerception

    prompts = build_corpus()  # read once, before the fork
    serve(
        lambda: Reward(("negation",), negation_perception=RectanglePerception(), prompts=prompts),
        port=port,
        workers=workers,
    )


if __name__ == "__main__":
    _serve_the_double(int(sys.argv[1]), int(sys.argv[sys.argv.index("--port") + 1]))


class PatternJudge:
    """A judge double for the audit (a `judges.adapters.JudgeAdapter` in all but its base class): P("yes")
    is 1.0 for every question about a picture SEES is true of, else 0.0, whatever the question."""

    def __init__(self, sees):
        from judges.registry import custom_spec

        self.spec = custom_spec("tests/pattern-judge", "pattern_judge")
        self.batch_size, self.dtype_name = 8, "float32"
        self.sees = sees
        self.questions = 0

    def load(self) -> None:
        return None

    def yes_probability(self, images, questions) -> list[float]:
        self.questions += len(questions)
        return [1.0 if self.sees(image) else 0.0 for image in images]
