"""The regeneration check's decision, fast (`RegenerationPlan.accepts`, `is_own`, `regeneration_run._outcome`):
the boundaries are docs/leaderboard.md's numbers (t, k, m), read from the page, and the outcome lands on
the entry with the words and the record the page shows. test_regeneration_run.py runs the whole check on
tiny pipelines but is slow; these hold the decision itself in the fast suite."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaderboard.checks.regeneration_policy import regeneration_plan
from leaderboard.checks.regeneration_run import Comparer, _NotReproduced, _outcome, _record_reader
from leaderboard.checks.verification_run import claim_for, new_run
from leaderboard.store.entries import Entry
from leaderboard.store.sqlite_store import SQLiteStore
from leaderboard.store.states import transition

DOC = (Path(__file__).resolve().parents[3] / "docs" / "leaderboard.md").read_text(encoding="utf-8")
REVISION = "0123456789abcdef0123456789abcdef01234567"


def documented(pattern: str) -> float:
    """The one number docs/leaderboard.md gives where PATTERN (a regex with one group) matches."""
    found = re.findall(pattern, DOC)
    assert len(found) == 1, f"docs/leaderboard.md states {pattern!r} {len(found)} times"
    return float(found[0])


T = documented(r"the model's own\*\* when the similarity is at least \*\*t = ([0-9.]+)\*\*")
K = int(documented(r"\*\*k = ([0-9]+) images, at most m = [0-9]+ not the model's own\*\*"))
M = int(documented(r"\*\*k = [0-9]+ images, at most m = ([0-9]+) not the model's own\*\*"))


def test_an_image_exactly_at_t_is_the_models_own_and_m_misses_are_accepted():
    plan = regeneration_plan(19_200)
    assert (plan.sample_size, plan.max_not_own, plan.threshold) == (K, M, T)
    assert plan.is_own(T) and not plan.is_own(T - 1e-9)
    assert plan.accepts(M) and not plan.accepts(M + 1)


class Compared:
    """A comparer's answers after a sample: CHECKED images compared, NOT_OWN of them not the model's own."""

    def __init__(self, checked: int, not_own: int):
        self.checked, self.count = checked, not_own

    def compared(self) -> list[dict]:
        return [{"own": k >= self.count} for k in range(self.checked)]

    def not_own(self) -> int:
        return self.count

    def pairs(self) -> list:
        return []


@pytest.fixture
def held(tmp_path):
    """A validated entry claimed by a run: (store, entry, run)."""
    store = SQLiteStore(tmp_path / "leaderboard.sqlite")
    entry = store.add_submission(Entry(model_name="Model A", model_key="model_a", submitter="alice"))
    entry = transition(store, entry, "validated", "validated")
    run = new_run()
    return store, claim_for(store, entry, run, "regeneration check running since {started}"), run


@pytest.mark.parametrize("revision", [REVISION, None])
def test_a_sample_with_m_misses_is_reproduced_and_the_spot_check_comes_next(held, revision):
    store, entry, run = held
    spec = SimpleNamespace(hub_id="org/model", revision=revision)
    landed = _outcome(store, entry, regeneration_plan(19_200), Compared(K, M), spec, run)
    where = "org/model@0123456789ab" if revision else "org/model"  # the commit's first 12 characters
    assert landed.status == "pending" and landed.run is None
    assert landed.reason.startswith(f"images regenerated from {where}: {K - M} of {K} are the model's own")
    assert landed.reason.endswith("; the spot check comes next")
    record = landed.regeneration
    assert (record.outcome, record.model_id, record.commit) == ("reproduced", "org/model", revision or "")
    assert (record.checked, record.not_own, record.allowed, record.threshold) == (K, M, M, T)


@pytest.mark.parametrize("checked", [K, M + 1])
def test_a_sample_with_more_misses_is_rejected_and_says_where_it_stopped(held, checked):
    store, entry, run = held
    spec = SimpleNamespace(hub_id="org/model", revision=REVISION)
    landed = _outcome(store, entry, regeneration_plan(19_200), Compared(checked, M + 1), spec, run)
    assert landed.status == "rejected" and landed.run is None
    assert landed.regeneration.outcome == "rejected" and landed.regeneration.commit == REVISION
    # a whole sample says nothing of stopping; one cut short once it could no longer pass says where
    stopped = "" if checked == K else f", stopped after {checked} of {K}"
    assert landed.reason == (
        f"regeneration check: {M + 1} of {checked} sampled images are not the model's own "
        f"(org/model@0123456789ab, the benchmark's seeds{stopped}), more than the {M} of {K} allowed; "
        "the pairs are on its page"
    )


def test_images_whose_source_records_no_generation_parameters_are_not_reproduced():
    # a source that keeps each image's record (seed, model, settings) is read; one that keeps none
    # (a bare folder of images) marks the entry "images not reproduced" rather than failing the job
    records = SimpleNamespace(image_records=lambda keys: [f"record of {key}" for key in keys])
    assert _record_reader(records, [("p", 0)]) == ["record of ('p', 0)"]
    with pytest.raises(_NotReproduced, match="its images' source records no generation parameters"):
        _record_reader(SimpleNamespace(), [("p", 0)])


def test_the_pairs_compared_so_far_are_the_samples_kept_ones_in_its_order():
    # a resumed check counts only the pairs of this sample already compared; the rest are still to come
    kept = SimpleNamespace(pairs={("b", 0): {"own": False}, ("a", 0): {"own": True}, ("other", 0): {"own": False}})
    comparer = Comparer(None, None, None, regeneration_plan(19_200), kept, [("a", 0), ("b", 0), ("c", 0)])
    assert comparer.compared() == [{"own": True}, {"own": False}] and comparer.not_own() == 1
