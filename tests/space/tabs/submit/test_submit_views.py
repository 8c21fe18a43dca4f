"""The Submit tab's pure views: what a stored submission's status means, and the list's job cell."""

from __future__ import annotations

from leaderboard.store.sqlite_store import Entry


def test_the_submit_tab_says_each_status_once_and_the_reason_only_when_it_adds_something():
    from space.tabs.submit.submit_views import submission_message

    stored = Entry(
        model_name="Toy *Model*",
        model_key="toy_model",
        submitter="a",
        submission_id="abcdef0123456789",
        status="validated",
        reason="validated; its spot check comes next",
    )
    assert submission_message(stored) == (
        "**Toy \\*Model\\***: status **validated**: stored and its file checked; the spot check runs next, as a "
        "verification job: refresh the list below to follow it (id `abcdef01`)."
    )
    rejected = stored.model_copy(update={"status": "rejected", "reason": "inconsistent results: no cause"})
    assert submission_message(rejected) == (
        "**Toy \\*Model\\***: status **rejected**: stored but not ranked; it counts toward the daily limit "
        "(id `abcdef01`). Why: inconsistent results\\: no cause."
    )


def test_the_job_cell_shows_each_state_its_logs_link_and_last_error_as_text():
    from leaderboard.store.sqlite_store import JobRecord
    from space.tabs.submit.submit_views import SUBMISSION_COLUMNS, SUBMISSION_TYPES, job_cell, submissions_frame

    def cell(**job) -> str:
        return job_cell(Entry(model_name="M", model_key="m", submitter="a", job=JobRecord(**job)))

    assert job_cell(Entry(model_name="M", model_key="m", submitter="a")) == ""
    assert cell(backend="none", message="a maintainer runs it") == "none\\: a maintainer runs it"
    url = "https://huggingface.co/jobs/owner/68a1"
    assert cell(backend="hf-jobs", job_id="68a1", stage="RUNNING", url=url, launches=[1.0]) == (
        f"hf\\-jobs RUNNING · [logs]({url})"
    )
    failed = cell(
        backend="hf-jobs", job_id="68a2", stage="ERROR", url=url + ") [x](https://e.vil", launches=[1.0, 2.0],
        message="exit code 1", last_error="error: <img src=x> [y](https://e.vil)",
    )  # fmt: skip
    assert failed.startswith("hf\\-jobs ERROR · launch 2 · exit code 1 · logs: https\\:")  # not a link: text
    assert "<img" not in failed and "](" not in failed and "last error: error\\: &lt;img" in failed
    local = cell(backend="local", job_id="local-1", stage="COMPLETED", url="/tmp/logs/local-1.log", launches=[1.0])
    assert local == "local COMPLETED · logs: \\/tmp\\/logs\\/local\\-1\\.log"
    assert SUBMISSION_TYPES[SUBMISSION_COLUMNS.index("verification job")] == "markdown"
    assert set(SUBMISSION_TYPES) == {"str", "markdown"} and SUBMISSION_TYPES.count("markdown") == 1
    frame = submissions_frame([Entry(model_name="M", model_key="m", submitter="a")])
    assert list(frame.columns) == SUBMISSION_COLUMNS
