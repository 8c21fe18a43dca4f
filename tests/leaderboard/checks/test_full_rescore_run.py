"""A full re-score's claim (`leaderboard.checks.full_rescore_run.claim_full`): it holds only an entry a full
re-score would change, leaving its status as it is (a verified entry stays ranked meanwhile), and refuses
any other, saying why, with nothing written. The re-score itself: test_full_rescore_policy.py."""

from __future__ import annotations

import pytest

from leaderboard.checks.full_rescore_run import claim_full
from leaderboard.checks.verification_run import new_run
from leaderboard.store.entries import Entry, StaleEntryError
from leaderboard.store.sqlite_store import SQLiteStore
from leaderboard.store.states import transition


@pytest.fixture
def store(tmp_path):
    return SQLiteStore(tmp_path / "leaderboard.sqlite")


def stored(store, status: str) -> Entry:
    entry = store.add_submission(Entry(model_name=f"Model {status}", model_key=f"model_{status}", submitter="alice"))
    return transition(store, entry, status, status)


def test_a_full_rescore_holds_an_entry_it_would_change_and_leaves_its_status(store):
    entry, run = stored(store, "validated"), new_run()
    held = claim_full(store, entry.submission_id, run)
    assert held.status == "validated" and held.run is not None and held.run.run_id == run.run_id


def test_a_full_rescore_refuses_a_rejected_entry_and_writes_nothing(store):
    entry = stored(store, "rejected")
    with pytest.raises(StaleEntryError, match="it is rejected: nothing to re-score"):
        claim_full(store, entry.submission_id, new_run())
    kept = store.get_entry(entry.submission_id)
    assert kept.status == "rejected" and kept.run is None


# -- after the re-score: an incomplete one writes nothing and says what is missing; one whose images
#    cannot be had is skipped before anything is scored (fast: a few prompts, no model)


@pytest.fixture
def toy(tmp_path):
    from dataset_builder.loading import load_prompts
    from evaluator.config import PRESETS
    from evaluator.results import ResultRecord
    from tests.helpers.space_helpers import write_results

    prompts = load_prompts(None)[:3]
    lines = write_results(tmp_path / "toy.jsonl", prompts, "toy").read_text().splitlines()
    results = [ResultRecord.model_validate_json(line) for line in lines]
    store = SQLiteStore(tmp_path / "lb.sqlite")
    fields = {"images_repo": "org/toy-images", "images_revision": "main", "config_hash": PRESETS["current"].config_hash}
    entry = store.add_submission(
        Entry(model_name="Toy", model_key="toy", submitter="alice", status="validated", **fields), results
    )
    return {"store": store, "entry": entry, "results": results, "prompts": prompts, "tmp": tmp_path}


def _job(entry: Entry):
    from leaderboard.checks.full_rescore_run import Job

    return Job(entry.submission_id, entry.model_name, entry.images_repo, entry.images_revision, "toy")


def _rescored(toy, records) -> object:
    out = toy["tmp"] / "rescored.jsonl"
    out.write_text("".join(record.model_dump_json() + "\n" for record in records))
    return out


def test_a_rescore_with_missing_images_writes_nothing_and_counts_them(toy):
    from leaderboard.checks.full_rescore_run import _finish

    said: list[str] = []
    out = _rescored(toy, toy["results"][2:])  # two images never re-scored
    assert _finish(toy["store"], _job(toy["entry"]), out, said.append, new_run("full")) is None
    assert said == [
        f"{toy['entry'].submission_id[:8]}  Toy: not complete: 0 images could not be re-scored, 2 missing "
        "(e.g. 2 images not in the images dataset); rerun to try them again"
    ]
    assert toy["store"].get_entry(toy["entry"].submission_id).verification is None


def test_a_rescore_with_failed_images_names_the_first_failure(toy):
    from leaderboard.checks.full_rescore_run import _finish

    said: list[str] = []
    failing = [r.model_copy(update={"error": f"unreadable image {n}"}) for n, r in enumerate(toy["results"][:2])]
    out = _rescored(toy, [*failing, *toy["results"][2:]])
    assert _finish(toy["store"], _job(toy["entry"]), out, said.append, new_run("full")) is None
    assert said == [
        f"{toy['entry'].submission_id[:8]}  Toy: not complete: 2 images could not be re-scored, 0 missing "
        "(e.g. unreadable image 0); rerun to try them again"
    ]


def test_an_entry_whose_images_cannot_be_had_is_skipped_before_anything_is_scored(toy):
    from dataset_builder.records import PromptIndex
    from leaderboard.checks.check_setup import SpotCheckSetup
    from leaderboard.checks.full_rescore_run import local_images, verify_full

    class NeverScores:
        def score_source(self, *args, **kwargs):
            raise AssertionError("nothing is scored for an entry whose images cannot be had")

    said: list[str] = []
    empty = toy["tmp"] / "images"
    empty.mkdir()
    setup = SpotCheckSetup(PromptIndex(toy["prompts"]), None, local_images(empty), secret=b"s")
    written = verify_full(
        lambda: toy["store"], setup, NeverScores(), work=toy["tmp"] / "work", images_from=empty, say=said.append
    )
    assert written == []
    assert said[0] == f"1 submission(s) to re-score in full in {toy['store']!r} ..."
    assert said[1] == (
        f"{toy['entry'].submission_id[:8]}  Toy: skipped: images not reachable: "
        f"no images/toy-*.parquet in {empty / 'org/toy-images'}"
    )
    assert len(said) == 2
