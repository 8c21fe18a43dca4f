"""The Space's verification jobs end to end, through gradio_client against a localhost launch:

- the `local` backend: a submission's job is a subprocess of the real `verify-job` (the rectangle
  perception double as its scorer); killed with SIGKILL mid-run, it is relaunched, and one outcome
  lands with nothing lost (the results intact, SQLite's integrity check clean);
- the `hf-jobs` backend over a double of `HfApi`: the Submit tab's list shows each state of the job
  (scheduling, running, failed with its last error line and relaunched, completed) and its logs link.
"""

from __future__ import annotations

import os
import signal
import sqlite3

import pandas as pd
import pytest
from gradio_client import Client, handle_file

from dataset_builder.loading import load_prompts
from leaderboard.job_backends import HfJobsBackend
from leaderboard.store import SQLiteStore
from negt2ibench.core.hf_jobs import HfJobs, JobPackage
from space.app import build_app
from tests.helpers.jobs_helpers import JobsHfApi, double_jobs
from tests.helpers.net import launch_local
from tests.helpers.space_helpers import (
    RectanglePerception,
    pinned_commit,
    wait_for,
    write_images_dataset,
    write_results,
)

SPLIT = "toy_model"
IMAGES_REPO = "org/toy-images"


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def data(prompts, tmp_path_factory):
    root = tmp_path_factory.mktemp("jobs_app")
    write_images_dataset(root / "hub" / IMAGES_REPO, prompts, SPLIT)
    return {"good": write_results(root / "good.jsonl", prompts, SPLIT, passed=False), "hub": root / "hub"}


def submissions(client: Client) -> pd.DataFrame:
    value = client.predict(api_name="/submissions")
    return pd.DataFrame(value["data"], columns=value["headers"])


def submit(client: Client, path, name: str) -> str:
    status, _ = client.predict(handle_file(str(path)), name, "", IMAGES_REPO, "main", api_name="/submit")
    return status


@pytest.mark.slow
def test_a_job_killed_mid_run_is_relaunched_and_one_outcome_lands(prompts, data, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    gate = tmp_path / "gate"  # the jobs' scorer waits for it: the first job is killed while it waits
    jobs = double_jobs(store.locator(), tmp_path, images_from=data["hub"], gate=gate, secret=b"kill test")
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        verify_backend=jobs,
        recheck_every=0.2,
        resolve_revision=pinned_commit,
    )
    client = Client(launch_local(demo), verbose=False)
    try:
        assert "status **validated**" in submit(client, data["good"], "Toy Model")
        [entry] = store.list_entries()
        ident = entry.submission_id

        def held_by_running_job() -> bool:
            now = store.get_entry(ident)
            return (
                now.job is not None
                and now.job.stage == "RUNNING"
                and now.run is not None
                and (now.run.where == f"job {now.job.job_id}")
            )

        wait_for(held_by_running_job, "the first job to claim the entry", 120)
        first = store.get_entry(ident)
        assert first.status == "pending" and first.reason.startswith("spot check running since")
        os.kill(jobs.pid(first.job.job_id), signal.SIGKILL)
        wait_for(lambda: store.get_entry(ident).job.job_id != first.job.job_id, "the relaunch", 60)
        relaunched = store.get_entry(ident).job
        assert (
            relaunched.failures == 1 and relaunched.last_error == "killed by signal 9" and len(relaunched.launches) == 2
        )
        gate.touch()
        wait_for(lambda: store.get_entry(ident).status == "verified", "the relaunched job's outcome", 240)
        wait_for(lambda: store.get_entry(ident).job.stage == "COMPLETED", "the job's end", 60)
        done = store.get_entry(ident)
        assert done.run is None and done.attempts == 2  # the killed job's claim, then the relaunched job's
        assert done.reason == "spot check: 652 of 652 re-scored images agree (0 disagree; at most 5 may)"
        assert [e.submission_id for e in store.list_entries()] == [ident]  # one entry, one outcome
        assert len(store.get_results(ident)) == len(prompts) * 4  # nothing lost
        with sqlite3.connect(store.path) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        row = submissions(client).iloc[0]
        assert row["status"] == "verified" and row["verification job"].startswith("local COMPLETED · launch 2")
        assert "· logs: " in row["verification job"] and ".log" in row["verification job"]  # the log file's path
    finally:
        client.close()
        demo.close()


@pytest.mark.slow
def test_the_submit_tab_shows_each_state_of_a_hub_job(prompts, data, tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    api = JobsHfApi()
    backend = HfJobsBackend(
        HfJobs(api, package=JobPackage("9.9.9", None)), "hub:org/results", secrets={"HF_TOKEN": "hf_secret_value"}
    )
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        verify_backend=backend,
        recheck_every=0.1,
        resolve_revision=pinned_commit,
    )
    client = Client(launch_local(demo), verbose=False)

    def shown() -> str:
        return submissions(client).iloc[0]["verification job"]

    try:
        submit(client, data["good"], "Toy Model")
        [entry] = store.list_entries()
        wait_for(lambda: "SCHEDULING" in shown(), "the launch shown")
        assert shown() == "hf\\-jobs SCHEDULING · [logs](https://huggingface.co/jobs/space-owner/job0001)"
        api.set_stage("job0001", "RUNNING")
        wait_for(lambda: "RUNNING" in shown(), "the running job shown")
        api.set_stage("job0001", "ERROR", "exit code 1", logs=["loading", "error: images not reachable: 401", ""])
        wait_for(lambda: "job0002" in shown(), "the relaunch shown")
        assert shown() == (
            "hf\\-jobs SCHEDULING · launch 2 · [logs](https://huggingface.co/jobs/space-owner/job0002)"
            " · last error: error\\: images not reachable\\: 401"
        )
        store.update_status(entry.submission_id, "verified", "spot check: 652 of 652 re-scored images agree")  # the job
        api.set_stage("job0002", "COMPLETED")
        wait_for(lambda: "COMPLETED" in shown(), "the completed job shown")
        row = submissions(client).iloc[0]
        assert row["status"] == "verified" and row["verification job"].startswith("hf\\-jobs COMPLETED · launch 2")
        assert "hf_secret_value" not in repr(api.calls) + store.path.read_bytes().decode("latin-1")
    finally:
        client.close()
        demo.close()
