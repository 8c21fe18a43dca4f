"""Annotations in the leaderboard store (both backends) and `negt2ibench annotations export|import`."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.store.annotation_store import annotator_slug
from leaderboard.store.sqlite_store import HubStore, LeaderboardStore, SQLiteStore
from negt2ibench.cli import main
from tests.helpers.validation_helpers import annotation, corpus, write_jsonl
from validation.annotations import read_annotations


class RecordingUpload:
    """Stands in for the Hub: records each commit, optionally fails the next one."""

    def __init__(self):
        self.commits: list[dict] = []
        self.fail_next = False

    def __call__(self, local_dir: Path, added: list[str], deleted: list[str], message: str) -> None:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("hub unreachable")
        self.commits.append({"added": sorted(added), "message": message})


@pytest.fixture(params=["sqlite", "hub"])
def store(request, tmp_path) -> LeaderboardStore:
    if request.param == "sqlite":
        return SQLiteStore(tmp_path / "home" / "leaderboard.sqlite")
    return HubStore(tmp_path / "clone", RecordingUpload())


def reopen(store) -> LeaderboardStore:
    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    return HubStore(store.local_dir, RecordingUpload())


PROMPT = corpus()["color_pos1_neg1_004"]
OTHER = corpus()["depth_pos0_neg2_010"]
KEY = ("m", PROMPT.prompt_id, 0)


def test_add_change_and_survive_a_restart(store):
    assert isinstance(store, LeaderboardStore)
    assert store.annotations() == [] and store.annotators_of(KEY) == []
    first = annotation(PROMPT, "bob", True)
    store.add_annotation(first)
    store.add_annotation(annotation(PROMPT, "ann", False))
    store.add_annotation(annotation(OTHER, "ann", True))
    assert store.annotators_of(KEY) == ["ann", "bob"]
    changed = annotation(PROMPT, "bob", False, minute=5)  # bob goes back and changes an answer
    store.add_annotation(changed)
    again = reopen(store)
    assert len(again.annotations()) == 3
    assert again.get_annotation(KEY, "bob") == changed
    assert again.get_annotation(KEY, "cat") is None
    assert [r.prompt_id for r in again.annotations("ann")] == [PROMPT.prompt_id, OTHER.prompt_id]


def test_batch_is_one_write_and_last_duplicate_wins(store):
    records = [annotation(PROMPT, "ann", True), annotation(OTHER, "ann", True), annotation(PROMPT, "ann", False)]
    assert store.add_annotations(records) == 2
    assert store.get_annotation(KEY, "ann") == records[2]
    if isinstance(store, HubStore):
        assert len(store._upload.commits) == 1
        assert store._upload.commits[0]["added"][0].startswith("annotations/m/color_pos1_neg1_004_0/ann-")


def test_failed_hub_upload_stores_nothing(tmp_path):
    upload = RecordingUpload()
    store = HubStore(tmp_path / "clone", upload)
    store.add_annotation(annotation(PROMPT, "ann", True))
    upload.fail_next = True
    with pytest.raises(ConnectionError):
        store.add_annotation(annotation(PROMPT, "ann", False))
    assert store.get_annotation(KEY, "ann") == annotation(PROMPT, "ann", True)
    upload.fail_next = True
    with pytest.raises(ConnectionError):
        store.add_annotation(annotation(OTHER, "bob", True))
    assert [r.annotator for r in store.annotations()] == ["ann"]


def test_annotator_slugs_are_safe_and_distinct():
    assert annotator_slug("ann").startswith("ann-")
    assert "/" not in annotator_slug("../../etc/passwd")
    assert annotator_slug("a b") != annotator_slug("a_b")


def test_cli_import_then_export(tmp_path, capsys):
    home = tmp_path / "home"
    records = [annotation(PROMPT, name, True) for name in ("cat", "ann", "bob")] + [annotation(OTHER, "ann", False)]
    source = write_jsonl(records, tmp_path / "in.jsonl")
    assert main(["annotations", "import", str(source), "--home", str(home)]) == 0
    assert "imported 4 of 4 records" in capsys.readouterr().out
    # the same file again: every record identical, nothing written
    assert main(["annotations", "import", str(source), "--home", str(home)]) == 0
    printed = capsys.readouterr().out
    assert "imported 0 of 4 records" in printed and "4 already stored (identical)" in printed
    out = tmp_path / "out.jsonl"
    assert main(["annotations", "export", "--out", str(out), "--home", str(home)]) == 0
    assert "wrote 4 annotation records (2 images, 3 annotators)" in capsys.readouterr().out
    exported = read_annotations(out)
    assert sorted(exported, key=lambda r: (r.image_key, r.annotator)) == exported
    assert {(r.prompt_id, r.annotator): r for r in exported} == {(r.prompt_id, r.annotator): r for r in records}
    assert main(["annotations", "export", "--out", str(out), "--home", str(home), "--annotator", "ann"]) == 0
    assert len(read_annotations(out)) == 2


@pytest.mark.slow
def test_cli_import_conflicts(tmp_path, capsys):
    home = tmp_path / "home"
    write_jsonl([annotation(PROMPT, "ann", True)], tmp_path / "first.jsonl")
    assert main(["annotations", "import", str(tmp_path / "first.jsonl"), "--home", str(home)]) == 0
    capsys.readouterr()
    changed = write_jsonl([annotation(PROMPT, "ann", False), annotation(OTHER, "bob", True)], tmp_path / "second.jsonl")
    assert main(["annotations", "import", str(changed), "--home", str(home)]) == 1
    err = capsys.readouterr().err
    assert "1 record(s) answer differently" in err and "nothing imported" in err and "--on-conflict" in err
    store = SQLiteStore(home / "leaderboard.sqlite")
    assert len(store.annotations()) == 1  # nothing imported
    assert main(["annotations", "import", str(changed), "--home", str(home), "--on-conflict", "keep"]) == 0
    assert "imported 1 of 2 records" in capsys.readouterr().out
    assert store.get_annotation(KEY, "ann") == annotation(PROMPT, "ann", True)
    assert main(["annotations", "import", str(changed), "--home", str(home), "--on-conflict", "replace"]) == 0
    assert "1 replaced" in capsys.readouterr().out
    assert store.get_annotation(KEY, "ann") == annotation(PROMPT, "ann", False)


def test_cli_import_validates_against_the_prompts(tmp_path, capsys):
    bad = annotation(PROMPT, "ann", True).model_copy(update={"objects": {"cat": True}})
    path = write_jsonl([bad], tmp_path / "bad.jsonl")
    assert main(["annotations", "import", str(path), "--home", str(tmp_path / "home")]) == 1
    assert "does not match the prompt" in capsys.readouterr().err
    duplicate = write_jsonl([annotation(PROMPT, "ann", True)] * 2, tmp_path / "dup.jsonl")
    assert main(["annotations", "import", str(duplicate), "--home", str(tmp_path / "home")]) == 1
    assert "dup.jsonl:2: duplicate annotator line" in capsys.readouterr().err
