"""The Space's verification jobs, kept: launched, polled, relaunched, cancelled, within a budget.

`JobKeeper.run_pass()` runs at the Space's start-up, when a submission is stored, and every minute
(`space.handlers.Rechecker`). For each entry it reads the store, asks the backend
(`leaderboard.job_backends`) and writes what it learnt into the entry's `job` record (`JobRecord`:
backend, job id, logs link, stage, launches, failures, last error), which the Submit tab shows:

- an entry that waits (received, validated, pending) and has no job running gets one: its spot
  check (`verify-job --entry ID`), with a timeout from its plan's image count (`timeout_for`);
- a running job is polled (`state`); its stage and logs link are written when they change;
- a job that failed or vanished (ERROR, CANCELED, DELETED, VANISHED) before its run wrote an
  outcome counts as a failure, with its logs' last error line; it is relaunched at once until
  `max_failures` in a row, then the entry stays pending with that line, and no job is launched for
  it any more (a maintainer runs the command: docs/leaderboard.md);
- a job that completed with the entry still waiting (its check could not run: images unreachable,
  ...) is launched again after `retry_after_s`;
- a withdrawn entry's running job is cancelled;
- at most `per_day` jobs are launched in any 24 hours, for the whole Space (the budget; an entry
  that waits for it says when the next launch is possible), and at most the backend's
  `max_running` run at once (one for `local`: the machine's GPU holds one set of models).

With the `none` backend no job is launched: each waiting entry's record says why (the reason).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from negt2ibench.core.hf_jobs import TERMINAL, JobRef, last_error_line

from .job_backends import Mode, VerifyBackend
from .states import AWAITING, SubmissionLimits, transition
from .store import Entry, JobRecord, LeaderboardStore, StaleEntryError, expired_reason, name_expired

log = logging.getLogger(__name__)
DAY = 24 * 3600
KEPT_LAUNCHES = 50  # launch times kept per entry (enough for any day's budget)
BUDGET_ENV = "NEGT2I_VERIFY_JOBS_PER_DAY"


@dataclass(frozen=True)
class JobPolicy:
    """How far the Space's jobs may go: failures in a row before it gives an entry up, launches a
    day for the whole Space, the wait before a job that completed without an outcome is launched
    again, and the timeout: `startup_s` (image pull, install, model download and load) plus
    `seconds_per_image` for each image the plan re-scores, within [`min_timeout_s`, `max_timeout_s`]."""

    max_failures: int = 3
    per_day: int = 24
    retry_after_s: float | None = None  # None: 30 minutes on `local` (free), 3 hours elsewhere (billed)
    startup_s: int = 1200
    seconds_per_image: float = 0.5
    min_timeout_s: int = 1800
    max_timeout_s: int = 6 * 3600

    @classmethod
    def from_env(cls) -> JobPolicy:
        """The defaults, with NEGT2I_VERIFY_JOBS_PER_DAY (a positive integer) as the daily budget."""
        from negt2ibench.core.options import check, positive_int

        budget = os.environ.get(BUDGET_ENV)
        return cls(per_day=check(BUDGET_ENV, budget, positive_int)) if budget else cls()


def timeout_for(images: int, policy: JobPolicy) -> int:
    """The job's timeout in seconds for `images` re-scored images."""
    wanted = policy.startup_s + images * policy.seconds_per_image
    return int(min(policy.max_timeout_s, max(policy.min_timeout_s, wanted)))


def launches_since(entries: Sequence[Entry], since: float) -> list[float]:
    return sorted(t for e in entries if e.job is not None for t in e.job.launches if t >= since)


class JobKeeper:
    """One backend's jobs for one store (`run_pass` is called from one thread at a time)."""

    def __init__(
        self,
        store: LeaderboardStore,
        backend: VerifyBackend,
        *,
        limits: SubmissionLimits | None = None,
        images_per_entry: int = 4800 * SAMPLES_PER_PROMPT,
        policy: JobPolicy | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.store, self.backend = store, backend
        self.limits = limits or SubmissionLimits()
        self.images_per_entry = images_per_entry
        self.policy = policy or JobPolicy.from_env()
        self.clock = clock
        wait = self.policy.retry_after_s
        self.retry_after_s = wait if wait is not None else (1800.0 if backend.name == "local" else 3 * 3600.0)

    # -- one pass ---------------------------------------------------------------------------------
    def run_pass(self) -> list[Entry]:
        """Look at every entry once; the entries as stored afterwards."""
        refresh = getattr(self.store, "refresh", None)
        if refresh is not None:
            refresh()  # another machine's job may have written
        done = []
        for entry in sorted(self.store.list_entries(), key=lambda e: e.created_at):
            try:
                done.append(self._keep(entry))
            except StaleEntryError:
                done.append(self.store.get_entry(entry.submission_id))  # changed meanwhile: the next pass
            except Exception:  # noqa: BLE001 - one entry's trouble (the Hub unreachable ...) must not stop the others
                log.exception("verification job of %s", entry.submission_id)
                done.append(entry)
        return done

    def _active(self, entry: Entry) -> bool:
        """Whether the entry has a job of this backend that has not ended."""
        job = entry.job
        return job is not None and bool(job.job_id) and job.stage not in TERMINAL and job.backend == self.backend.name

    def _keep(self, entry: Entry) -> Entry:
        job = entry.job
        active = self._active(entry)
        if name_expired(entry, self.clock()):  # its name is released: withdrawn (its job cancelled below)
            entry = transition(self.store, entry, "withdrawn", expired_reason(), run=None)
        if entry.status == "withdrawn":
            if active:
                assert job is not None
                self.backend.cancel(job.job_id)
                return self._record(entry, job, stage="CANCELED", message="cancelled: the entry was withdrawn")
            return entry
        if active:
            assert job is not None
            return self._poll(entry, job)  # to its end, whatever the entry became meanwhile
        if entry.status not in AWAITING:
            return entry
        if self.backend.reason:
            if job is None or job.message != self.backend.reason or job.backend != self.backend.name:
                return self._write(entry, JobRecord(backend=self.backend.name, message=self.backend.reason))
            return entry
        return self._maybe_launch(entry)

    # -- polling ----------------------------------------------------------------------------------
    def _poll(self, entry: Entry, job: JobRecord) -> Entry:
        state = self.backend.state(job.job_id)
        if not state.finished:
            if (state.stage, state.message) != (job.stage, job.message) or (state.url and state.url != job.url):
                return self._record(entry, job, stage=state.stage, message=state.message, url=state.url or job.url)
            return entry
        current = self.store.get_entry(entry.submission_id)
        if state.stage == "COMPLETED":
            entry = self._record(current, job, stage="COMPLETED", message=state.message, failures=0, last_error="")
            return entry if current.status not in AWAITING else self._maybe_launch(entry)
        lines = self.backend.tail(job.job_id, 20)
        error = last_error_line(lines, state.message) or state.stage.lower()
        failures = job.failures + 1
        given_up = failures >= self.policy.max_failures
        entry = self._record(
            current, job, stage=state.stage, message=state.message, failures=failures, last_error=error,
            given_up=given_up,
        )  # fmt: skip
        if current.status not in AWAITING:
            return entry
        if given_up:
            return self._give_up(entry, job, failures, error)
        return self._maybe_launch(entry)

    def _give_up(self, entry: Entry, job: JobRecord, failures: int, error: str) -> Entry:
        reason = (
            f"verification job failed {failures} times ({self.backend.name}; last error: {error}); no job is launched "
            "for it any more: a maintainer runs `negt2ibench leaderboard verify-job --entry "
            f"{entry.submission_id[:8]}`"
        )

        def check(current: Entry) -> str:
            if current.status not in AWAITING:
                return f"it is {current.status}"
            if current.job is None or current.job.job_id != job.job_id:
                return "another job was launched since"
            return ""

        return self.store.update_entry(entry.submission_id, check, status="pending", reason=reason, run=None)

    # -- launching --------------------------------------------------------------------------------
    def _mode(self, entry: Entry) -> Mode:
        return "spot"

    def _maybe_launch(self, entry: Entry) -> Entry:
        job = entry.job if entry.job is not None and entry.job.backend == self.backend.name else None
        now = self.clock()
        if job is not None and job.given_up:
            return entry
        completed = job is not None and job.stage == "COMPLETED" and bool(job.launches)
        if completed and job is not None and now - job.launches[-1] < self.retry_after_s:
            return entry  # its check could not run; tried again later
        entries = self.store.list_entries()
        running = sum(self._active(other) for other in entries)
        if running >= self.backend.max_running:
            message = f"queued: {running} verification job(s) run at once here ({self.backend.name})"
            base = job or JobRecord(backend=self.backend.name)
            if base.message != message:
                return self._write(entry, base.model_copy(update={"message": message, "updated_at": now}))
            return entry
        recent = launches_since(entries, now - DAY)
        if len(recent) >= self.policy.per_day:
            free = time.strftime("%H:%M UTC", time.gmtime(recent[-self.policy.per_day] + DAY))
            budget = self.policy.per_day
            message = f"waits for the Space's daily budget of {budget} verification jobs (next after {free})"
            base = job or JobRecord(backend=self.backend.name)
            if base.message != message:
                return self._write(entry, base.model_copy(update={"message": message, "updated_at": now}))
            return entry
        mode = self._mode(entry)
        images = self.limits.plan_for(self.images_per_entry).sample_size if mode == "spot" else self.images_per_entry
        try:
            ref = self.backend.launch(entry, mode, timeout_for(images, self.policy))
        except Exception as error:  # noqa: BLE001 - a refused launch (no credits, no wheel ...) is a failed job
            log.warning("launching the verification job of %s failed: %s", entry.submission_id, error)
            return self._launch_failed(entry, job, error, now)
        return self._launched(entry, job, ref, mode, now)

    def _launch_failed(self, entry: Entry, job: JobRecord | None, error: Exception, now: float) -> Entry:
        """A launch that raised counts as a failed job (the bound applies), with the error's first line."""
        from negt2ibench.core.errors import NegT2IError

        text = error.one_line() if isinstance(error, NegT2IError) else f"{type(error).__name__}: {error}"
        message = f"could not launch: {text.splitlines()[0] if text else type(error).__name__}"[:300]
        base = job or JobRecord(backend=self.backend.name)
        failures = base.failures + 1
        given_up = failures >= self.policy.max_failures
        record = base.model_copy(
            update={
                "job_id": "",
                "stage": "",
                "message": message,
                "failures": failures,
                "last_error": message,
                "given_up": given_up,
                "launches": [*base.launches, now][-KEPT_LAUNCHES:],
                "updated_at": now,
            }
        )
        entry = self._write(entry, record)
        return self._give_up(entry, record, failures, message) if given_up else entry

    def _launched(self, entry: Entry, job: JobRecord | None, ref: JobRef, mode: Mode, now: float) -> Entry:
        base = job or JobRecord(backend=self.backend.name)
        record = base.model_copy(
            update={
                "job_id": ref.job_id,
                "url": ref.url,
                "stage": ref.stage,
                "message": "",
                "mode": mode,
                "launches": [*base.launches, now][-KEPT_LAUNCHES:],
                "updated_at": now,
            }
        )
        return self._write(entry, record)

    # -- writing ----------------------------------------------------------------------------------
    def _record(self, entry: Entry, job: JobRecord, **changes: Any) -> Entry:
        return self._write(entry, job.model_copy(update={**changes, "updated_at": self.clock()}))

    def _write(self, entry: Entry, record: JobRecord) -> Entry:
        return self.store.update_entry(entry.submission_id, None, job=record)
