"""`score|generate|judge --hf-job FLAVOR` and `negt2ibench jobs status|logs|cancel|exec`, through a double of
`HfApi` that records every call (offline): the job's script, arguments, flavour, secrets' names,
timeout, labels and mounts; following it; fetching its output; what runs inside it."""

from __future__ import annotations

import argparse

import pytest

from negt2ibench import jobs_cli
from negt2ibench.cli import build_parser, main
from tests.helpers.jobs_helpers import JobsHfApi, wheel_file

TOKEN = "hf_users_own_token"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The double as every `HfApi` the commands make; a token; this version's wheel to ship."""
    import negt2ibench

    api = JobsHfApi(user="alice", repos=tmp_path / "hub")
    monkeypatch.setattr(jobs_cli, "hf_api", lambda token=None: api)
    monkeypatch.setattr(jobs_cli, "POLL_SECONDS", 0.0)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    wheel = wheel_file(tmp_path / "dist", negt2ibench.__version__, ['torch; extra == "models"'])
    monkeypatch.setenv("NEGT2I_JOB_WHEEL", str(wheel))
    return api


def subcommand(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    args = build_parser().parse_args(argv)
    return args.hf_job_parser, args


@pytest.mark.parametrize(
    "argv",
    [
        ["score", "--images", "org/imgs", "--split", "s", "--out", "r.jsonl", "--batch-size", "4", "--no-progress"],
        ["generate", "--model", "sd_1_5", "--out", "data", "--categories", "color", "depth", "--download"],
        ["judge", "--model", "qwen3_vl_8b", "--mode", "neg", "--images", "d", "--split", "s", "--out", "j.jsonl"],
    ],
)
def test_a_command_line_is_written_back_as_it_parses(argv):
    parser, args = subcommand([*argv, "--hf-job", "l4x1", "--push-to", "me/out"])
    again = build_parser().parse_args([argv[0], *jobs_cli.unparse(parser, args, {})])
    mine = {k: v for k, v in vars(args).items() if k not in jobs_cli.HF_JOB_DESTS and not k.startswith("hf_job")}
    theirs = {k: v for k, v in vars(again).items() if k not in jobs_cli.HF_JOB_DESTS and not k.startswith("hf_job")}
    assert mine == theirs


def test_score_on_the_hub_mounts_the_dataset_and_pushes_the_results(hub, capsys):
    argv = ["score", "--images", "org/imgs", "--split", "sd_1_5", "--out", "results/r.jsonl", "--batch-size", "4"]
    argv += ["--weights-dir", "/here/weights", "--hf-job", "l4x1", "--push-to", "alice/results", "--detach"]
    assert main(argv) == 0
    [run] = hub.called("run_uv_job")
    assert run["script"] == "negt2ibench" and run["flavor"] == "l4x1" and run["timeout"] == 3 * 3600
    assert run["script_args"] == [
        "jobs", "exec", "--push-to", "alice/results", "--output", "out/r.jsonl",
        "--prepare", "download-models --preset current", "--",
        "score", "--images", "/negt2i/images", "--split", "sd_1_5", "--out", "out/r.jsonl", "--batch-size", "4",
    ]  # fmt: skip
    said = capsys.readouterr().out
    assert run["secrets"] == ["HF_TOKEN"] and TOKEN not in repr(hub.calls) + said
    assert "job job0001 launched on l4x1 (https://huggingface.co/jobs/alice/job0001)" in said
    assert "negt2ibench jobs logs job0001 --follow" in said
    assert run["labels"]["negt2ibench-command"] == "score" and run["labels"]["negt2ibench-output"] == "alice-results"
    wheel, images = run["volumes"]
    assert (wheel.type, wheel.mount_path) == ("bucket", "/negt2i-wheel")
    assert (images.type, images.source, images.mount_path, images.read_only) == (
        "dataset", "org/imgs", "/negt2i/images", True,
    )  # fmt: skip
    assert run["dependencies"][0].startswith("negt2ibench[models] @ file:///negt2i-wheel/negt2ibench-")


def test_a_local_images_folder_is_uploaded_first_and_the_job_followed_to_its_output(hub, tmp_path, capsys):
    images = tmp_path / "pngs"
    images.mkdir()
    (images / "color_pos1_neg0_000_0.png").write_bytes(b"png")
    out = tmp_path / "results" / "r.jsonl"
    (tmp_path / "hub" / "alice" / "results").mkdir(parents=True)
    (tmp_path / "hub" / "alice" / "results" / "r.jsonl").write_text('{"pushed": "by the job"}\n')

    def launch_and_script(*args, **kwargs):
        info = JobsHfApi.run_uv_job(hub, *args, **kwargs)
        hub.script(info.id, [("RUNNING", ["installing"]), ("RUNNING", ["scoring 1/1"]), ("COMPLETED", ["pushed"])])
        return info

    hub.run_uv_job = launch_and_script
    argv = ["score", "--images", str(images), "--out", str(out), "--hf-job", "a10g-large", "--push-to", "alice/results"]
    assert main(argv) == 0
    synced = hub.called("sync_job_volume")
    assert [s["mount_path"] for s in synced] == ["/negt2i/images", "/negt2i-wheel"]  # the input first
    assert synced[0]["files"] == ["color_pos1_neg0_000_0.png"] and synced[0]["read_only"]
    said = capsys.readouterr().out
    for line in ("job job0001: RUNNING", "  | installing", "  | scoring 1/1", "job job0001: COMPLETED", "  | pushed"):
        assert line in said
    assert out.read_text() == '{"pushed": "by the job"}\n' and f"into {out}" in said


def test_a_failed_job_says_its_last_error_line(hub, tmp_path, capsys):
    def launch_and_fail(*args, **kwargs):
        info = JobsHfApi.run_uv_job(hub, *args, **kwargs)
        hub.script(info.id, [("ERROR", ["loading", "error: no images/x-*.parquet in /negt2i/images", ""])])
        return info

    hub.run_uv_job = launch_and_fail
    argv = ["judge", "--model", "qwen3_vl_8b", "--images", "org/imgs", "--split", "x", "--out", "j.jsonl"]
    assert main([*argv, "--hf-job", "l40sx1", "--push-to", "alice/judged"]) == 1
    err = capsys.readouterr().err
    assert "error: job job0001 ended ERROR: error: no images/x-*.parquet in /negt2i/images" in err
    [run] = hub.called("run_uv_job")
    assert run["script_args"][-3:] == ["--out", "out/j.jsonl", "--download"] and run["timeout"] == 6 * 3600
    assert run["dependencies"][0].startswith("negt2ibench[judges] @ ")


def test_generate_pushes_its_dataset_folder(hub):
    argv = ["generate", "--model", "sd_1_5", "--out", "data", "--limit", "8"]
    assert main([*argv, "--hf-job", "h200", "--push-to", "alice/images", "--detach", "--hf-job-timeout", "90m"]) == 0
    [run] = hub.called("run_uv_job")
    assert run["script_args"][:8] == [
        "jobs",
        "exec",
        "--push-to",
        "alice/images",
        "--output",
        "out/data",
        "--folder",
        "--",
    ]
    assert "--download" in run["script_args"] and run["timeout"] == 5400


def test_job_options_need_a_flavour_and_a_repo(hub, capsys):
    assert main(["score", "--images", "x", "--out", "r.jsonl", "--push-to", "a/b"]) == 2
    assert "--push-to and --detach go with --hf-job FLAVOR" in capsys.readouterr().err
    assert main(["score", "--images", "org/imgs", "--out", "r.jsonl", "--hf-job", "l4x1"]) == 2
    assert "--hf-job needs --push-to ORG/NAME" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["score", "--images", "x", "--out", "r.jsonl", "--hf-job", "gpu-xxl"])
    assert "unknown Jobs flavour 'gpu-xxl'" in capsys.readouterr().err
    assert hub.called("run_uv_job") == []


def test_jobs_status_logs_and_cancel(hub, capsys):
    hub.run_uv_job("negt2ibench", script_args=["selftest"], namespace="alice")
    hub.set_stage("job0001", "RUNNING", logs=["a", "b", "c"])
    assert main(["jobs", "status", "job0001"]) == 0
    assert capsys.readouterr().out.strip() == "job0001: RUNNING https://huggingface.co/jobs/alice/job0001"
    assert main(["jobs", "logs", "job0001", "--tail", "2"]) == 0
    assert capsys.readouterr().out.splitlines() == ["b", "c"]
    assert main(["jobs", "cancel", "job0001"]) == 0
    assert hub.jobs["job0001"]["stage"] == "CANCELED" and "cancel requested" in capsys.readouterr().out


@pytest.mark.slow
def test_inside_the_job_output_is_fetched_the_command_run_and_the_output_pushed(hub, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    repo = tmp_path / "hub" / "alice" / "results"
    repo.mkdir(parents=True)
    (repo / "r.jsonl").write_text("kept\n")  # pushed by an earlier run of the job
    assert main(["jobs", "exec", "--push-to", "alice/results", "--output", "out/r.jsonl", "--", "judge", "--list"]) == 0
    said = capsys.readouterr().out
    assert "resuming from alice/results: r.jsonl fetched" in said and "qwen3_vl_8b" in said
    assert (tmp_path / "out" / "r.jsonl").read_text() == "kept\n"
    assert hub.called("upload_file") == [
        {"path_in_repo": "r.jsonl", "repo_id": "alice/results", "repo_type": "dataset"}
    ]
    argv = ["jobs", "exec", "--push-to", "alice/examples", "--output", "out/ex", "--folder", "--", "examples"]
    assert main([*argv, "--out", "out/ex"]) == 0  # nothing pushed yet: starts afresh, then the folder is pushed
    assert "starting afresh" in capsys.readouterr().out
    assert (tmp_path / "hub" / "alice" / "examples" / "README.md").is_file()
