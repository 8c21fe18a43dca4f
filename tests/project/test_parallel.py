"""The suite's parallel run (pytest-xdist, tests/conftest.py): a test marked `serial` runs while no
other test of the run runs, and browser tests are serial. Checked on a small suite of its own, run
with two workers in a subprocess, using the project's conftest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

# Two test files, one test each, the second test marked: with two tests, xdist hands one to each of
# its two workers, at once. Each test marks itself running; the marked one waits (on state, at most
# 30 s) until the plain one has begun, then looks; the plain one waits until the marked one has
# looked, or a serial test is seen waiting (it holds the turnstile lock in front of the room), or
# 60 s have passed. When the marked test is serial the two never run
# together, and the serial one finds no other test running. Unmarked, they run together and the
# marked one finds the plain one's mark.
PLAIN = """
import fcntl
import os
import time
from pathlib import Path

SHARED = Path(os.environ["SHARED_FOLDER"])


def serial_waiting(folder):
    with open(folder / "negt2i-serial.turnstile", "a") as turnstile:
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        return False


def test_plain(tmp_path_factory):
    folder = tmp_path_factory.getbasetemp().parent
    (SHARED / "running-plain").touch()
    (SHARED / "began-plain").touch()
    deadline = time.monotonic() + 60.0
    held = 0  # a plain test holds the turnstile for an instant; a waiting serial one for good
    while not (SHARED / "checked-marked").exists() and held < 3 and time.monotonic() < deadline:
        held = held + 1 if serial_waiting(folder) else 0
        time.sleep(0.1)
    (SHARED / "running-plain").unlink()
"""
MARKED = """
import os
import time
from pathlib import Path

import pytest

SHARED = Path(os.environ["SHARED_FOLDER"])


@pytest.mark.{marker}
def test_marked():
    (SHARED / "running-marked").touch()
    deadline = time.monotonic() + 30.0
    while not (SHARED / "began-plain").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    others = [path.name for path in SHARED.glob("running-*") if path.name != "running-marked"]
    (SHARED / "checked-marked").touch()
    (SHARED / "running-marked").unlink()
    assert not others, f"another test was running: {others}"
"""


def run_suite(tmp_path: Path, marker: str) -> subprocess.CompletedProcess:
    suite = tmp_path / "suite"
    shared = tmp_path / "shared"
    suite.mkdir()
    shared.mkdir()
    (suite / "conftest.py").write_text(CONFTEST.read_text(encoding="utf-8"), encoding="utf-8")
    (suite / "test_a.py").write_text(PLAIN, encoding="utf-8")
    (suite / "test_b.py").write_text(MARKED.replace("{marker}", marker), encoding="utf-8")
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: x\n    browser: x\n    other: x\n")
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"]
    env = {"PATH": "/usr/bin:/bin", "SHARED_FOLDER": str(shared), "HOME": str(tmp_path)}
    return subprocess.run([*command, str(suite)], cwd=suite, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("marker", ["serial", "browser"])
def test_a_serial_test_runs_while_no_other_test_runs(tmp_path, marker):
    done = run_suite(tmp_path, marker)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout


@pytest.mark.slow
def test_without_the_mark_the_two_tests_overlap(tmp_path):
    """The check above can fail: an unmarked test runs beside the other one and sees it running."""
    done = run_suite(tmp_path, "other")
    assert done.returncode == 1 and "another test was running" in done.stdout, done.stdout[-3000:]
