"""Test-wide guards: everything offline, no network but loopback, no cache or setting of this machine.

A developer's machine may hold real weights (e.g. SD 1.5 in ~/.cache/huggingface) or a token, or
run under a launcher (WORLD_SIZE) or a Space (SPACE_ID): the tests must behave there as on a bare
CI machine. So the environment below is set outright (not `setdefault`), every cache points into
one temporary folder made for this session (removed at its end), and the variables that change
behaviour are removed. This runs when pytest loads this file, before any test module imports a
Hugging Face library (they read these variables at import).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path

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


# -- Without torch (CI's run on the Space's Python 3.10, which has no torch wheel here) ----------------
# A test module or a test that needs the model stack and cannot import it is skipped, saying so; with
# torch installed (every other run) nothing changes: a missing import there is an error as usual.
MODEL_STACK = frozenset({"torch", "torchvision", "transformers", "diffusers", "accelerate", "rfdetr", "bitsandbytes"})
WITHOUT_TORCH = importlib.util.find_spec("torch") is None


def _missing_model_stack(error: BaseException | None) -> str | None:
    """The model-stack module this import error is about (it, or what it was raised from), else None."""
    while error is not None:
        if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] in MODEL_STACK:
            return error.name
        error = error.__cause__
    return None


def _skip_reason(module: str) -> str:
    return f"needs {module}, not installed for Python {sys.version_info.major}.{sys.version_info.minor} here"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if WITHOUT_TORCH:
        for item in items:
            if item.get_closest_marker("torch"):
                item.add_marker(pytest.mark.skip(reason=_skip_reason("torch")))


@pytest.hookimpl(tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport | None:
    if not (WITHOUT_TORCH and isinstance(collector, pytest.Module)):
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
    missing = _missing_model_stack(call.excinfo.value) if WITHOUT_TORCH and call.excinfo else None
    if missing is not None:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {_skip_reason(missing)}")
    return report
