"""The leaderboard store's contract, run against both backends (SQLite and the Hub repo clone)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest

from evaluator.report import LEADERBOARD_COLUMNS
from evaluator.report.numbers import LeaderboardRow
from evaluator.results import ResultRecord
from leaderboard.store.entries import EntryRow, ModelDetail
from leaderboard.store.sqlite_store import (
    Entry,
    HubStore,
    LeaderboardStore,
    OwnershipError,
    RunClaim,
    SQLiteStore,
    StaleEntryError,
    StoreError,
    model_key_of,
    open_store,
    open_store_at,
)
from leaderboard.store.states import transition
from negt2ibench.core.errors import UserError
from tests.helpers.hub_helpers import HubDouble


class RecordingUpload:
    """Stands in for the Hub: records each commit (files read at commit time), optionally fails."""

    def __init__(self):
        self.commits: list[dict] = []
        self.fail_next = False

    def __call__(self, local_dir: Path, added: list[str], deleted: list[str], message: str) -> None:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("hub unreachable")
        self.commits.append(
            {
                "added": sorted(added),
                "deleted": deleted,
                "message": message,
                "bytes": {p: (local_dir / p).read_bytes() for p in added},
            }
        )


@pytest.fixture(params=["sqlite", "hub"])
def store(request, tmp_path) -> LeaderboardStore:
    if request.param == "sqlite":
        return SQLiteStore(tmp_path / "home" / "leaderboard.sqlite")
    return HubStore(tmp_path / "clone", RecordingUpload())


def reopen(store: LeaderboardStore) -> LeaderboardStore:
    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    return HubStore(store.local_dir, RecordingUpload())


def records(n: int, model_key: str = "m") -> list[ResultRecord]:
    return [
        ResultRecord(
            prompt_id=f"color_pos1_neg0_{i:03d}",
            model_key=model_key,
            sample_index=0,
            passed=i % 2 == 0,
            evaluator_version="1.0.0",
            config_hash="abc",
        )
        for i in range(n)
    ]


def entry(name: str = "Model A", submitter: str = "alice", created_at: float = 1000.0, **fields) -> Entry:
    return Entry(model_name=name, model_key=model_key_of(name), submitter=submitter, created_at=created_at, **fields)


def full_row(overall: float) -> EntryRow:
    """A leaderboard row with every column (`evaluator.report.LEADERBOARD_COLUMNS`), each at OVERALL."""
    values = {column: overall for column in LEADERBOARD_COLUMNS}
    return cast(EntryRow, values | {"model": "Model A", "images": 19_200})


def test_an_entrys_row_has_the_reports_columns_and_keeps_a_missing_setting_as_none(store):
    assert tuple(EntryRow.__annotations__) == tuple(LeaderboardRow.__annotations__) == LEADERBOARD_COLUMNS
    row = full_row(12.5) | {"2:2": float("nan")}  # a setting none of the file's images has, as the report gives it
    first = store.add_submission(entry(), records(5))
    stored = transition(store, first, "validated", "validated", row=row)
    assert store.get_entry(stored.submission_id).row == full_row(12.5) | {"2:2": None}


def test_add_get_list_update_roundtrip(store):
    assert isinstance(store, LeaderboardStore)
    first = store.add_submission(entry(), records(5))
    assert store.get_entry(first.submission_id) == first
    assert [r.prompt_id for r in store.get_results(first.submission_id)] == [r.prompt_id for r in records(5)]
    detail: ModelDetail = {"statement_accuracy": {}, "failure_causes": {}, "overall_interval": [11.5, 13.5]}
    validated = transition(store, first, "validated", "validated", row=full_row(12.5), detail=detail)
    updated = transition(store, validated, "verified", "spot check: 8 of 8 agree")
    assert (updated.status, updated.reason, updated.row) == ("verified", "spot check: 8 of 8 agree", full_row(12.5))
    assert updated.detail == detail
    assert store.list_entries("verified") == [updated]
    assert store.list_entries("pending") == []
    assert reopen(store).get_entry(first.submission_id) == updated  # persisted


def test_count_recent_counts_only_that_submitter_since(store):
    store.add_submission(entry("A", "alice", 100.0))
    store.add_submission(entry("B", "alice", 200.0))
    store.add_submission(entry("C", "bob", 300.0))
    assert store.count_recent("alice", 150.0) == 1
    assert store.count_recent("alice", 0.0) == 2
    assert store.count_recent("carol", 0.0) == 0


def test_another_submitters_model_cannot_be_overwritten(store):
    mine = store.add_submission(entry("Model A", "alice"), records(2))
    with pytest.raises(OwnershipError, match="another user"):
        store.add_submission(entry("model-a", "mallory", 2000.0), records(1))
    assert store.list_entries() == [mine]
    assert len(store.get_results(mine.submission_id)) == 2
    # The owner may resubmit; the older entry stays as history.
    again = store.add_submission(entry("Model A", "alice", 3000.0), records(3))
    assert [e.submission_id for e in store.list_entries()] == [mine.submission_id, again.submission_id]
    # A rejected entry owns nothing: another user's rejected attempt is stored and blocks no one.
    store.add_submission(entry("Other", "bob", 4000.0, status="rejected", reason="bad file"))
    store.add_submission(entry("Other", "carol", 5000.0))


def test_crash_mid_submission_leaves_no_half_entry(store):
    kept = store.add_submission(entry("Kept", "alice"), records(3))

    def exploding_results():
        yield from records(2, "crash")
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError, match="worker died"):
        store.add_submission(entry("Crash", "bob", 2000.0), exploding_results())
    assert store.list_entries() == [kept]
    assert len(reopen(store).get_results(kept.submission_id)) == 3
    assert reopen(store).count_recent("bob", 0.0) == 0


def test_unknown_submission_is_a_clear_error(store):
    with pytest.raises(StoreError, match="no submission"):
        store.get_entry("0" * 32)
    with pytest.raises(StoreError, match="no submission"):
        store.update_entry("not-an-id", reason="verified")


def test_hub_backend_commits_entry_and_results_together(tmp_path):
    upload = RecordingUpload()
    hub = HubStore(tmp_path / "clone", upload)
    added = hub.add_submission(entry(), records(4))
    commit = upload.commits[-1]
    assert commit["added"] == sorted(
        [f"results/{added.submission_id}.jsonl.gz", f"submissions/{added.submission_id}.json"]
    )
    assert json.loads(commit["bytes"][f"submissions/{added.submission_id}.json"])["model_name"] == "Model A"
    transition(hub, added, "rejected", "spot check disagrees")
    assert upload.commits[-1]["added"] == [f"submissions/{added.submission_id}.json"]


def test_hub_backend_failed_upload_restores_local_state(tmp_path):
    upload = RecordingUpload()
    hub = HubStore(tmp_path / "clone", upload)
    kept = hub.add_submission(entry("Kept"), records(2))
    upload.fail_next = True
    with pytest.raises(ConnectionError):
        hub.add_submission(entry("Lost", "bob", 2000.0), records(2))
    assert hub.list_entries() == [kept]
    assert sorted(p.name for p in (tmp_path / "clone" / "results").iterdir()) == [f"{kept.submission_id}.jsonl.gz"]
    upload.fail_next = True
    with pytest.raises(ConnectionError):
        transition(hub, kept, "validated", "ok")
    assert hub.get_entry(kept.submission_id).status == "received"  # the local clone matches the repo again
    assert not [p for p in (tmp_path / "clone").rglob("*.tmp")]


def test_open_store_defaults_to_sqlite_under_home(tmp_path, monkeypatch):
    monkeypatch.delenv("NEGT2I_RESULTS_REPO", raising=False)
    monkeypatch.setenv("NEGT2I_HOME", str(tmp_path / "home"))
    store = open_store()
    assert isinstance(store, SQLiteStore) and store.path == tmp_path / "home" / "leaderboard.sqlite"


def test_model_key_of():
    assert model_key_of(" SD 1.5 + NegationCLIP ") == "sd_1_5_negationclip"
    with pytest.raises(ValueError, match="no letters"):
        model_key_of("+++")


def test_hub_uploader_makes_one_dataset_commit_with_the_env_token(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    from leaderboard.store.sqlite_store import hub_uploader

    seen = {}

    class FakeApi:
        def __init__(self, token=None):
            seen["token"] = token

        def create_commit(self, **kwargs):
            seen.update(kwargs)

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    hub = HubStore(tmp_path / "clone", hub_uploader("org/results"))
    added = hub.add_submission(entry(), records(2))
    assert seen["token"] == "hf_secret_value"
    assert (seen["repo_id"], seen["repo_type"]) == ("org/results", "dataset")
    paths = sorted(op.path_in_repo for op in seen["operations"])
    assert paths == [f"results/{added.submission_id}.jsonl.gz", f"submissions/{added.submission_id}.json"]
    captured = capsys.readouterr()
    assert "hf_secret_value" not in captured.out + captured.err + repr(hub)


def test_open_store_runs_from_repo_against_the_hub(tmp_path, monkeypatch, capsys):
    """`open_store` with NEGT2I_RESULTS_REPO: `HubStore.from_repo` for real, through a double of
    `HfApi` (the token from HF_TOKEN; a private dataset repo; the snapshot; each write one commit),
    and a second Space started on another machine sees what the first one stored."""
    import huggingface_hub

    remote = tmp_path / "remote"
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: HubDouble(remote, token))
    monkeypatch.setenv("NEGT2I_RESULTS_REPO", "org/results")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    HubDouble.instances.clear()
    first = open_store(tmp_path / "space_a")
    assert isinstance(first, HubStore) and first.local_dir == tmp_path / "space_a" / "results_repo"
    [api] = HubDouble.instances
    assert api.token == "hf_secret_value"
    assert api.calls[:2] == [
        ("create_repo", "org/results", "dataset", True, True),
        ("snapshot_download", "org/results", "dataset", None),  # the api's own token
    ]
    added = first.add_submission(entry(), records(3))
    transition(first, added, "validated", "validated")
    # each write: the head read, the entries brought to it, one commit on it
    assert [call[0] for call in api.calls[2:]] == ["repo_info", "snapshot_download", "create_commit"] * 2
    assert sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*") if p.is_file()) == [
        f"results/{added.submission_id}.jsonl.gz",
        f"submissions/{added.submission_id}.json",
    ]
    second = open_store(tmp_path / "space_b")  # another machine: the repo exists, its snapshot is read
    assert [e.status for e in second.list_entries()] == ["validated"]
    assert second.get_results(added.submission_id) == records(3)
    captured = capsys.readouterr()
    assert "hf_secret_value" not in captured.out + captured.err + repr(first) + repr(second)


def test_a_conditional_change_writes_nothing_when_its_check_fails(store):
    first = store.add_submission(entry(), records(2))
    with pytest.raises(StaleEntryError, match="not changed: taken"):
        store.update_entry(first.submission_id, lambda current: "taken", status="verified", reason="no")
    assert reopen(store).get_entry(first.submission_id) == first
    claimed = store.update_entry(first.submission_id, lambda current: "", run=RunClaim(run_id="a" * 32))
    assert claimed.run is not None and claimed.run.run_id == "a" * 32 and claimed.status == "received"
    cleared = store.update_entry(first.submission_id, None, run=None, attempts=3)
    assert (cleared.run, cleared.attempts) == (None, 3)
    with pytest.raises(StoreError, match="no field"):
        store.update_entry(first.submission_id, None, colour="red")


def test_modify_decides_on_every_stored_entry(store):
    first = store.add_submission(entry("A", "alice", 100.0), records(1))
    store.add_submission(entry("B", "alice", 200.0, status="rejected"), records(1))

    def decide(current, entries):
        rejected = [e.model_name for e in entries if e.status == "rejected"]
        return {"status": "held", "reason": f"held: {', '.join(rejected)} was rejected"}

    assert store.modify(first.submission_id, decide).reason == "held: B was rejected"


def _add_attempts(path: str, submission_id: str, times: int) -> None:
    store = SQLiteStore(path)

    def more(current, entries):
        return {"attempts": current.attempts + 1}

    for _ in range(times):
        store.modify(submission_id, more)


@pytest.mark.slow
def test_two_processes_changing_one_entry_lose_no_change(tmp_path):
    import multiprocessing
    import sqlite3

    path = tmp_path / "leaderboard.sqlite"
    added = SQLiteStore(path).add_submission(entry(), records(2))
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_attempts, args=(str(path), added.submission_id, 40)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert SQLiteStore(path).get_entry(added.submission_id).attempts == 80  # every read-change-write kept
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_store_names_where_another_process_finds_it(tmp_path):
    sqlite = SQLiteStore(tmp_path / "lb.sqlite")
    assert sqlite.locator() == f"sqlite:{(tmp_path / 'lb.sqlite').resolve()}"
    assert open_store_at(sqlite.locator()).locator() == sqlite.locator()
    assert HubStore(tmp_path / "clone", RecordingUpload()).locator() == ""  # no repo known: not launchable
    for bad, message in [
        ("sqlite:" + str(tmp_path / "none.sqlite"), "no leaderboard database"),
        ("hub:not a repo", "ORG/NAME"),
        ("ftp:x", "expected sqlite:PATH or hub:ORG/NAME"),
    ]:
        with pytest.raises(UserError, match=message):
            open_store_at(bad)


def test_two_machines_on_one_results_repo_never_overwrite_each_other(tmp_path):
    """A job on another machine changes the entry after this Space cloned the repo, and another
    commit lands between this Space's read of the head and its commit: its change is decided
    again on the new head (the Hub's 412), and both changes are in the repo."""
    remote = tmp_path / "remote"
    space_api, job_api = HubDouble(remote), HubDouble(remote)
    space = HubStore.from_repo("org/results", tmp_path / "space", api=space_api)
    added = space.add_submission(entry(), records(2))
    job = HubStore.from_repo("org/results", tmp_path / "job", api=job_api)
    assert job.locator() == "hub:org/results"
    job.update_entry(added.submission_id, None, status="validated", reason="by the job")

    def another_commit():
        job.update_entry(added.submission_id, None, attempts=7)

    space_api.before_commit = another_commit
    changed = space.update_entry(added.submission_id, None, checked_at=123.0)
    expected = ("validated", "by the job", 7, 123.0)
    assert (changed.status, changed.reason, changed.attempts, changed.checked_at) == expected
    stored = Entry.model_validate_json((remote / f"submissions/{added.submission_id}.json").read_text())
    assert stored == changed
    refused = [call for call in space_api.calls if call[0] == "create_commit"]
    assert len(refused) == 3  # the submission, the refused commit, the one decided again
