"""Hugging Face Jobs: a `negt2ibench` command run on the Hub's hardware, read back, and cancelled.

The one owner of the mechanism, for the leaderboard's verification jobs and for `score`, `generate`
and `judge --hf-job`. Every call goes through an `HfApi` given to `HfJobs` (a test's double records
them all); nothing here reads a token or prints a secret's value.

A job is `HfApi.run_uv_job("negt2ibench", script_args=ARGS, dependencies=[...])`: in uv's image
(``ghcr.io/astral-sh/uv:python3.12-bookworm``, huggingface_hub's default) it runs
``uv run --with <this package> --with <pins> negt2ibench ARGS``. The package is *exactly this
version* (`JobPackage`): a wheel of it, synced to the account's private ``jobs-artifacts`` bucket
(`HfApi.sync_job_volume`, a folder named by the wheel's SHA-256) and mounted read-only; without a
wheel, the release of this version from PyPI. Its dependencies are pinned to the versions
installed where the job is launched, so a job computes what this machine would.

States are the Hub's stages (SCHEDULING, RUNNING, COMPLETED, ERROR, CANCELED, DELETED) and
VANISHED: the Hub no longer knows the job (HTTP 404).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UserError

TERMINAL = ("COMPLETED", "CANCELED", "ERROR", "DELETED", "VANISHED")
VANISHED = "VANISHED"
WHEEL_ENV = "NEGT2I_JOB_WHEEL"  # a wheel of this version to ship instead of building one
WHEEL_MOUNT = "/negt2i-wheel"
DISTRIBUTION = "negt2ibench"
_LABEL_TEXT = re.compile(r"[^A-Za-z0-9_-]+")
_ERROR_LINE = re.compile(r"(^error\b|error:|Error\b|Exception\b|Traceback|Killed|No space left|CUDA out of memory)")


@dataclass(frozen=True)
class JobPackage:
    """What a job installs: `wheel` (this version, built here or given), or, when None, `version` from PyPI;
    `pins`: `name==version` of every dependency of the extras, as installed here."""

    version: str
    wheel: Path | None
    pins: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.wheel.read_bytes()).hexdigest() if self.wheel is not None else ""

    def requirement(self, extras: Iterable[str]) -> str:
        chosen = ",".join(sorted(extras))
        name = f"{DISTRIBUTION}[{chosen}]" if chosen else DISTRIBUTION
        if self.wheel is None:
            return f"{name}=={self.version}"
        return f"{name} @ file://{WHEEL_MOUNT}/{self.wheel.name}"


def label(value: str) -> str:
    """A job label's value as the Hub takes them: letters, digits, `-` and `_`, at most 100."""
    return _LABEL_TEXT.sub("-", value)[:100] or "-"


def wheel_version(wheel: Path) -> str:
    """The version in a wheel's file name (`name-version-...whl`)."""
    parts = wheel.name.split("-")
    if len(parts) < 5 or not wheel.name.endswith(".whl"):
        raise UserError(f"{wheel}: not a wheel file name (NAME-VERSION-PY-ABI-PLATFORM.whl)")
    return parts[1]


# The files of a checkout's root that pyproject.toml names (readme, license-files) beside its packages.
BUILD_FILES = ("pyproject.toml", "README.md", "LICENSE")
_FIND_INCLUDE = re.compile(r"\[tool\.setuptools\.packages\.find\][^\[]*?include\s*=\s*\[([^\]]*)\]", re.S)


def packaged_folders(project_root: Path) -> list[str]:
    """The top-level package folders the wheel is made of: those `[tool.setuptools.packages.find]`'s
    `include` names in pyproject.toml (`negt2ibench*` → negt2ibench), else every folder with an `__init__.py`."""
    found = _FIND_INCLUDE.search((project_root / "pyproject.toml").read_text(encoding="utf-8"))
    names = re.findall(r'"([A-Za-z0-9_]+)\*?"', found.group(1)) if found else []
    if not names:
        names = sorted(path.parent.name for path in project_root.glob("*/__init__.py"))
    return [name for name in names if (project_root / name / "__init__.py").is_file()]


def build_wheel(project_root: Path, out: Path) -> Path:
    """A wheel of the checkout at `project_root` (pip, no dependencies) in `out`.

    Built from a copy of what the wheel is made of, in a temporary folder: setuptools writes its
    `build/` and `*.egg-info/` beside the sources it builds, and the checkout must stay as it was."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="negt2i_wheel_") as scratch:
        source = Path(scratch) / "source"
        source.mkdir()
        for name in BUILD_FILES:
            if (project_root / name).is_file():
                shutil.copy2(project_root / name, source / name)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for name in packaged_folders(project_root):
            shutil.copytree(project_root / name, source / name, ignore=ignore)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out.resolve()), "."],
            capture_output=True,
            text=True,
            cwd=source,
        )
    wheels = sorted(out.glob(f"{DISTRIBUTION}-*.whl"), key=lambda path: path.stat().st_mtime)
    if done.returncode != 0 or not wheels:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel written"]
        raise UserError(f"could not build a wheel of {project_root} for the job ({last[0]}); set {WHEEL_ENV}")
    return wheels[-1]


def find_wheel(version: str, project_root: Path, cache: Path) -> Path | None:
    """The wheel of `version` to ship: NEGT2I_JOB_WHEEL, else one in PROJECT_ROOT/wheels or /dist,
    else one built from the checkout (when PROJECT_ROOT has a pyproject.toml); None when none can be had."""
    given = os.environ.get(WHEEL_ENV)
    if given:
        wheel = Path(given).expanduser()
        if not wheel.is_file():
            raise UserError(f"{WHEEL_ENV}={given}: no such file")
    else:
        shipped = [p for folder in ("wheels", "dist") for p in (project_root / folder).glob(f"{DISTRIBUTION}-*.whl")]
        matching = [p for p in shipped if wheel_version(p) == version]
        if matching:
            wheel = matching[-1]
        elif (project_root / "pyproject.toml").is_file():
            wheel = build_wheel(project_root, cache / "wheels" / version)
        else:
            return None
    if wheel_version(wheel) != version:
        raise UserError(f"{wheel.name} is version {wheel_version(wheel)}, but this is {DISTRIBUTION} {version}")
    return wheel


def _requires(wheel: Path | None) -> list[str]:
    """The Requires-Dist lines of the wheel's METADATA, else of the installed distribution."""
    if wheel is None:
        try:
            return importlib.metadata.requires(DISTRIBUTION) or []
        except importlib.metadata.PackageNotFoundError:
            return []
    with zipfile.ZipFile(wheel) as archive:
        name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
        if name is None:
            raise UserError(f"{wheel}: a wheel without METADATA")
        text = archive.read(name).decode("utf-8")
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def pinned_dependencies(wheel: Path | None, extras: Iterable[str]) -> tuple[str, ...]:
    """`name==version` of every dependency the package needs with `extras`, at the version installed
    here (a dependency not installed here is left to the resolver, as the package declares it)."""
    from packaging.requirements import Requirement

    chosen = set(extras)
    pins: dict[str, str] = {}
    for line in _requires(wheel):
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is not None and not any(marker.evaluate({"extra": extra}) for extra in chosen | {""}):
            continue
        if requirement.name == DISTRIBUTION:  # a self-referencing extra (space = negt2ibench[models,...])
            continue
        try:
            pins[requirement.name] = f"{requirement.name}=={importlib.metadata.version(requirement.name)}"
        except importlib.metadata.PackageNotFoundError:
            pins.setdefault(requirement.name, str(requirement).split(";")[0].strip())
    return tuple(sorted(pins.values()))


def job_package(version: str, project_root: Path, cache: Path, extras: Iterable[str]) -> JobPackage:
    """This version's package for a job, with its dependencies pinned (`find_wheel`, `pinned_dependencies`)."""
    wheel = find_wheel(version, project_root, cache)
    return JobPackage(version, wheel, pinned_dependencies(wheel, extras))


@dataclass(frozen=True)
class JobRequest:
    """One `negt2ibench` command to run as a job. `secrets`: name → value, sent as the Hub's
    encrypted secrets (only their names are ever shown); `volumes`: huggingface_hub `Volume`s."""

    args: list[str]
    flavor: str
    timeout_s: int
    extras: tuple[str, ...] = ("models",)
    secrets: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    volumes: list[Any] = field(default_factory=list)
    python: str = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True)
class JobRef:
    job_id: str
    namespace: str
    url: str
    stage: str = "SCHEDULING"  # as the launch answered


@dataclass(frozen=True)
class JobState:
    stage: str
    message: str = ""
    url: str = ""

    @property
    def finished(self) -> bool:
        return self.stage in TERMINAL


def _status_code(error: BaseException) -> int | None:
    return getattr(getattr(error, "response", None), "status_code", None)


def last_error_line(lines: Iterable[str], fallback: str = "") -> str:
    """The last log line that reads as an error, else `fallback` (e.g. the job's own status message),
    else the last non-empty line ("" for none)."""
    kept = [line.strip() for line in lines if line.strip()]
    errors = [line for line in kept if _ERROR_LINE.search(line)]
    return (errors or ([fallback] if fallback else kept) or [""])[-1][:300]


class HfJobs:
    """Launch, inspect, read and cancel jobs through `api` (an `HfApi`), in `namespace` (default:
    the token's own account, asked once with `whoami`). `package` is what a launched job installs,
    or a function that makes it on the first launch (building a wheel takes a while)."""

    def __init__(
        self,
        api: Any,
        *,
        namespace: str | None = None,
        package: JobPackage | Callable[[], JobPackage] | None = None,
    ):
        self.api = api
        self._package = package
        self._namespace = namespace

    @property
    def package(self) -> JobPackage | None:
        if callable(self._package):
            self._package = self._package()
        return self._package

    @property
    def namespace(self) -> str:
        if self._namespace is None:
            self._namespace = str(self.api.whoami()["name"])
        return self._namespace

    def _wheel_volume(self) -> list[Any]:
        """The wheel, synced to the account's private jobs-artifacts bucket, as a read-only mount."""
        if self.package is None or self.package.wheel is None:
            return []
        with tempfile.TemporaryDirectory(prefix="negt2i_wheel_") as folder:
            shutil.copy2(self.package.wheel, Path(folder) / self.package.wheel.name)
            volume = self.api.sync_job_volume(
                folder,
                WHEEL_MOUNT,
                remote_name=f"negt2ibench-wheel-{self.package.sha256[:16]}",
                read_only=True,
                namespace=self.namespace,
            )
        return [volume]

    def launch(self, request: JobRequest) -> JobRef:
        if self.package is None:
            raise UserError("no package to install in the job")
        dependencies = [self.package.requirement(request.extras), *self.package.pins]
        labels = {key: label(value) for key, value in request.labels.items()}
        labels.setdefault("negt2ibench", label(self.package.version))
        env = dict(request.env)
        if self.package.wheel is not None:
            env.setdefault("NEGT2I_WHEEL_SHA256", self.package.sha256)
        info = self.api.run_uv_job(
            DISTRIBUTION,
            script_args=list(request.args),
            dependencies=dependencies,
            python=request.python,
            env=env,
            secrets=dict(request.secrets),
            flavor=request.flavor,
            timeout=request.timeout_s,
            labels=labels,
            volumes=[*self._wheel_volume(), *request.volumes],
            namespace=self.namespace,
        )
        status = getattr(info, "status", None)
        stage = getattr(getattr(status, "stage", None), "value", getattr(status, "stage", None))
        return JobRef(str(info.id), self.namespace, str(getattr(info, "url", "")), str(stage or "SCHEDULING"))

    def state(self, job_id: str) -> JobState:
        """The job's stage and message; VANISHED when the Hub answers 404."""
        try:
            info = self.api.inspect_job(job_id=job_id, namespace=self.namespace)
        except Exception as error:
            if _status_code(error) == 404:
                return JobState(VANISHED, "the Hub no longer knows this job")
            raise
        status = info.status
        return JobState(str(getattr(status.stage, "value", status.stage)), status.message or "", str(info.url))

    def tail(self, job_id: str, lines: int = 20) -> list[str]:
        """The last `lines` lines of the job's logs (now; never waits)."""
        try:
            return list(self.api.fetch_job_logs(job_id=job_id, namespace=self.namespace, follow=False, tail=lines))
        except Exception as error:
            if _status_code(error) == 404:
                return []
            raise

    def cancel(self, job_id: str) -> None:
        try:
            self.api.cancel_job(job_id=job_id, namespace=self.namespace)
        except Exception as error:
            if _status_code(error) != 404:  # gone already: nothing to cancel
                raise

    def follow(
        self,
        job_id: str,
        say: Callable[[str], None],
        *,
        every: float = 15.0,
        lines: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> JobState:
        """Poll until the job ends, saying each new stage and each new log line among the last
        `lines`; the final state."""
        shown_stage, seen = "", list[str]()
        while True:
            state = self.state(job_id)
            if state.stage != shown_stage:
                say(f"job {job_id}: {state.stage}" + (f" ({state.message})" if state.message else ""))
                shown_stage = state.stage
            for line in [line.rstrip() for line in self.tail(job_id, lines) if line.strip()]:
                if line not in seen:
                    say(f"  | {line[:200]}")
                    seen = [*seen[-200:], line]
            if state.finished:
                return state
            sleep(every)
