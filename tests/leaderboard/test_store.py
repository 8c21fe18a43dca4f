"""The leaderboard store's contract, run against both backends (SQLite and the Hub repo clone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.results import ResultRecord
from leaderboard.store import (
    Entry,
    HubStore,
    LeaderboardStore,
    OwnershipError,
    SQLiteStore,
    StoreError,
    model_key_of,
    open_store,
)


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


def test_add_get_list_update_roundtrip(store):
    assert isinstance(store, LeaderboardStore)
    first = store.add_submission(entry(), records(5))
    assert store.get_entry(first.submission_id) == first
    assert [r.prompt_id for r in store.get_results(first.submission_id)] == [r.prompt_id for r in records(5)]
    updated = store.update_status(
        first.submission_id,
        "verified",
        "spot check: 8 of 8 agree",
        row={"overall": 12.5},
        detail={"failure_causes": {}},
    )
    assert (updated.status, updated.reason, updated.row) == ("verified", "spot check: 8 of 8 agree", {"overall": 12.5})
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
        store.update_status("not-an-id", "verified")


def test_hub_backend_commits_entry_and_results_together(tmp_path):
    upload = RecordingUpload()
    hub = HubStore(tmp_path / "clone", upload)
    added = hub.add_submission(entry(), records(4))
    commit = upload.commits[-1]
    assert commit["added"] == sorted(
        [f"results/{added.submission_id}.jsonl.gz", f"submissions/{added.submission_id}.json"]
    )
    assert json.loads(commit["bytes"][f"submissions/{added.submission_id}.json"])["model_name"] == "Model A"
    hub.update_status(added.submission_id, "rejected", "spot check disagrees")
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
        hub.update_status(kept.submission_id, "verified", "ok")
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

    from leaderboard.store import hub_uploader

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


class HubDouble:
    """`huggingface_hub.HfApi` at its boundary: one remote dataset repo as a folder (created private,
    downloaded as a snapshot, changed by commits of add and delete operations)."""

    instances: list[HubDouble] = []

    def __init__(self, remote: Path, token: str | None = None):
        self.remote, self.token, self.calls = remote, token, []
        HubDouble.instances.append(self)

    def create_repo(self, repo_id, *, repo_type=None, private=None, exist_ok=False):
        self.calls.append(("create_repo", repo_id, repo_type, private, exist_ok))
        if self.remote.exists() and not exist_ok:
            raise FileExistsError(repo_id)
        self.remote.mkdir(parents=True, exist_ok=True)

    def snapshot_download(self, repo_id, *, repo_type=None, local_dir=None, **kwargs):
        import shutil

        self.calls.append(("snapshot_download", repo_id, repo_type, kwargs.get("token")))
        shutil.copytree(self.remote, local_dir, dirs_exist_ok=True)
        return str(local_dir)

    def create_commit(self, *, repo_id, repo_type, operations, commit_message):
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        self.calls.append(("create_commit", repo_id, repo_type, commit_message))
        for operation in operations:
            target = self.remote / operation.path_in_repo
            if isinstance(operation, CommitOperationAdd):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(Path(operation.path_or_fileobj).read_bytes())
            elif isinstance(operation, CommitOperationDelete):
                target.unlink()


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
    first.update_status(added.submission_id, "validated", "validated")
    assert [call[0] for call in api.calls[2:]] == ["create_commit", "create_commit"]
    assert sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*") if p.is_file()) == [
        f"results/{added.submission_id}.jsonl.gz",
        f"submissions/{added.submission_id}.json",
    ]
    second = open_store(tmp_path / "space_b")  # another machine: the repo exists, its snapshot is read
    assert [e.status for e in second.list_entries()] == ["validated"]
    assert second.get_results(added.submission_id) == records(3)
    captured = capsys.readouterr()
    assert "hf_secret_value" not in captured.out + captured.err + repr(first) + repr(second)
