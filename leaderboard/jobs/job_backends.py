"""Where the Space's verification jobs run: one small interface, three backends (`NEGT2I_VERIFY_BACKEND`).

Each runs the same command, `negt2ibench leaderboard verify-job --entry ID --store LOCATOR`
(`leaderboard.jobs.verify_job`), and answers with the job's id, its state and its logs' last lines:

- `hf-jobs` (`HfJobsBackend`): a Hugging Face Job on the account of the Space's token
  (`negt2ibench.core.hf_jobs`), flavour NEGT2I_VERIFY_FLAVOR (default `l4x1`), the token and the
  spot check's secret as the job's secrets, the entry's id in its labels. The job reaches the
  store through the Hub, so the store must be the results repo (NEGT2I_RESULTS_REPO).
- `local` (`LocalBackend`): a subprocess on this machine (a Space on a dedicated GPU, `negt2ibench
  serve`); its output goes to a log file, the job's "logs link".
- `none`: no job runs; entries wait, saying why, until a maintainer runs the command wherever they like.

`choose_backend` reads the setting; unset: on ZeroGPU (whose GPU a background job cannot use)
`hf-jobs` when the Space has a token, else `none` with that reason; elsewhere `local`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from leaderboard.checks.check_setup import JOB_ID_ENV, SECRET_ENV
from leaderboard.store.sqlite_store import Entry
from negt2ibench.core.errors import UsageError
from negt2ibench.core.hf_jobs import VANISHED, HfJobs, JobPackage, JobRef, JobRequest, JobState

BACKEND_ENV = "NEGT2I_VERIFY_BACKEND"
FLAVOR_ENV = "NEGT2I_VERIFY_FLAVOR"
NAMESPACE_ENV = "NEGT2I_VERIFY_NAMESPACE"
BACKENDS = ("hf-jobs", "local", "none")
# One L4 (24 GB, bf16 tensor cores, $0.80/h as of 2026, docs/hub-jobs.md): the four models and a batch
# fit with room to spare, and it is the cheapest flavour whose tensor cores run the bf16 stages.
DEFAULT_FLAVOR = "l4x1"
COMMAND = ("leaderboard", "verify-job")
MODE_FLAGS: dict[str, tuple[str, ...]] = {"spot": (), "full": ("--full",), "fresh": ("--fresh-draw",)}
JOB_WORK_DIR = "/tmp/negt2i-verify"  # inside a Hugging Face Job (its disk is the job's own)
Mode = Literal["spot", "full", "fresh"]


class VerifyBackend(Protocol):
    name: str
    reason: str  # "" when it launches jobs; else why none runs (shown on each waiting entry)
    max_running: int  # jobs at once (local: one, the machine's one GPU; hf-jobs: each its own machine)

    def launch(
        self, entry: Entry, mode: Mode, timeout_s: int, *, flavor: str = "", extra: Sequence[str] = ()
    ) -> JobRef:
        """Launch `verify-job` for ENTRY: on FLAVOR where the backend chooses machines, with the plan's
        EXTRA arguments (`--stop-after`, `--fresh-per-cell`)."""

    def state(self, job_id: str) -> JobState: ...

    def tail(self, job_id: str, lines: int = 20) -> list[str]: ...

    def cancel(self, job_id: str) -> None: ...


def job_arguments(entry: Entry, mode: Mode, locator: str, extra: Sequence[str] = ()) -> list[str]:
    """`leaderboard verify-job`'s arguments for ENTRY (`--full`, `--fresh-draw`: those modes)."""
    args = [*COMMAND, "--entry", entry.submission_id, "--store", locator, "--no-progress", *extra]
    return [*args, *MODE_FLAGS[mode]]


@dataclass
class NoBackend:
    """No job runs: entries wait, saying `reason`, until a maintainer runs `verify-job` by hand."""

    reason: str
    name: str = "none"
    max_running: int = 0

    def launch(
        self, entry: Entry, mode: Mode, timeout_s: int, *, flavor: str = "", extra: Sequence[str] = ()
    ) -> JobRef:
        raise UsageError(f"no verification backend: {self.reason}")

    def state(self, job_id: str) -> JobState:
        return JobState(VANISHED, self.reason)

    def tail(self, job_id: str, lines: int = 20) -> list[str]:
        return []

    def cancel(self, job_id: str) -> None:
        return None


@dataclass
class _Process:
    process: subprocess.Popen
    deadline: float
    log: Path
    handle: IO[bytes]
    timed_out: bool = False


@dataclass
class LocalBackend:
    """`verify-job` as a subprocess here, in its own process group (so cancel and a timeout stop its
    children too), its output in LOG_DIR/<job id>.log. `command` is the program before the
    arguments (default: this Python's `-m negt2ibench`); `extra` goes after them (`--weights-dir ...`)."""

    locator: str
    log_dir: Path
    command: Sequence[str] = (sys.executable, "-m", "negt2ibench")
    extra: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)
    name: str = "local"
    reason: str = ""
    max_running: int = 1
    _jobs: dict[str, _Process] = field(default_factory=dict, repr=False)

    def launch(
        self, entry: Entry, mode: Mode, timeout_s: int, *, flavor: str = "", extra: Sequence[str] = ()
    ) -> JobRef:
        job_id = f"local-{uuid.uuid4().hex[:12]}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{job_id}.log"
        handle = log.open("ab")
        process = subprocess.Popen(
            [*self.command, *job_arguments(entry, mode, self.locator, [*self.extra, *extra])],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env, JOB_ID_ENV: job_id},
            start_new_session=True,
        )
        self._jobs[job_id] = _Process(process, time.monotonic() + timeout_s, log, handle)
        return JobRef(job_id, "", str(log), "RUNNING")

    def pid(self, job_id: str) -> int | None:
        known = self._jobs.get(job_id)
        return known.process.pid if known is not None else None

    def state(self, job_id: str) -> JobState:
        known = self._jobs.get(job_id)
        if known is None:  # launched by an earlier run of the app: lost with it
            return JobState(VANISHED, "not a job of this process (the app restarted)")
        code = known.process.poll()
        if code is None and time.monotonic() > known.deadline:
            self._stop(known)
            known.timed_out = True
            code = known.process.wait()
        if code is None:
            return JobState("RUNNING", f"pid {known.process.pid}", str(known.log))
        known.handle.close()
        if known.timed_out:
            return JobState("ERROR", "stopped at its timeout", str(known.log))
        if code == 0:
            return JobState("COMPLETED", "", str(known.log))
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return JobState("ERROR", how, str(known.log))

    def tail(self, job_id: str, lines: int = 20) -> list[str]:
        known = self._jobs.get(job_id)
        if known is None or not known.log.exists():
            return []
        with known.log.open("rb") as handle:
            handle.seek(max(0, known.log.stat().st_size - 64 * 1024))
            return handle.read().decode("utf-8", "replace").splitlines()[-lines:]

    def _stop(self, known: _Process) -> None:
        try:
            os.killpg(known.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            known.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(known.process.pid, signal.SIGKILL)

    def cancel(self, job_id: str) -> None:
        known = self._jobs.get(job_id)
        if known is not None and known.process.poll() is None:
            self._stop(known)

    def close(self) -> None:
        """Stop every job still running (the app closes)."""
        for job_id in list(self._jobs):
            self.cancel(job_id)


@dataclass
class HfJobsBackend:
    """`verify-job` as a Hugging Face Job (`HfJobs`: the package pinned, the call recorded by a double)."""

    jobs: HfJobs
    locator: str
    flavor: str = DEFAULT_FLAVOR
    secrets: dict[str, str] = field(default_factory=dict)  # name → value; values never shown
    env: dict[str, str] = field(default_factory=dict)
    space: str = ""
    name: str = "hf-jobs"
    reason: str = ""
    max_running: int = 4

    def launch(
        self, entry: Entry, mode: Mode, timeout_s: int, *, flavor: str = "", extra: Sequence[str] = ()
    ) -> JobRef:
        labels = {"negt2ibench-entry": entry.submission_id, "negt2ibench-check": mode}
        if self.space:
            labels["negt2ibench-space"] = self.space
        request = JobRequest(
            job_arguments(entry, mode, self.locator, ("--work-dir", JOB_WORK_DIR, "--download", *extra)),
            flavor or self.flavor,
            timeout_s,
            extras=("leaderboard", "models"),
            secrets=dict(self.secrets),
            env=dict(self.env),
            labels=labels,
        )
        return self.jobs.launch(request)

    def state(self, job_id: str) -> JobState:
        return self.jobs.state(job_id)

    def tail(self, job_id: str, lines: int = 20) -> list[str]:
        return self.jobs.tail(job_id, lines)

    def cancel(self, job_id: str) -> None:
        self.jobs.cancel(job_id)


def choose_backend(
    setting: str | None,
    *,
    locator: str,
    on_zero_gpu: bool,
    token: str | None,
    make_hf: Any = None,
    make_local: Any = None,
) -> VerifyBackend:
    """The backend NEGT2I_VERIFY_BACKEND names (unset or "": the default above). `make_hf()` and
    `make_local()` build the two that launch jobs; a setting they cannot serve gives `none` with the reason."""
    chosen = (setting or "").strip().lower()
    if chosen and chosen not in BACKENDS:
        raise UsageError(f"{BACKEND_ENV}={setting!r}: choose one of {', '.join(BACKENDS)}")
    how = "a maintainer runs `negt2ibench leaderboard verify-job --entry ID` (docs/leaderboard.md)"
    if not chosen:
        if on_zero_gpu and not token:
            return NoBackend(
                f"this Space runs on ZeroGPU, whose GPU a background job cannot use, and has no HF_TOKEN "
                f"secret to launch Hugging Face Jobs; {how}"
            )
        chosen = "hf-jobs" if on_zero_gpu else "local"
    if chosen == "none":
        return NoBackend(f"{BACKEND_ENV}=none: verification jobs are not launched here; {how}")
    if not locator:
        return NoBackend(f"this store cannot be opened by another process; {how}")
    if chosen == "hf-jobs":
        if not locator.startswith("hub:"):
            return NoBackend(
                f"a Hugging Face Job reaches the store through the Hub, and this one is {locator}: set "
                f"NEGT2I_RESULTS_REPO; {how}"
            )
        if not token:
            return NoBackend(f"{BACKEND_ENV}=hf-jobs needs the HF_TOKEN secret to launch jobs; {how}")
        return make_hf()
    return make_local()


def job_secrets(token: str | None) -> dict[str, str]:
    """The secrets a verification job gets: the token (the results repo, the images) and the spot
    check's secret when one is set (so the job draws the Space's sample)."""
    secrets = {"HF_TOKEN": token} if token else {}
    if os.environ.get(SECRET_ENV):
        secrets[SECRET_ENV] = os.environ[SECRET_ENV]
    return secrets


def default_backend(
    store_locator: str,
    *,
    on_zero_gpu: bool,
    home: Path,
    local_extra: Sequence[str] = (),
    api: Any = None,
    project_root: Path | None = None,
) -> VerifyBackend:
    """The backend this environment asks for (`choose_backend` over NEGT2I_VERIFY_* and HF_TOKEN)."""
    token = os.environ.get("HF_TOKEN")

    def make_hf() -> VerifyBackend:
        from huggingface_hub import HfApi

        from negt2ibench.core.hf_jobs import job_package
        from negt2ibench.core.options import job_flavor
        from negt2ibench.core.versions import project_version

        root = project_root or Path(__file__).resolve().parent.parent

        def package() -> JobPackage:  # on the first launch, not when the app starts
            return job_package(project_version(), root, home, ("leaderboard", "models"))

        jobs = HfJobs(api or HfApi(token=token), namespace=os.environ.get(NAMESPACE_ENV) or None, package=package)
        flavor = job_flavor(os.environ.get(FLAVOR_ENV) or DEFAULT_FLAVOR)
        return HfJobsBackend(jobs, store_locator, flavor, job_secrets(token), space=os.environ.get("SPACE_ID", ""))

    def make_local() -> VerifyBackend:
        return LocalBackend(store_locator, home / "verify-logs", extra=tuple(local_extra))

    return choose_backend(
        os.environ.get(BACKEND_ENV),
        locator=store_locator,
        on_zero_gpu=on_zero_gpu,
        token=token,
        make_hf=make_hf,
        make_local=make_local,
    )
