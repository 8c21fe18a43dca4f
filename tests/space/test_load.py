"""Concurrent submitters against a served app, killed with SIGKILL mid-burst and restarted: every
submission a client was told was stored is in the store exactly once, with all its results, and the
SQLite file is whole. Each client is another visitor behind the proxy the app is told about
(`serve --forwarded-allow-ips 127.0.0.1`), so the daily limit is per client."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
import traceback
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import handle_file

from dataset_builder.loading import load_prompts
from leaderboard.store.sqlite_store import SQLiteStore
from tests.helpers.net import free_port, local_client
from tests.helpers.space_helpers import wait_for, write_results

SPLIT = "toy_model"
CLIENTS, EACH = 8, 3


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen]]:
    """The servers a test starts; any still running when it ends (a failed wait, an assertion) is killed."""
    processes: list[subprocess.Popen] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)


def serve(
    tmp_path: Path, dataset: Path, log_name: str, started: list[subprocess.Popen]
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "NO_PROXY": "localhost,127.0.0.1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(tmp_path / "matplotlib"),
    }
    command = [sys.executable, "-m", "negt2ibench", "serve", "--port", str(port), "--home", str(tmp_path / "home")]
    # Submitted images are read from a local mirror (empty: the spot check is not this test's) so the
    # submissions' revisions are kept as typed instead of being pinned through the Hub, offline here.
    (tmp_path / "images").mkdir(exist_ok=True)
    command += [
        "--dataset",
        str(dataset),
        "--forwarded-allow-ips",
        "127.0.0.1",
        "--images-from",
        str(tmp_path / "images"),
    ]
    with (tmp_path / log_name).open("w") as log:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    started.append(process)
    url = f"http://127.0.0.1:{port}/"

    def up() -> bool:
        assert process.poll() is None, (tmp_path / log_name).read_text()[-4000:]
        try:
            return "NegT2IBench" in urllib.request.urlopen(url, timeout=5).read().decode()
        except OSError:
            return False

    wait_for(up, "the server", timeout=600)  # minutes on a loaded machine: a deadline, not a pace
    return process, url


class Burst:
    """CLIENTS clients, each submitting its EACH models in turn, one round at a time: a client starts its
    j-th submission once round j is open (`open_round`), so the test decides what is in flight when it
    kills the server. `told` gets {model: id} for each the app said it stored; a client whose request
    fails (the server was killed) stops and keeps the rest of its models in `todo`. A failed check in
    a client thread is kept in `failures` (an exception in a thread would only be a warning)."""

    def __init__(self, results: Path, todo: dict[int, list[str]], told: dict[str, str]):
        self.results, self.todo, self.told = results, todo, told
        self.rounds = [threading.Event() for _ in range(EACH)]
        self.started = [0] * EACH  # clients that have begun their submission of each round
        self.errors: list[str] = []
        self.failures: list[str] = []
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self, url: str) -> None:
        self.stopped.clear()
        self.threads = [threading.Thread(target=self._client, args=(url, k), daemon=True) for k in range(CLIENTS)]
        for thread in self.threads:
            thread.start()

    def open_round(self, *rounds: int) -> None:
        for j in rounds:
            self.rounds[j].set()

    def stop(self) -> None:
        """Clients waiting for a round stop instead (the server is gone)."""
        self.stopped.set()
        for event in self.rounds:
            event.set()

    def join(self, timeout: float) -> None:
        for thread in self.threads:
            thread.join(timeout=timeout)
        assert not any(thread.is_alive() for thread in self.threads), "a client never returned"
        assert not self.failures, "\n".join(self.failures)

    def check(self) -> None:
        assert not self.failures, "\n".join(self.failures)

    def _client(self, url: str, k: int) -> None:
        try:
            self._submit_all(url, k)
        except BaseException:  # noqa: BLE001 - reported by the test's thread, not lost as a warning
            self.failures.append(f"client {k}:\n{traceback.format_exc()}")

    def _submit_all(self, url: str, k: int) -> None:
        try:
            client = local_client(url, verbose=False, headers={"X-Forwarded-For": f"198.51.100.{k + 1}"})
        except Exception as error:  # noqa: BLE001 - the server was killed
            self.errors.append(f"client {k}: {error}")
            return
        while self.todo[k]:
            name = self.todo[k][0]
            round_ = EACH - len(self.todo[k])
            self.rounds[round_].wait()
            if self.stopped.is_set():
                return
            with self._lock:
                self.started[round_] += 1
            try:
                status, _ = client.predict(
                    handle_file(str(self.results)), name, "", "org/offline", "main", api_name="/submit"
                )
            except Exception as error:  # noqa: BLE001 - killed mid-request: not told, try again later
                self.errors.append(f"{name}: {type(error).__name__}")
                return
            found = re.search(r"\(id `([0-9a-f]{8})`\)", status)
            if not found:
                self.failures.append(f"client {k}, {name}: the app answered without an id: {status!r}")
                return
            self.told[name] = found.group(1)
            self.todo[k].pop(0)
        client.close()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_concurrent_submitters_and_a_kill_mid_burst_keep_each_stored_submission_once(tmp_path, started):
    prompts = load_prompts(None)[:50]
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text("".join(p.model_dump_json() + "\n" for p in prompts))
    results = write_results(tmp_path / "results.jsonl", prompts, SPLIT, passed=False)
    todo = {k: [f"Model {k}-{j}" for j in range(EACH)] for k in range(CLIENTS)}
    told: dict[str, str] = {}
    clients = Burst(results, todo, told)

    process, url = serve(tmp_path, dataset, "first.log", started)
    clients.start(url)
    clients.open_round(0)

    def first_round_stored() -> bool:
        clients.check()
        return len(told) >= CLIENTS

    wait_for(first_round_stored, "every client's first stored submission", timeout=600)
    clients.open_round(1)

    def second_round_sent() -> bool:
        clients.check()
        return clients.started[1] == CLIENTS

    wait_for(second_round_sent, "every client's second submission under way", timeout=300)
    process.kill()  # SIGKILL while each client has a submission under way and one not yet begun
    process.wait(timeout=30)
    clients.stop()
    clients.join(timeout=120)
    assert CLIENTS <= len(told) <= 2 * CLIENTS and all(todo.values())  # the third round never began

    process, url = serve(tmp_path, dataset, "second.log", started)
    try:
        clients.open_round(*range(EACH))
        clients.start(url)
        clients.join(timeout=600)
        assert len(told) == CLIENTS * EACH, clients.errors
    finally:
        process.terminate()
        process.wait(timeout=60)

    path = tmp_path / "home" / "leaderboard.sqlite"
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    entries = SQLiteStore(path).list_entries()
    by_id = {}
    for entry in entries:
        assert entry.submission_id[:8] not in by_id  # no entry twice
        by_id[entry.submission_id[:8]] = entry
        assert len(SQLiteStore(path).get_results(entry.submission_id)) == 200  # nothing half-written
    for name, short_id in told.items():
        assert by_id[short_id].model_name == name  # every one the clients were told of, exactly once
    assert len({e.submitter for e in entries}) == CLIENTS  # one identity per client, none forged
