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
import urllib.request
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from dataset_builder.loading import load_prompts
from space.store import SQLiteStore
from tests.helpers.net import free_port
from tests.helpers.space_helpers import wait_for, write_results

SPLIT = "toy_model"
CLIENTS, EACH = 8, 3


def serve(tmp_path: Path, dataset: Path, log_name: str) -> tuple[subprocess.Popen, str]:
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
    command += ["--dataset", str(dataset), "--forwarded-allow-ips", "127.0.0.1"]
    with (tmp_path / log_name).open("w") as log:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"

    def up() -> bool:
        assert process.poll() is None, (tmp_path / log_name).read_text()[-4000:]
        try:
            return "NegT2IBench" in urllib.request.urlopen(url, timeout=5).read().decode()
        except OSError:
            return False

    wait_for(up, "the server", timeout=240)
    return process, url


def burst(
    url: str, results: Path, todo: dict[int, list[str]], told: dict[str, str], errors: list[str]
) -> list[threading.Thread]:
    """Each client submits its models in turn; `told` gets {model: id} for each the app said it stored."""

    def run(k: int) -> None:
        try:
            client = Client(url, verbose=False, headers={"X-Forwarded-For": f"198.51.100.{k + 1}"})
        except Exception as error:  # noqa: BLE001 - the server was killed
            errors.append(f"client {k}: {error}")
            return
        while todo[k]:
            name = todo[k][0]
            try:
                status, _ = client.predict(
                    handle_file(str(results)), name, "", "org/offline", "main", api_name="/submit"
                )
            except Exception as error:  # noqa: BLE001 - killed mid-request: not told, try again later
                errors.append(f"{name}: {type(error).__name__}")
                return
            found = re.search(r"\(id `([0-9a-f]{8})`\)", status)
            assert found, status
            told[name] = found.group(1)
            todo[k].pop(0)
        client.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_concurrent_submitters_and_a_kill_mid_burst_keep_each_stored_submission_once(tmp_path):
    prompts = load_prompts(None)[:50]
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text("".join(p.model_dump_json() + "\n" for p in prompts))
    results = write_results(tmp_path / "results.jsonl", prompts, SPLIT, passed=False)
    todo = {k: [f"Model {k}-{j}" for j in range(EACH)] for k in range(CLIENTS)}
    told: dict[str, str] = {}
    errors: list[str] = []

    process, url = serve(tmp_path, dataset, "first.log")
    threads = burst(url, results, todo, told, errors)
    wait_for(lambda: len(told) >= CLIENTS, "the first stored submissions", timeout=240)
    process.kill()  # SIGKILL, mid-burst
    process.wait(timeout=30)
    for thread in threads:
        thread.join(timeout=120)
    assert len(told) < CLIENTS * EACH, "the burst ended before the kill: nothing was interrupted"

    process, url = serve(tmp_path, dataset, "second.log")
    try:
        for thread in burst(url, results, todo, told, errors):
            thread.join(timeout=240)
        assert len(told) == CLIENTS * EACH, errors
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
