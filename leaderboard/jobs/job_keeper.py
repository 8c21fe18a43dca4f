"""The Space's verification jobs, kept: launched, polled, relaunched, cancelled, within a budget.

`JobKeeper.run_pass()` runs at the Space's start-up, when a submission is stored, and every minute
(`space.shared_state.Rechecker`). For each entry it reads the store, asks the backend
(`leaderboard.jobs.job_backends`) and writes what it learnt into the entry's `job` record (`JobRecord`:
backend, job id, logs link, stage, flavour, launches, failures, last error), which the Submit tab shows:

- an entry that waits (received, validated, pending) and has no job running gets one: its spot check
  (`verify-job --entry ID`), planned by `leaderboard.jobs.job_plan.fitted_plan`: on the flavour the
  model fits on, split into jobs that fit a job's time and a day's budget (each stops at its deadline,
  `--stop-after`, keeping its progress), a fresh draw shrunk to fit (`--fresh-per-cell`), or waiting
  with the reason when nothing fits; an entry whose regeneration was inconclusive on one machine gets
  its rerun on another flavour;
- a running job is polled (`state`); its stage and logs link are written when they change;
- a job that failed or vanished (ERROR, CANCELED, DELETED, VANISHED), or **completed without an
  outcome** (the entry still waits and its regeneration made no progress), counts as a failure, with
  its logs' last error line; a failed job is relaunched at once, one that completed after
  `retry_after_s`, until `max_failures` in a row; then the entry stays pending with that line and no
  job is launched for it any more (a maintainer runs the command: docs/leaderboard.md). A split plan's
  job that kept its progress is no failure: the next one goes at once;
- a withdrawn entry's running job is cancelled;
- at most `per_day` jobs are launched in any 24 hours for the whole Space, `per_entry_per_day` for one
  entry and `per_submitter_per_day` for one submitter's entries (so one account's entries that never
  verify cannot spend the Space's launches), within the daily GPU budget, and at most the backend's
  `max_running` at once (one for `local`: the machine's GPU holds one set of models).

With the `none` backend no job is launched: each waiting entry's record says why (the reason).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from leaderboard.checks.check_setup import SubmissionLimits
from leaderboard.checks.fresh_draw_policy import fresh_draw_due
from leaderboard.checks.model_source import hub_model
from leaderboard.jobs.job_backends import DEFAULT_FLAVOR, Mode, VerifyBackend
from leaderboard.jobs.job_plan import FRESH_PER_CELL, JobPlan, JobPolicy, fitted_plan, stop_after, timeout_for
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
__all__ = ["JobKeeper", "JobPolicy", "needs_job", "timeout_for"]


def needs_job(entry: Entry) -> bool:
    """Whether the entry waits for a verification job: its checks (received, validated, pending),
    or, verified with its images reproduced, its fresh draw (`leaderboard.checks.fresh_draw_policy`)."""
    return entry.status in AWAITING or fresh_draw_due(entry)


def progress_mark(entry: Entry) -> str:
    """What a job's progress is read from: the entry's regeneration (a split plan's part, an inconclusive run)."""
    check = entry.regeneration
    return "" if check is None else f"{check.outcome}:{check.checked}:{check.inconclusive_runs}"


def made_progress(entry: Entry, job: JobRecord) -> bool:
    """Whether the entry's last job left progress the next job goes on from: a split plan's pairs so far,
    or a regeneration inconclusive on its machine (the next runs on another)."""
    check = entry.regeneration
    return check is not None and check.outcome in ("partial", "inconclusive") and progress_mark(entry) != job.progress


def first_record(keeper: Any, entry: Entry, mode: Mode) -> tuple[Any, int, int | None]:
    """(the model the entry's first image records, its images, the weights' bytes of a model the registry
    does not know) for its plan; what cannot be read now is None (the plan says the model is unknown)."""
    record, total, weights = None, keeper.images_per_entry, None
    if keeper.open_images is None or mode == "full":
        return record, total, weights
    try:
        results = keeper.store.get_results(entry.submission_id)
        total = len(results) or total
        source = keeper.open_images(entry.images_repo, entry.images_revision, results[0].model_key)
        first = getattr(source, "first_record", None)
        record = first() if first is not None else None
    except Exception as error:  # noqa: BLE001 - unreadable now: the plan says the model is unknown
        log.info("the images of %s were not read for its plan: %s", entry.submission_id, error)
    if record is not None and keeper.resolve_model is not None:
        from generation.registry import REGISTRY

        if not any(spec.hub_id == record.model_id for spec in REGISTRY.values()):
            try:
                weights = keeper.resolve_model(record.model_id, None).weight_bytes
            except Exception as error:  # noqa: BLE001 - not public or not reachable: its memory is not known
                log.info("the model of %s was not resolved for its plan: %s", entry.submission_id, error)
    return record, total, weights


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
        resolve_model: Any = hub_model,
    ):
        self.store, self.backend = store, backend
        self.open_images = open_images  # reads the model an entry's images record (None: the plans say unknown)
        # The weights' size of a model the registry does not know, from the Hub (None: not asked; unknown).
        self.resolve_model = resolve_model
        self._plans: dict[tuple[str, str, str], JobPlan] = {}
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
        ended = state.stage == "COMPLETED"
        if ended and (not needs_job(current) or self._mode(current) != job.mode or made_progress(current, job)):
            entry = self._record(current, job, stage="COMPLETED", message=state.message, failures=0, last_error="")
            return self._maybe_launch(entry, at_once=True) if needs_job(current) else entry
        if ended:  # it ran to its end and the entry still waits, as it was: no outcome, a failed attempt
            error = f"the job ended without an outcome ({current.reason[:200]})"
        else:
            error = last_error_line(self.backend.tail(job.job_id, 20), state.message) or state.stage.lower()
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
        return self._maybe_launch(entry, at_once=not ended)

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

    def _plan(self, entry: Entry, mode: Mode, avoid: str) -> JobPlan:
        """The plan of a `mode` job for the entry (`job_plan.fitted_plan`), made once per entry, mode and
        flavour passed over in this process: it reads the model the entry's first image records."""
        key = (entry.submission_id, mode, avoid)
        if key not in self._plans:
            record, total, weights = first_record(self, entry, mode)
            smallest = getattr(self.backend, "flavor", DEFAULT_FLAVOR)
            self._plans[key] = fitted_plan(
                mode, total, record, self.policy, weight_bytes=weights, avoid=avoid, smallest=smallest
            )
        return self._plans[key]

    def _waits(self, entry: Entry, base: JobRecord, message: str, now: float) -> Entry:
        """The entry waits (no launch now), its job record saying why."""
        if base.message != message or base != entry.job:
            return self._write(entry, base.model_copy(update={"message": message, "updated_at": now}))
        return entry

    def _over_budget(self, plan: JobPlan, entries: Sequence[Entry], now: float) -> str:
        """Why the plan's next job is not launched now ("" when it is): not before the Space's daily GPU
        budget has room for it (and when that is)."""
        budget, cost = self.policy.gpu_seconds_per_day, plan.part_budget_s
        recent = planned_since(entries, now - DAY)
        spent = sum(seconds for _, seconds in recent)
        if spent + cost <= budget:
            return ""
        freed, free_at = 0.0, now + DAY
        for launched, seconds in recent:  # the oldest launches leave the window first
            freed += seconds
            if spent - freed + cost <= budget:
                free_at = launched + DAY
                break
        return (
            f"waits for the Space's daily GPU budget: its plan needs {cost:,.0f} GPU-seconds, "
            f"{max(0.0, budget - spent):,.0f} of {budget:,.0f} are left in the last 24 hours "
            f"(enough after {time.strftime('%H:%M UTC', time.gmtime(free_at))})"
        )

    def _capped(self, entry: Entry, entries: Sequence[Entry], now: float) -> str:
        """Why no job may be launched now for lack of launches ("" when one may): the Space's, the entry's
        or its submitter's in the last 24 hours."""
        since = now - DAY
        caps = (
            (launches_since(entries, since), self.policy.per_day, "the Space's daily budget of {n} verification jobs"),
            (launches_since([entry], since), self.policy.per_entry_per_day, "this entry's {n} jobs a day"),
            (
                launches_since([e for e in entries if e.submitter == entry.submitter], since),
                self.policy.per_submitter_per_day,
                "its submitter's {n} jobs a day",
            ),
        )
        for recent, most, what in caps:
            if len(recent) >= most:
                free = time.strftime("%H:%M UTC", time.gmtime(recent[-most] + DAY))
                return f"waits for {what.format(n=most)} (next after {free})"
        return ""

    def _maybe_launch(self, entry: Entry, *, at_once: bool = False) -> Entry:
        job = entry.job if entry.job is not None and entry.job.backend == self.backend.name else None
        now, mode = self.clock(), self._mode(entry)
        if job is not None and job.given_up and job.mode == mode:
            return entry
        completed = job is not None and job.stage == "COMPLETED" and bool(job.launches) and job.mode == mode
        if completed and not at_once and job is not None and now - job.launches[-1] < self.retry_after_s:
            return entry  # it ended without an outcome; tried again later (a job of the next mode goes at once)
        entries = self.store.list_entries()
        check = entry.regeneration
        avoid = job.flavor if job is not None and check is not None and check.outcome == "inconclusive" else ""
        plan = self._plan(entry, mode, avoid)
        base = (job or JobRecord(backend=self.backend.name)).model_copy(
            update={"plan": plan.describe(), "plan_s": plan.part_budget_s, "parts": plan.parts}
        )
        running = sum(self._active(other) for other in entries)
        message = self._capped(entry, entries, now)
        if running >= self.backend.max_running:
            message = f"queued: {running} verification job(s) run at once here ({self.backend.name})"
        elif plan.waits:
            command = f"negt2ibench leaderboard verify-job --entry {entry.submission_id[:8]}"
            command += " --fresh-draw" if mode == "fresh" else ""
            message = f"{plan.waits}: no job is launched for it here; a maintainer runs `{command}`"
        message = message or self._over_budget(plan, entries, now)
        if message:
            return self._waits(entry, base, message, now)
        extra: list[str] = []
        deadline = stop_after(plan, self.policy)
        if deadline is not None:
            extra += ["--stop-after", f"{deadline:.0f}"]
        if mode == "fresh" and plan.per_cell < FRESH_PER_CELL:
            extra += ["--fresh-per-cell", str(plan.per_cell)]
        timeout = timeout_for(plan.rescore_images, self.policy, plan.generation_s / plan.parts)
        try:
            ref = self.backend.launch(entry, mode, timeout, flavor=plan.flavour.name, extra=extra)
        except Exception as error:  # noqa: BLE001 - a refused launch (no credits, no wheel ...) is a failed job
            log.warning("launching the verification job of %s failed: %s", entry.submission_id, error)
            return self._launch_failed(entry, base, error, now)
        return self._launched(entry, base.model_copy(update={"flavor": plan.flavour.name}), ref, mode, now)

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
                "progress": progress_mark(entry),
                "updated_at": now,
            }
        )
        return self._write(entry, record)

    # -- writing ----------------------------------------------------------------------------------
    def _record(self, entry: Entry, job: JobRecord, **changes: Any) -> Entry:
        return self._write(entry, job.model_copy(update={**changes, "updated_at": self.clock()}))

    def _write(self, entry: Entry, record: JobRecord) -> Entry:
        return self.store.update_entry(entry.submission_id, None, job=record)
