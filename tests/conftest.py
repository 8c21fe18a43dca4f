"""Test-wide guards: everything offline, no network but loopback, no cache or setting of this machine.

A developer's machine may hold real weights (e.g. SD 1.5 in ~/.cache/huggingface) or a token, or
run under a launcher (WORLD_SIZE) or a Space (SPACE_ID): the tests must behave there as on a bare
CI machine. So the environment below is set outright (not `setdefault`), every cache points into
one temporary folder made for this session (removed at its end), and the variables that change
behaviour are removed. This runs when pytest loads this file, before any test module imports a
Hugging Face library (they read these variables at import).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_IMPORTED_TOO_EARLY = sorted(
    {"huggingface_hub", "datasets", "transformers", "diffusers", "gradio", "rfdetr", "matplotlib"} & set(sys.modules)
)
if _IMPORTED_TOO_EARLY:  # their cache paths would already point at this machine's real caches
    raise RuntimeError(f"tests/conftest.py must run before these are imported: {', '.join(_IMPORTED_TOO_EARLY)}")

SESSION_HOME = Path(tempfile.mkdtemp(prefix="negt2i_tests_"))

_HOME_VARIABLES = {
    "HF_HOME": "hf",
    "HF_HUB_CACHE": "hf/hub",
    "HUGGINGFACE_HUB_CACHE": "hf/hub",
    "HF_DATASETS_CACHE": "hf/datasets",
    "HF_ASSETS_CACHE": "hf/assets",
    "HF_MODULES_CACHE": "hf/modules",
    "HF_XET_CACHE": "hf/xet",
    "TRANSFORMERS_CACHE": "hf/hub",
    "TORCH_HOME": "torch",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "XDG_CACHE_HOME": "cache",
    "RF_HOME": "rfdetr",
    "NEGT2I_HOME": "negt2i",
    "MPLCONFIGDIR": "matplotlib",
    "GRADIO_TEMP_DIR": "gradio",
}
_SETTINGS = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "NO_PROXY": "localhost,127.0.0.1",
    "no_proxy": "localhost,127.0.0.1",
    "MPLBACKEND": "Agg",
    "CUDA_VISIBLE_DEVICES": "",  # CPU only, as on CI: same numbers on a GPU machine
    # An app a test builds launches no verification job unless the test gives it a backend.
    "NEGT2I_VERIFY_BACKEND": "none",
    # Records' `scored_at` at one fixed moment (2026-01-01T00:00:00Z): two runs write the same bytes.
    "SOURCE_DATE_EPOCH": "1767225600",
}
# Variables that change what the code does: a token, a results repo, a Space, a launcher, a port.
_REMOVED = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_ENDPOINT",
    "ROBOFLOW_HOME",
    "NEGT2I_RESULTS_REPO",
    "NEGT2I_DEBUG",
    "NEGT2I_VERIFY_SECRET",
    "NEGT2I_VERIFY_FLAVOR",
    "NEGT2I_VERIFY_NAMESPACE",
    "NEGT2I_JOB_WHEEL",
    "SPACE_ID",
    "SYSTEM",
    "GRADIO_SERVER_PORT",
    "GRADIO_SERVER_NAME",
    "GRADIO_ROOT_PATH",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "ACCELERATE_USE_CPU",
    "ACCELERATE_MIXED_PRECISION",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)
for _name, _relative in _HOME_VARIABLES.items():
    (SESSION_HOME / _relative).mkdir(parents=True, exist_ok=True)
    os.environ[_name] = str(SESSION_HOME / _relative)
os.environ.update(_SETTINGS)
for _name in _REMOVED:
    os.environ.pop(_name, None)
# Under pytest-xdist each worker gets its share of the cores for its math libraries (torch's intra-op
# pool, BLAS), set before any of them loads and inherited by the processes a test starts: two workers
# each spinning two OpenMP threads on two cores ran the torch-heavy tests 2-4 times slower.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[_name] = str(max(1, (os.cpu_count() or 1) // _WORKERS))


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


_LOOPBACK = ("127.", "::1", "localhost", "0.0.0.0")
_real_connect = socket.socket.connect


def _guarded_connect(self, address):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, (bytes, bytearray)):
        host = host.decode()
    if isinstance(host, str) and (host.startswith(_LOOPBACK) or self.family == getattr(socket, "AF_UNIX", None)):
        return _real_connect(self, address)
    raise ConnectionRefusedError(f"tests must not touch the network (tried {address!r})")


@pytest.fixture(autouse=True, scope="session")
def _no_network():
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]


# -- Without the model stack (CI's run on Python 3.10 installs no torch; the Space's venv no diffusers) --
# A test module or a test that needs a model-stack package this venv does not install is skipped, saying
# so; where the package is installed (the main venv has them all) a failed import is an error as usual.
MODEL_STACK = frozenset({"torch", "torchvision", "transformers", "diffusers", "accelerate", "rfdetr", "bitsandbytes"})
WITHOUT_TORCH = importlib.util.find_spec("torch") is None


def _missing_model_stack(error: BaseException | None) -> str | None:
    """The model-stack module this import error is about (it, or what it was raised from), else None."""
    while error is not None:
        top = (error.name or "").split(".")[0] if isinstance(error, ModuleNotFoundError) else ""
        if top in MODEL_STACK and importlib.util.find_spec(top) is None:
            return error.name
        error = error.__cause__
    return None


def _skip_reason(module: str) -> str:
    return f"needs {module}, not installed for Python {sys.version_info.major}.{sys.version_info.minor} here"


# The browser tests drive Debian's chromium. `make test` installs it where it can (as root, `make browser`);
# where it cannot, they are not run, and the run's summary says so and what installs it, in one line.
CHROMIUM = Path("/usr/bin/chromium")
BROWSER_NOT_RUN = "NOT RUN: no /usr/bin/chromium here; `make browser` installs it (as root), then run the tests again"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if WITHOUT_TORCH and item.get_closest_marker("torch"):
            item.add_marker(pytest.mark.skip(reason=_skip_reason("torch")))
        if item.get_closest_marker("browser") and not item.get_closest_marker("serial"):
            item.add_marker(pytest.mark.serial)  # a browser is several busy processes: the machine to itself
        if item.get_closest_marker("browser") and not CHROMIUM.exists():
            item.add_marker(pytest.mark.skip(reason=BROWSER_NOT_RUN))
    items[:] = _long_first(items)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line at the end of the run naming the browser tests that were not run, and why."""
    skipped = terminalreporter.stats.get("skipped", [])
    not_run = [report for report in skipped if BROWSER_NOT_RUN in str(getattr(report, "longrepr", ""))]
    if not_run:
        terminalreporter.write_line(f"{len(not_run)} browser tests {BROWSER_NOT_RUN}", yellow=True, bold=True)


LONGEST_TESTS = Path(__file__).with_name("longest_tests.txt")


def _long_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The `serial` tests, then the longest of a measured run (LONGEST_TESTS, longest first), then the rest
    in their own order. pytest-xdist's worksteal hands each worker a contiguous share and lets an idle one
    take the tail of another's: with the long tests first, short ones fill the end of the run instead of
    one long test (a 3-minute one) running alone there (benchmarks/RESULTS.md, "The test gate")."""
    lines = LONGEST_TESTS.read_text().splitlines() if LONGEST_TESTS.is_file() else []
    place = {line.split()[1]: i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")}
    serial = [item for item in items if item.get_closest_marker("serial")]
    longest = sorted(
        (item for item in items if item.nodeid in place and item not in serial), key=lambda i: place[i.nodeid]
    )
    chosen = {id(item) for item in serial + longest}
    return serial + longest + [item for item in items if id(item) not in chosen]


# -- Parallel runs (pytest-xdist, `make test`'s `-n`) ---------------------------------------------------
# A test marked `serial` runs while no other test of the run runs, on whichever worker it lands: every
# worker holds a shared lock on one file of the run while it runs a test, a serial test takes it
# exclusively. A turnstile lock in front lets a waiting serial test in before tests that start after
# it (a reader-writer lock with the writer first), so it is not starved by workers that never pause
# together. Outside xdist (a plain `pytest`) there is nothing to share and nothing is locked. The locks
# belong to the open files, so a worker that dies releases them.


def _run_folder(config: pytest.Config) -> Path | None:
    """The folder every xdist worker of this run shares (the parent of the workers' base temps)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    factory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory.getbasetemp().parent


@contextlib.contextmanager
def _machine_share(folder: Path, whole: bool) -> Generator[None, None, None]:
    with open(folder / "negt2i-serial.turnstile", "a") as turnstile, open(folder / "negt2i-serial.room", "a") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(room, fcntl.LOCK_EX if whole else fcntl.LOCK_SH)
        finally:
            if not whole:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: the wait is before the test's timeout starts
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    folder = _run_folder(item.config)
    if folder is None:
        return (yield)
    with _machine_share(folder, whole=item.get_closest_marker("serial") is not None):
        return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    if not isinstance(collector, pytest.Module):
        return None
    try:
        _ = collector.obj  # imports the test module (pytest's own collection then finds it imported)
    except (Exception, pytest.skip.Exception) as error:
        missing = _missing_model_stack(error)
        if missing is not None:
            reason = (str(collector.path), 0, f"Skipped: {_skip_reason(missing)}")
            return pytest.CollectReport(collector.nodeid, "skipped", reason, [])
    return None  # pytest collects it as usual (and reports any other error, or a skip, itself)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    missing = _missing_model_stack(call.excinfo.value) if call.excinfo else None
    if missing is not None:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {_skip_reason(missing)}")
    return report
