"""Running mutants: each in a temporary copy of the work tree, against its fast tests, within a time bound.

The copy holds the files git tracks and the untracked ones it does not ignore, as they are in the
work tree now; the checkout itself is never written, and the copy's code is the one its tests
import (checked before the first mutant: an editable install would point at the checkout). One copy
per worker; a mutant is written into it, its tests run (`-m "not slow"`, stopping at the first
failure), and the file is restored.

A mutant is *killed* when a test fails and that test passes on the unmutated copy (run once per
failing test and remembered), *broken* when the test fails without the mutant too (a flaky or
broken test, not a kill), *timed out* past `timeout`, and *survives* when its tests all pass (or
none of them is fast, or no test file imports its module: the detail says which) and then the tests
of its module's importers (`Mutation.wider`) pass too.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from mutant_results import Outcome
from mutant_table import Mutation

ROOT = Path(__file__).resolve().parents[1]
NO_TESTS_COLLECTED = 5  # pytest's exit status when every test was deselected (all slow)


def work_tree_files(root: Path = ROOT) -> list[str]:
    """The files of the work tree as git sees them: tracked, or untracked and not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def copy_work_tree(target: Path, root: Path = ROOT) -> Path:
    for name in work_tree_files(root):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination)
    return target


def _environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", COLUMNS="400")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def check_copy_is_imported(copy: Path, path: str) -> None:
    """The copy's module PATH (a mutated one) must shadow the checkout's (an editable install points at
    the checkout); a SystemExit otherwise."""
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    probe = f"import {module}; print({module}.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=copy, env=_environment(copy), capture_output=True, text=True
    )
    shown = done.stdout.strip()
    if done.returncode != 0 or not Path(shown).resolve().is_relative_to(copy.resolve()):
        why = shown or done.stderr.strip()[-300:]
        raise SystemExit(f"the copy's {module} is not the one imported ({why}): mutants would run the checkout")


def applied(mutation: Mutation, source: str) -> str:
    """SOURCE with MUTATION made; a mutation whose text is not there exactly once is a ValueError."""
    found = source.count(mutation.old)
    if found != 1:
        raise ValueError(f"{mutation.name}: its text is in {mutation.path} {found} times, not once")
    return source.replace(mutation.old, mutation.new)


_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)


def run_tests(copy: Path, tests: Sequence[str], timeout: float) -> tuple[str, str, str]:
    """(status, detail, failing test) of the fast tests TESTS in COPY: status killed (a test failed:
    its node id is the third item), survived, or timeout."""
    if not tests:
        return "survived", "no test file imports this module", ""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-m", "not slow", "-p", "no:cacheprovider"]
    command += ["-p", "no:warnings", "-o", "addopts=", *tests]
    try:
        done = subprocess.run(
            command, cwd=copy, env=_environment(copy), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", f"its tests ran past {timeout:.0f} s", ""
    if done.returncode == 0:
        return "survived", (done.stdout.strip().splitlines() or [""])[-1], ""
    if done.returncode == NO_TESTS_COLLECTED:
        return "survived", "none of its tests is fast (all marked slow)", ""
    failed = _FAILED.search(done.stdout)
    if failed:
        kind = "error in" if failed[1] == "ERROR" else "failed"
        return "killed", f"{kind} {failed[2]}" + (f": {failed[3][:160]}" if failed[3] else ""), failed[2]
    return "killed", f"pytest exited {done.returncode}: {(done.stdout + done.stderr).strip()[-200:]}", ""


class Confirmations:
    """Whether a failing test passes on the unmutated copy, run once per test and remembered."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.known: dict[str, bool] = {}
        self.lock = threading.Lock()

    def passes_unmutated(self, copy: Path, test: str, tests: Sequence[str]) -> bool:
        with self.lock:
            if test in self.known:
                return self.known[test]
        status, _, _ = run_tests(copy, [test] if test else tests, self.timeout)
        with self.lock:
            self.known[test] = status == "survived"
        return status == "survived"


def run_one(copy: Path, mutation: Mutation, timeout: float, confirmations: Confirmations) -> Outcome:
    """MUTATION's outcome in COPY (the file restored after, whatever happens)."""
    target = copy / mutation.path
    original = target.read_text(encoding="utf-8")
    target.write_text(applied(mutation, original), encoding="utf-8")
    started = time.perf_counter()
    try:
        status, detail, failing = run_tests(copy, mutation.tests, timeout)
        tests = mutation.tests
        if status == "survived" and mutation.wider:  # its importers' tests may still catch it
            own = detail
            tests = mutation.wider
            status, detail, failing = run_tests(copy, tests, timeout)
            detail = f"{own}; its importers' tests: {detail}" if status == "survived" else f"by an importer's: {detail}"
    finally:
        target.write_text(original, encoding="utf-8")
    if status == "killed" and not confirmations.passes_unmutated(copy, failing, tests):
        status, detail = "broken", f"{detail} — and it fails without the mutant too"
    return Outcome(mutation.name, status, detail, time.perf_counter() - started, mutation.site)


def run_all(
    mutations: Sequence[Mutation], workers: int, timeout: float, minutes: float | None = None, root: Path = ROOT
) -> list[Outcome]:
    """Each mutation in a copy of ROOT's work tree (one per worker), in order; no mutant starts once
    MINUTES have passed (those not started have no outcome)."""
    deadline = time.monotonic() + 60 * minutes if minutes is not None else None
    pending: queue.Queue[tuple[int, Mutation]] = queue.Queue()
    for item in enumerate(mutations):
        pending.put(item)
    results: dict[int, Outcome] = {}
    if not mutations:
        return []
    confirmations = Confirmations(timeout)
    with tempfile.TemporaryDirectory(prefix="negt2i_mutants_") as scratch:

        def worker(number: int) -> None:
            copy = copy_work_tree(Path(scratch) / f"copy{number}", root)
            check_copy_is_imported(copy, mutations[0].path)
            while deadline is None or time.monotonic() < deadline:
                try:
                    position, mutation = pending.get_nowait()
                except queue.Empty:
                    return
                results[position] = outcome = run_one(copy, mutation, timeout, confirmations)
                print(f"[{len(results)}/{len(mutations)}] {outcome.status:8} {mutation.name}", flush=True)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(max(1, workers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return [results[k] for k in sorted(results)]
