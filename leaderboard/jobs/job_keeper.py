"""The Space's verification jobs, kept: launched, polled, relaunched, cancelled, within a budget.

`JobKeeper.run_pass()` runs at the Space's start-up, when a submission is stored, and every minute
(`space.shared_state.Rechecker`). For each entry it reads the store, asks the backend
(`leaderboard.jobs.job_backends`) and writes what it learnt into the entry's `job` record (`JobRecord`:
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
from leaderboard.checks.check_setup import SubmissionLimits
from leaderboard.checks.fresh_draw_policy import fresh_draw_due
from leaderboard.jobs.job_backends import Mode, VerifyBackend
from leaderboard.jobs.job_plan import JobPlan, plan_job
from leaderboard.store.image_sources import ImageSourceFactory
from leaderboard.store.sqlite_store import (
    Entry,
    JobRecord,
    LeaderboardStore,
    StaleEntryError,
    expired_reason,
    name_expired,
)
from leaderboard.store.states import AWAITING, transition
from negt2ibench.core.hf_jobs import TERMINAL, JobRef, last_error_line

log = logging.getLogger(__name__)
DAY = 24 * 3600
KEPT_LAUNCHES = 50  # launch times kept per entry (enough for any day's budget)
BUDGET_ENV = "NEGT2I_VERIFY_JOBS_PER_DAY"
GPU_BUDGET_ENV = "NEGT2I_VERIFY_GPU_SECONDS_PER_DAY"


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
    # GPU-seconds the Space's jobs may plan in any 24 hours (`leaderboard.jobs.job_plan`): one L4 for 8 hours.
    gpu_seconds_per_day: float = 8 * 3600.0
    generation_slack: float = 2.0  # a job's timeout allows this many times its planned generation

    @classmethod
    def from_env(cls) -> JobPolicy:
        """The defaults, with NEGT2I_VERIFY_JOBS_PER_DAY (a positive integer) as the daily budget of
        launches and NEGT2I_VERIFY_GPU_SECONDS_PER_DAY (a positive integer) as that of GPU-seconds."""
        from negt2ibench.core.options import check, positive_int

        changes: dict[str, Any] = {}
        if os.environ.get(BUDGET_ENV):
            changes["per_day"] = check(BUDGET_ENV, os.environ[BUDGET_ENV], positive_int)
        if os.environ.get(GPU_BUDGET_ENV):
            changes["gpu_seconds_per_day"] = float(check(GPU_BUDGET_ENV, os.environ[GPU_BUDGET_ENV], positive_int))
        return cls(**changes)


def needs_job(entry: Entry) -> bool:
    """Whether the entry waits for a verification job: its checks (received, validated, pending),
    or, verified with its images reproduced, its fresh draw (`leaderboard.checks.fresh_draw_policy`)."""
    return entry.status in AWAITING or fresh_draw_due(entry)


def timeout_for(images: int, policy: JobPolicy, generation_s: float = 0.0) -> int:
    """The job's timeout in seconds for `images` re-scored images and `generation_s` planned
    GPU-seconds of generation (given `generation_slack` times over)."""
    wanted = policy.startup_s + images * policy.seconds_per_image + generation_s * policy.generation_slack
    return int(min(policy.max_timeout_s, max(policy.min_timeout_s, wanted)))


def too_big(plan: JobPlan, policy: JobPolicy) -> str:
    """Why no job of this plan is ever launched here ("" when one may be): more GPU-seconds than the
    daily budget, or more time than a job may run."""
    wanted = policy.startup_s + plan.rescore_images * policy.seconds_per_image + plan.generation_s
    if plan.total_s > policy.gpu_seconds_per_day:
        budget = f"{policy.gpu_seconds_per_day:,.0f}"
        return f"its plan needs {plan.total_s:,.0f} GPU-seconds, more than the Space's daily budget of {budget}"
    if wanted > policy.max_timeout_s:
        most = f"{policy.max_timeout_s / 3600:g} hours"
        return f"its plan needs about {wanted / 3600:.1f} hours, more than a job may run here ({most})"
    return ""


def launches_since(entries: Sequence[Entry], since: float) -> list[float]:
    return sorted(t for e in entries if e.job is not None for t in e.job.launches if t >= since)


def _aligned(job: JobRecord) -> list[float]:
    """The job's planned GPU-seconds, one per launch (a launch recorded before plans were kept: 0)."""
    missing = len(job.launches) - len(job.launch_seconds)
    return [0.0] * missing + list(job.launch_seconds)[max(0, -missing) :]


def planned_since(entries: Sequence[Entry], since: float) -> list[tuple[float, float]]:
    """(launch time, planned GPU-seconds) of every launch at or after `since`, oldest first."""
    found = [
        (launched, seconds)
        for entry in entries
        if entry.job is not None
        for launched, seconds in zip(entry.job.launches, _aligned(entry.job), strict=True)
        if launched >= since
    ]
    return sorted(found)


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
        open_images: ImageSourceFactory | None = None,
    ):
        self.store, self.backend = store, backend
        self.open_images = open_images  # reads the model an entry's images record (None: the plans say unknown)
        self._plans: dict[tuple[str, str], JobPlan] = {}
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
        if not needs_job(entry):
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
            return self._maybe_launch(entry) if needs_job(current) else entry
        lines = self.backend.tail(job.job_id, 20)
        error = last_error_line(lines, state.message) or state.stage.lower()
        failures = job.failures + 1
        given_up = failures >= self.policy.max_failures
        entry = self._record(
            current, job, stage=state.stage, message=state.message, failures=failures, last_error=error,
            given_up=given_up,
        )  # fmt: skip
        if not needs_job(current):
            return entry
        if given_up:
            return self._give_up(entry, job, failures, error) if current.status in AWAITING else entry
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
        return "spot" if entry.status in AWAITING else "fresh"

    def _plan(self, entry: Entry, mode: Mode) -> JobPlan:
        """The plan of a `mode` job for the entry (`leaderboard.jobs.job_plan`), made once per entry and
        mode in this process: it reads the model the entry's first image records."""
        key = (entry.submission_id, mode)
        if key not in self._plans:
            record, total = None, self.images_per_entry
            if self.open_images is not None and mode != "full":
                try:
                    results = self.store.get_results(entry.submission_id)
                    total = len(results) or total
                    source = self.open_images(entry.images_repo, entry.images_revision, results[0].model_key)
                    first = getattr(source, "first_record", None)
                    record = first() if first is not None else None
                except Exception as error:  # noqa: BLE001 - unreadable now: the plan says the model is unknown
                    log.info("the images of %s were not read for its plan: %s", entry.submission_id, error)
            self._plans[key] = plan_job(mode, total, record)
        return self._plans[key]

    def _waits(self, entry: Entry, base: JobRecord, message: str, now: float) -> Entry:
        """The entry waits (no launch now), its job record saying why."""
        if base.message != message or base != entry.job:
            return self._write(entry, base.model_copy(update={"message": message, "updated_at": now}))
        return entry

    def _over_budget(self, entry: Entry, plan: JobPlan, entries: Sequence[Entry], mode: Mode, now: float) -> str:
        """Why the plan is not launched now ("" when it is): never (too big for the budget or a job's
        time), or not before the Space's daily GPU budget has room for it (when that is)."""
        never = too_big(plan, self.policy)
        if never:
            again = " --fresh-draw" if mode == "fresh" else ""
            command = f"negt2ibench leaderboard verify-job --entry {entry.submission_id[:8]}{again}"
            return f"{never}: no job is launched for it here; a maintainer runs `{command}`"
        budget = self.policy.gpu_seconds_per_day
        recent = planned_since(entries, now - DAY)
        spent = sum(seconds for _, seconds in recent)
        if spent + plan.total_s <= budget:
            return ""
        freed, free_at = 0.0, now + DAY
        for launched, seconds in recent:  # the oldest launches leave the window first
            freed += seconds
            if spent - freed + plan.total_s <= budget:
                free_at = launched + DAY
                break
        return (
            f"waits for the Space's daily GPU budget: its plan needs {plan.total_s:,.0f} GPU-seconds, "
            f"{max(0.0, budget - spent):,.0f} of {budget:,.0f} are left in the last 24 hours "
            f"(enough after {time.strftime('%H:%M UTC', time.gmtime(free_at))})"
        )

    def _maybe_launch(self, entry: Entry) -> Entry:
        job = entry.job if entry.job is not None and entry.job.backend == self.backend.name else None
        now = self.clock()
        mode = self._mode(entry)
        if job is not None and job.given_up and job.mode == mode:
            return entry
        completed = job is not None and job.stage == "COMPLETED" and bool(job.launches) and job.mode == mode
        if completed and job is not None and now - job.launches[-1] < self.retry_after_s:
            return entry  # its check could not run; tried again later (a job of the next mode goes at once)
        entries = self.store.list_entries()
        running = sum(self._active(other) for other in entries)
        plan = self._plan(entry, mode)
        base = (job or JobRecord(backend=self.backend.name)).model_copy(
            update={"plan": plan.describe(), "plan_s": plan.total_s}
        )
        if running >= self.backend.max_running:
            message = f"queued: {running} verification job(s) run at once here ({self.backend.name})"
            return self._waits(entry, base, message, now)
        recent = launches_since(entries, now - DAY)
        if len(recent) >= self.policy.per_day:
            free = time.strftime("%H:%M UTC", time.gmtime(recent[-self.policy.per_day] + DAY))
            budget = self.policy.per_day
            message = f"waits for the Space's daily budget of {budget} verification jobs (next after {free})"
            return self._waits(entry, base, message, now)
        message = self._over_budget(entry, plan, entries, mode, now)
        if message:
            return self._waits(entry, base, message, now)
        try:
            ref = self.backend.launch(entry, mode, timeout_for(plan.rescore_images, self.policy, plan.generation_s))
        except Exception as error:  # noqa: BLE001 - a refused launch (no credits, no wheel ...) is a failed job
            log.warning("launching the verification job of %s failed: %s", entry.submission_id, error)
            return self._launch_failed(entry, base, error, now)
        return self._launched(entry, base, ref, mode, now)

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
                "mode": self._mode(entry),
                "launches": [*base.launches, now][-KEPT_LAUNCHES:],
                "launch_seconds": [*_aligned(base), 0.0][-KEPT_LAUNCHES:],  # a refused launch costs nothing
                "updated_at": now,
            }
        )
        entry = self._write(entry, record)
        return self._give_up(entry, record, failures, message) if given_up and entry.status in AWAITING else entry

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
                "launch_seconds": [*_aligned(base), base.plan_s][-KEPT_LAUNCHES:],
                "updated_at": now,
            }
        )
        return self._write(entry, record)

    # -- writing ----------------------------------------------------------------------------------
    def _record(self, entry: Entry, job: JobRecord, **changes: Any) -> Entry:
        return self._write(entry, job.model_copy(update={**changes, "updated_at": self.clock()}))

    def _write(self, entry: Entry, record: JobRecord) -> Entry:
        return self.store.update_entry(entry.submission_id, None, job=record)
