"""`negt2ibench.core.hf_jobs` through a recording double of `HfApi` (offline): what a launch sends,
how states, logs and cancels are read, and which package a job installs."""

from __future__ import annotations

import hashlib
import importlib.metadata

import pytest

from negt2ibench.core.errors import UserError
from negt2ibench.core.hf_jobs import (
    WHEEL_MOUNT,
    HfJobs,
    JobPackage,
    JobRequest,
    find_wheel,
    label,
    last_error_line,
    pinned_dependencies,
)
from tests.helpers.jobs_helpers import JobsHfApi, wheel_file

TOKEN = "hf_the_owners_token_value"


def test_a_launch_sends_the_command_the_pinned_wheel_and_secret_names_only(tmp_path):
    wheel = wheel_file(tmp_path / "dist", "9.9.9", ["numpy", 'torch; extra == "models"', 'gradio; extra == "space"'])
    package = JobPackage("9.9.9", wheel, pinned_dependencies(wheel, ["models"]))
    api = JobsHfApi()
    jobs = HfJobs(api, package=package)
    request = JobRequest(
        ["score", "--images", "/data", "--out", "r.jsonl"],
        "l4x1",
        5400,
        extras=("models",),
        secrets={"HF_TOKEN": TOKEN},
        env={"NEGT2I_HOME": "/tmp/h"},
        labels={"negt2ibench-entry": "ab12", "note": "v1.2 (test)"},
    )
    ref = jobs.launch(request)
    assert (ref.job_id, ref.namespace, ref.url) == (
        "job0001",
        "space-owner",
        "https://huggingface.co/jobs/space-owner/job0001",
    )
    [synced] = api.called("sync_job_volume")
    assert synced["files"] == [wheel.name] and synced["mount_path"] == WHEEL_MOUNT and synced["read_only"]
    assert synced["remote_name"] == f"negt2ibench-wheel-{package.sha256[:16]}"
    [run] = api.called("run_uv_job")
    assert run["script"] == "negt2ibench" and run["script_args"] == request.args
    assert run["flavor"] == "l4x1" and run["timeout"] == 5400 and run["namespace"] == "space-owner"
    numpy, torch = (importlib.metadata.version(name) for name in ("numpy", "torch"))
    assert run["dependencies"] == [
        f"negt2ibench[models] @ file://{WHEEL_MOUNT}/{wheel.name}",
        f"numpy=={numpy}",  # pinned to what is installed here; gradio (another extra) is left out
        f"torch=={torch}",
    ]
    assert run["secrets"] == ["HF_TOKEN"] and TOKEN not in repr(api.calls)
    assert api.sent_secrets == [{"HF_TOKEN": hashlib.sha256(TOKEN.encode()).hexdigest()}]
    assert run["labels"] == {"negt2ibench-entry": "ab12", "note": "v1-2-test-", "negt2ibench": "9-9-9"}
    assert run["env"] == {"NEGT2I_HOME": "/tmp/h", "NEGT2I_WHEEL_SHA256": package.sha256}
    [volume] = run["volumes"]
    assert (volume.type, volume.source, volume.mount_path) == ("bucket", "space-owner/jobs-artifacts", WHEEL_MOUNT)
    assert [call for call, _ in api.calls].count("whoami") == 1  # the namespace is asked once


def test_without_a_wheel_the_job_installs_this_version_from_pypi():
    api = JobsHfApi()
    HfJobs(api, namespace="org", package=JobPackage("1.2.3", None, ("numpy==2.0.0",))).launch(
        JobRequest(["judge", "--list"], "cpu-basic", 60, extras=())
    )
    [run] = api.called("run_uv_job")
    assert run["dependencies"] == ["negt2ibench==1.2.3", "numpy==2.0.0"] and run["volumes"] == []
    assert api.called("whoami") == [] and api.called("sync_job_volume") == []


def test_states_logs_and_cancel_including_a_job_the_hub_forgot():
    api = JobsHfApi()
    jobs = HfJobs(api, namespace="me", package=JobPackage("1.0.0", None))
    ref = jobs.launch(JobRequest(["selftest"], "l4x1", 60))
    assert jobs.state(ref.job_id).stage == "SCHEDULING" and not jobs.state(ref.job_id).finished
    api.set_stage(ref.job_id, "ERROR", "exit code 1", logs=["loading", "error: model weights missing", "bye"])
    state = jobs.state(ref.job_id)
    assert (state.stage, state.message, state.finished) == ("ERROR", "exit code 1", True)
    assert jobs.tail(ref.job_id, 2) == ["error: model weights missing", "bye"]
    assert api.called("fetch_job_logs")[-1] == {"job_id": ref.job_id, "follow": False, "tail": 2}
    jobs.cancel(ref.job_id)
    assert api.jobs[ref.job_id]["stage"] == "CANCELED"
    api.forget(ref.job_id)
    assert jobs.state(ref.job_id).stage == "VANISHED" and jobs.tail(ref.job_id) == []
    jobs.cancel(ref.job_id)  # nothing left to cancel: no error


def test_following_a_job_says_each_stage_and_each_new_line_once():
    api = JobsHfApi()
    jobs = HfJobs(api, namespace="me", package=JobPackage("1.0.0", None))
    ref = jobs.launch(JobRequest(["selftest"], "l4x1", 60))
    steps = iter(
        [
            ("RUNNING", None, ["installing"]),
            ("RUNNING", None, ["scoring 10/20"]),
            ("COMPLETED", None, ["scoring 20/20", "done"]),
        ]
    )
    said: list[str] = []

    def tick(seconds: float) -> None:
        stage, message, lines = next(steps)
        api.set_stage(ref.job_id, stage, message, lines)

    final = jobs.follow(ref.job_id, said.append, every=5, lines=3, sleep=tick)
    assert final.stage == "COMPLETED"
    assert said == [
        "job job0001: SCHEDULING",
        "job job0001: RUNNING",
        "  | installing",
        "  | scoring 10/20",
        "job job0001: COMPLETED",
        "  | scoring 20/20",
        "  | done",
    ]


def test_the_last_error_line_of_a_log():
    assert last_error_line(["a", "Traceback (most recent call last):", "  x", "KeyError: 'y'", ""]) == "KeyError: 'y'"
    assert last_error_line(["step 1", "step 2", "  "]) == "step 2"
    assert last_error_line([]) == ""
    assert label("a.b c/d") == "a-b-c-d" and label("") == "-"


def test_the_wheel_shipped_is_exactly_this_version(tmp_path, monkeypatch):
    root = tmp_path / "root"
    wheel_file(root / "dist", "0.0.1", [])
    monkeypatch.delenv("NEGT2I_JOB_WHEEL", raising=False)
    assert find_wheel("0.0.1", root, tmp_path / "cache").name == "negt2ibench-0.0.1-py3-none-any.whl"
    assert find_wheel("0.0.2", root, tmp_path / "cache") is None  # no checkout to build from: PyPI's release
    other = wheel_file(tmp_path / "elsewhere", "0.0.3", [])
    monkeypatch.setenv("NEGT2I_JOB_WHEEL", str(other))
    with pytest.raises(UserError, match="is version 0.0.3, but this is negt2ibench 0.0.1"):
        find_wheel("0.0.1", root, tmp_path / "cache")
    monkeypatch.setenv("NEGT2I_JOB_WHEEL", str(tmp_path / "missing.whl"))
    with pytest.raises(UserError, match="no such file"):
        find_wheel("0.0.1", root, tmp_path / "cache")
