"""The Space's verification jobs (`leaderboard.jobs.job_keeper`) on the `hf-jobs` backend, through a double of
`HfApi` that records every call: a job that succeeds, fails, vanishes; the relaunch bound; the
retry wait; the daily budget; cancel on withdrawal; and how the backend is chosen."""

from __future__ import annotations

import pytest

from leaderboard.intake.submissions import withdraw
from leaderboard.jobs.job_backends import HfJobsBackend, NoBackend, choose_backend, job_secrets
from leaderboard.jobs.job_keeper import JobKeeper, JobPolicy, timeout_for
from leaderboard.store.sqlite_store import NAME_HOLD_DAYS, Entry, SQLiteStore, name_conflict
from leaderboard.store.states import transition
from negt2ibench.core.errors import UsageError
from negt2ibench.core.hf_jobs import HfJobs, JobPackage
from tests.helpers.jobs_helpers import JobsHfApi

TOKEN = "hf_space_owner_secret"
LOCATOR = "hub:org/results"


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    api = JobsHfApi()
    backend = HfJobsBackend(
        HfJobs(api, package=JobPackage("9.9.9", None, ("numpy==2.0.0",))),
        LOCATOR,
        secrets={"HF_TOKEN": TOKEN, "NEGT2I_VERIFY_SECRET": "sample secret"},
        space="org/space",
    )
    clock = Clock()
    keeper = JobKeeper(store, backend, policy=JobPolicy(), clock=clock)
    return {"store": store, "api": api, "backend": backend, "keeper": keeper, "clock": clock}


def waiting(store, name: str = "Toy", created_at: float = 1.0) -> Entry:
    entry = Entry(model_name=name, model_key=name.lower(), submitter="alice", status="validated", created_at=created_at)
    return store.add_submission(entry)


def test_a_job_is_launched_polled_and_done_when_its_run_lands_an_outcome(world):
    store, api, keeper = world["store"], world["api"], world["keeper"]
    entry = waiting(store)
    keeper.run_pass()
    [run] = api.called("run_uv_job")
    assert run["script"] == "negt2ibench" and run["script_args"] == [
        "leaderboard", "verify-job", "--entry", entry.submission_id, "--store", LOCATOR, "--no-progress",
        "--work-dir", "/tmp/negt2i-verify", "--download",
    ]  # fmt: skip
    assert run["flavor"] == "l4x1" and run["timeout"] == timeout_for(652, JobPolicy()) == 1800
    assert run["secrets"] == ["HF_TOKEN", "NEGT2I_VERIFY_SECRET"]  # names; the values went apart
    assert run["labels"] == {
        "negt2ibench-entry": entry.submission_id,
        "negt2ibench-check": "spot",
        "negt2ibench-space": "org-space",
        "negt2ibench": "9-9-9",
    }
    assert run["dependencies"] == ["negt2ibench[leaderboard,models]==9.9.9", "numpy==2.0.0"]
    job = store.get_entry(entry.submission_id).job
    assert (job.backend, job.job_id, job.stage, job.url) == (
        "hf-jobs", "job0001", "SCHEDULING", "https://huggingface.co/jobs/space-owner/job0001",
    )  # fmt: skip
    api.set_stage("job0001", "RUNNING")
    keeper.run_pass()
    assert store.get_entry(entry.submission_id).job.stage == "RUNNING"
    transition(store, entry, "verified", "spot check: 652 of 652 re-scored images agree")  # the run
    api.set_stage("job0001", "COMPLETED")
    keeper.run_pass()
    keeper.run_pass()
    done = store.get_entry(entry.submission_id)
    assert done.status == "verified" and done.job.stage == "COMPLETED" and len(api.called("run_uv_job")) == 1
    assert TOKEN not in (store.path.read_bytes().decode("latin-1") + repr(api.calls))


def test_failed_jobs_are_relaunched_until_the_bound_then_the_entry_waits_with_the_last_error(world):
    store, api, keeper = world["store"], world["api"], world["keeper"]
    entry = waiting(store)
    keeper.run_pass()
    for attempt, job_id in enumerate(["job0001", "job0002", "job0003"], start=1):
        api.set_stage(
            job_id, "ERROR", "exit code 1", logs=["downloading", f"error: CUDA out of memory ({attempt})", ""]
        )
        keeper.run_pass()
        job = store.get_entry(entry.submission_id).job
        assert job.failures == attempt and job.last_error == f"error: CUDA out of memory ({attempt})"
    assert len(api.called("run_uv_job")) == 3  # the third failure is the last: no fourth job
    stuck = store.get_entry(entry.submission_id)
    assert stuck.status == "pending" and stuck.job.given_up
    assert stuck.reason.startswith(
        "verification job failed 3 times (hf-jobs; last error: error: CUDA out of memory (3))"
    )
    assert f"verify-job --entry {entry.submission_id[:8]}" in stuck.reason
    keeper.run_pass()
    assert len(api.called("run_uv_job")) == 3


def test_a_vanished_job_counts_as_a_failure_and_is_relaunched(world):
    store, api, keeper = world["store"], world["api"], world["keeper"]
    entry = waiting(store)
    keeper.run_pass()
    api.forget("job0001")
    keeper.run_pass()
    job = store.get_entry(entry.submission_id).job
    assert (job.job_id, job.failures, job.stage) == ("job0002", 1, "SCHEDULING")
    assert job.last_error == "the Hub no longer knows this job" and len(job.launches) == 2


def test_a_job_that_completed_with_the_entry_still_waiting_is_launched_again_later(world):
    store, api, keeper, clock = world["store"], world["api"], world["keeper"], world["clock"]
    entry = waiting(store)
    keeper.run_pass()
    transition(store, entry, "pending", "spot check waits (attempt 1): images not reachable")
    api.set_stage("job0001", "COMPLETED")
    keeper.run_pass()
    assert store.get_entry(entry.submission_id).job.stage == "COMPLETED" and len(api.called("run_uv_job")) == 1
    assert keeper.retry_after_s == 3 * 3600  # hf-jobs: billed, so a while
    clock.now += keeper.retry_after_s + 1
    keeper.run_pass()
    assert store.get_entry(entry.submission_id).job.job_id == "job0002"


def test_the_job_of_a_withdrawn_entry_is_cancelled(world):
    store, api, keeper = world["store"], world["api"], world["keeper"]
    entry = waiting(store)
    keeper.run_pass()
    api.set_stage("job0001", "RUNNING")
    withdraw(store, store.get_entry(entry.submission_id), "asked by its submitter")
    keeper.run_pass()
    assert api.called("cancel_job") == [{"job_id": "job0001", "namespace": "space-owner"}]
    gone = store.get_entry(entry.submission_id)
    assert gone.status == "withdrawn" and gone.job.stage == "CANCELED"
    keeper.run_pass()
    assert len(api.called("cancel_job")) == 1 and len(api.called("run_uv_job")) == 1


def test_the_daily_budget_bounds_the_jobs_launched(world):
    store, api, clock = world["store"], world["api"], world["clock"]
    keeper = JobKeeper(store, world["backend"], policy=JobPolicy(per_day=2), clock=clock)
    entries = [waiting(store, f"M{i}", created_at=float(i)) for i in range(3)]
    keeper.run_pass()
    assert len(api.called("run_uv_job")) == 2
    third = store.get_entry(entries[2].submission_id)
    assert third.job.job_id == "" and "daily budget of 2 verification jobs (next after" in third.job.message
    clock.now += 24 * 3600 + 1
    keeper.run_pass()
    assert store.get_entry(entries[2].submission_id).job.job_id == "job0003"


def test_with_no_backend_each_waiting_entry_says_why(world):
    store = world["store"]
    entry = waiting(store)
    keeper = JobKeeper(store, NoBackend("a maintainer runs it"), clock=lambda: 2.0)
    keeper.run_pass()
    keeper.run_pass()
    job = store.get_entry(entry.submission_id).job
    assert (job.backend, job.job_id, job.message) == ("none", "", "a maintainer runs it")


def test_timeouts_follow_the_plans_image_count():
    policy = JobPolicy()
    assert timeout_for(652, policy) == 1800  # start-up + 652 × 0.5 s = 1,526 s, the floor is 30 minutes
    assert timeout_for(19_200, policy) == 1200 + 9600
    assert timeout_for(10**6, policy) == 6 * 3600


@pytest.mark.parametrize(
    "setting, zero_gpu, token, locator, chosen, reason",
    [
        (None, True, "t", LOCATOR, "hf-jobs", ""),
        (
            None,
            True,
            None,
            LOCATOR,
            "none",
            "runs on ZeroGPU, whose GPU a background job cannot use, and has no HF_TOKEN",
        ),
        (None, False, None, "sqlite:/x", "local", ""),
        ("hf-jobs", False, "t", "sqlite:/x", "none", "reaches the store through the Hub, and this one is sqlite:/x"),
        ("hf-jobs", False, None, LOCATOR, "none", "needs the HF_TOKEN secret"),
        ("none", False, "t", LOCATOR, "none", "NEGT2I_VERIFY_BACKEND=none"),
        ("local", False, None, "", "none", "cannot be opened by another process"),
        ("LOCAL", True, "t", "sqlite:/x", "local", ""),
    ],
)
def test_the_backend_is_chosen_from_the_setting_and_the_machine(setting, zero_gpu, token, locator, chosen, reason):
    backend = choose_backend(
        setting,
        locator=locator,
        on_zero_gpu=zero_gpu,
        token=token,
        make_hf=lambda: NoBackend("", name="hf-jobs"),
        make_local=lambda: NoBackend("", name="local"),
    )
    assert backend.name == chosen and reason in backend.reason
    if chosen == "none":
        assert "negt2ibench leaderboard verify-job --entry ID" in backend.reason


def test_an_unknown_backend_setting_is_a_usage_error():
    with pytest.raises(UsageError, match="choose one of hf-jobs, local, none"):
        choose_backend("gpu", locator=LOCATOR, on_zero_gpu=False, token=None)


def test_a_job_gets_the_token_and_the_sample_secret(monkeypatch):
    monkeypatch.setenv("NEGT2I_VERIFY_SECRET", "s")
    assert job_secrets("t") == {"HF_TOKEN": "t", "NEGT2I_VERIFY_SECRET": "s"}
    monkeypatch.delenv("NEGT2I_VERIFY_SECRET")
    assert job_secrets(None) == {}


def test_the_daily_budget_is_a_setting(monkeypatch):
    monkeypatch.setenv("NEGT2I_VERIFY_JOBS_PER_DAY", "5")
    assert JobPolicy.from_env().per_day == 5
    monkeypatch.setenv("NEGT2I_VERIFY_JOBS_PER_DAY", "0")
    with pytest.raises(UsageError, match="NEGT2I_VERIFY_JOBS_PER_DAY must be a positive integer"):
        JobPolicy.from_env()


def test_a_launch_that_is_refused_counts_as_a_failed_job(world):
    from negt2ibench.core.errors import UserError

    store, api = world["store"], world["api"]

    def no_package():
        raise UserError("could not build a wheel of /space for the job (no pyproject.toml); set NEGT2I_JOB_WHEEL")

    backend = HfJobsBackend(HfJobs(api, package=no_package), LOCATOR, secrets={"HF_TOKEN": TOKEN})
    keeper = JobKeeper(store, backend, clock=world["clock"])
    entry = waiting(store)
    for attempt in (1, 2, 3):
        keeper.run_pass()
        assert store.get_entry(entry.submission_id).job.failures == attempt
    stuck = store.get_entry(entry.submission_id)
    assert stuck.status == "pending" and stuck.job.given_up and api.called("run_uv_job") == []
    assert "last error: could not launch: could not build a wheel of /space" in stuck.reason
    keeper.run_pass()
    assert store.get_entry(entry.submission_id).job.failures == 3


def test_an_entry_not_verified_within_the_hold_releases_its_name(world):
    store, api, keeper, clock = world["store"], world["api"], world["keeper"], world["clock"]
    entry = waiting(store, "Held Name", created_at=clock.now)
    keeper.run_pass()  # a job for it
    assert store.get_entry(entry.submission_id).job.job_id
    assert "looks like the model" in name_conflict(store.list_entries(), "Held Name", "held_name", "bob", clock.now)
    clock.now += NAME_HOLD_DAYS * 24 * 3600 + 1
    assert name_conflict(store.list_entries(), "Held Name", "held_name", "bob", clock.now) == ""  # released at once
    keeper.run_pass()
    expired = store.get_entry(entry.submission_id)
    assert expired.status == "withdrawn" and f"not verified within {NAME_HOLD_DAYS} days" in expired.reason
    keeper.run_pass()  # and its job is cancelled
    assert store.get_entry(entry.submission_id).job.stage == "CANCELED" and api.called("cancel_job")
