"""The guarantee per account, not per try (leaderboard/checks/full_rescore_policy.py through
leaderboard/intake/submissions.py), and error rows that never raise a ranked number.

- After a spot check rejects one of an account's files, its later files are *held* even when
  their sample agrees (here: a re-score that agrees with everything, the luckiest cheat there is),
  20 tries over 4 days included; the status and the reason say so; another account is not touched.
- The account's files verified by a sample before the rejection are held too.
- A file with error rows (both sides share them, so the sample agrees) is held, not ranked.
- `leaderboard verify --full` takes held entries first; its re-score ranks them.
- The rules alone, on hand-made entries (fast): only a *spot check's* rejection (one that carries
  its `verification`) of the *same* account holds; what is held after it is what that account had
  ranked on a *sample*, never an entry a full re-score verified, nor another account's.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.full_rescore_policy import FULL_RESCORE_NEXT, check_rejections, hold_reason, ranked_on_a_sample
from leaderboard.checks.full_rescore_run import full_candidates, record_full
from leaderboard.intake.submissions import ParquetImages, SpotCheckPlan, SubmissionForm, SubmissionLimits, submit
from leaderboard.store.sqlite_store import Entry, SQLiteStore, Verification
from space.tabs.leaderboard.leaderboard_views import awaiting_frame, leaderboard_frame
from tests.helpers.space_helpers import result_line, write_images_dataset, write_results

SPLIT = "toy_model"
DAY = 86_400.0
LIMITS = SubmissionLimits(spot_check=SpotCheckPlan(16, 0))  # small and strict: these tests are about what follows


def entry(name: str, submitter: str, status: str, method: str | None = None, *, at: float = 0.0) -> Entry:
    """A stored entry by hand: `method` "sampled" or "full" gives it the record of a check that ran."""
    checked = None
    if method is not None:
        checked = Verification(method=method, checked=16, disagreements=0, allowed=0, total=64, at=at)
    return Entry(
        submission_id=f"{name:0<32}",
        model_name=name,
        model_key=name,
        submitter=submitter,
        status=status,
        created_at=at,
        verification=checked,
    )


def scored_rows(count: int, errors: int = 0) -> list[ResultRecord]:
    rows = [
        ResultRecord(
            prompt_id=f"p{k}", model_key=SPLIT, sample_index=0, passed=False, evaluator_version="v", config_hash="h"
        )
        for k in range(count)
    ]
    return [r.model_copy(update={"error": "could not decode"}) if k < errors else r for k, r in enumerate(rows)]


def test_only_a_spot_checks_rejection_of_the_same_account_is_caught():
    spotted = entry("spotted", "mallory", "rejected", "sampled", at=5.0)
    earlier = entry("earlier", "mallory", "rejected", "sampled", at=1.0)
    malformed = entry("malformed", "mallory", "rejected", at=2.0)  # refused before any check: no verification
    others = entry("others", "bob", "rejected", "sampled", at=3.0)
    verified = entry("verified", "mallory", "verified", "sampled", at=4.0)
    entries = [spotted, earlier, malformed, others, verified]
    assert [e.model_name for e in check_rejections(entries, "mallory")] == ["earlier", "spotted"]  # oldest first
    assert [e.model_name for e in check_rejections(entries, "bob")] == ["others"]
    assert check_rejections([malformed, verified], "mallory") == []
    assert check_rejections(entries, "carol") == []


def test_another_account_submitting_after_a_rejection_is_not_held():
    entries = [entry("cheat", "mallory", "rejected", "sampled")]
    honest = entry("honest", "bob", "validated", at=10.0)
    assert hold_reason(entries + [honest], honest, scored_rows(8)) == ""
    retry = entry("retry", "mallory", "validated", at=11.0)
    assert hold_reason(entries + [retry], retry, scored_rows(8)) == (
        "a spot check rejected another submission of this account (cheat000)"
    )


def test_a_rejection_without_a_verification_record_holds_nothing():
    """A file refused at validation (e.g. a failed statement without a cause) was never spot checked:
    trying again cannot buy another sample, so it costs the account nothing."""
    refused = entry("refused", "carol", "rejected")
    later = entry("later", "carol", "validated", at=5.0)
    assert hold_reason([refused, later], later, scored_rows(8)) == ""
    ranked = entry("ranked", "carol", "verified", "sampled")
    assert ranked_on_a_sample([refused, ranked], refused) == [ranked]  # what a *spot check* rejection would hold


def test_a_file_with_error_rows_is_held_and_says_how_many():
    fresh = entry("fresh", "dave", "validated")
    assert hold_reason([fresh], fresh, scored_rows(8, errors=3)) == (
        "3 of its 8 images are error rows (not scored), which its numbers leave out"
    )
    assert hold_reason([fresh], fresh, scored_rows(8, errors=0)) == ""


def test_after_a_rejection_only_what_the_account_ranked_on_a_sample_is_held():
    rejected = entry("rejected", "carol", "rejected", "sampled", at=9.0)
    sampled = entry("sampled", "carol", "verified", "sampled", at=1.0)
    rescored = entry("rescored", "carol", "verified", "full", at=2.0)  # the project's own numbers: kept
    waiting = entry("waiting", "carol", "pending", at=3.0)
    bobs = entry("bobs", "bob", "verified", "sampled", at=4.0)
    held = ranked_on_a_sample([rejected, sampled, rescored, waiting, bobs], rejected)
    assert [e.model_name for e in held] == ["sampled"]


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def files(prompts, tmp_path_factory):
    root = tmp_path_factory.mktemp("holds")
    return {
        "true": write_results(root / "true.jsonl", prompts, SPLIT, passed=False),
        "cheat": write_results(root / "cheat.jsonl", prompts, SPLIT, passed=True),
        "images": write_images_dataset(root / "images", prompts, SPLIT),
    }


def truthful(images, prompts, model_key, sample_indices):
    """The re-score: every image fails (the submitted true file's records)."""
    return [
        ResultRecord.model_validate(result_line(p, s, model_key, passed=False))
        for p, s in zip(prompts, sample_indices, strict=True)
    ]


def agreeing_with(path: Path):
    """A re-score that returns exactly what the file claims: every sample agrees."""
    claimed = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = ResultRecord.model_validate_json(line)
        claimed[record.prompt_id, record.sample_index] = record

    def score(images, prompts, model_key, sample_indices):
        return [claimed[p.prompt_id, s] for p, s in zip(prompts, sample_indices, strict=True)]

    return score


# The tests' clock starts six days ago: each `now` is an offset from it, so the days they span end
# before today and no pending name is yet old enough to be released (`NAME_HOLD_DAYS`).
START = time.time() - 6 * DAY


def send(store, files, index, path, name, submitter, *, score, now):
    form = SubmissionForm(name, "", "org/toy-images", "main", submitter)
    images = lambda repo, revision, split: ParquetImages.from_folder(files["images"], split)  # noqa: E731
    return submit(
        store,
        form,
        path,
        prompts=index,
        score=score,
        open_images=images,
        limits=LIMITS,
        now=START + now,
        secret=b"holds",
    )


@pytest.mark.slow
def test_after_a_rejection_no_try_of_the_account_is_ranked_on_a_sample(tmp_path, prompts, files):
    index, store = PromptIndex(prompts), SQLiteStore(tmp_path / "lb.sqlite")
    other = send(store, files, index, files["true"], "Bob Model", "bob", score=truthful, now=0.0)
    assert other.status == "verified"
    caught = send(store, files, index, files["cheat"], "Cheat Model", "mallory", score=truthful, now=10.0)
    assert caught.status == "rejected" and caught.verification is not None
    tries = []
    for day in range(4):  # 5 a day, every one's sample agreeing: none is ranked on it
        for k in range(5):
            when = (day + 1) * (DAY + 10) + k  # the rejected try used up a fifth of the first day
            tries.append(
                send(
                    store,
                    files,
                    index,
                    files["cheat"],
                    f"Cheat {day}{k}",
                    "mallory",
                    score=agreeing_with(files["cheat"]),
                    now=when,
                )
            )
    assert {entry.status for entry in tries} == {"held"}
    assert tries[0].reason == (
        "spot check: 16 of 16 re-scored images agree (0 disagree; at most 0 may); held: a spot check rejected "
        f"another submission of this account ({caught.submission_id[:8]}); {FULL_RESCORE_NEXT}"
    )
    board = leaderboard_frame(store.list_entries(), include_paper=False)
    assert list(board["model"]) == ["Bob Model"]  # bob's verified entry is untouched
    waiting = awaiting_frame(store.list_entries())
    assert set(waiting["status"]) == {"held"} and len(waiting) == 20
    # the maintainer's full re-score takes the held ones first (oldest first), then the sampled ones
    order = full_candidates(store.list_entries())
    assert [e.submission_id for e in order] == [e.submission_id for e in tries] + [other.submission_id]
    # and ranks the project's numbers: the cheat's claimed 100% is kept apart, never ranked
    submitted = store.get_results(tries[0].submission_id)
    rescored = truthful(None, [index[r.prompt_id] for r in submitted], SPLIT, [r.sample_index for r in submitted])
    done = record_full(store, store.get_entry(tries[0].submission_id), submitted, rescored)
    assert done.status == "verified" and done.verification.method == "full"
    assert done.row["overall"] == 0.0 and done.claimed_row["overall"] == 100.0
    assert "the submitted file disagreed on 19200 (100.0%)" in done.reason


@pytest.mark.slow
def test_a_rejection_holds_what_the_account_had_ranked_on_a_sample(tmp_path, prompts, files):
    index, store = PromptIndex(prompts), SQLiteStore(tmp_path / "lb.sqlite")
    first = send(store, files, index, files["true"], "Carol One", "carol", score=truthful, now=0.0)
    bob = send(store, files, index, files["true"], "Bob Model", "bob", score=truthful, now=1.0)
    assert first.status == bob.status == "verified"
    caught = send(store, files, index, files["cheat"], "Carol Two", "carol", score=truthful, now=2.0)
    assert caught.status == "rejected"
    held = store.get_entry(first.submission_id)
    assert held.status == "held" and held.verification.method == "sampled"
    assert held.reason.startswith("held: verified by its sample, but a spot check then rejected another submission")
    assert caught.submission_id[:8] in held.reason and held.reason.endswith(FULL_RESCORE_NEXT)
    assert store.get_entry(bob.submission_id).status == "verified"
    assert list(leaderboard_frame(store.list_entries(), include_paper=False)["model"]) == ["Bob Model"]


def error_rows_file(path: Path, prompts, every: int) -> tuple[Path, set]:
    """The true file with every `every`-th image an error row."""
    lines = write_results(path, prompts, SPLIT, passed=False).read_text(encoding="utf-8").splitlines()
    broken = set()
    out = []
    for k, line in enumerate(lines):
        record = ResultRecord.model_validate_json(line)
        if k % every == 0:
            broken.add((record.prompt_id, record.sample_index))
            record = record.model_copy(update={"error": "image could not be decoded", "objects": [], "statements": []})
        out.append(record.model_dump_json())
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path, broken


@pytest.mark.slow
def test_a_file_with_error_rows_is_held_even_when_they_agree(tmp_path, prompts, files):
    """The report leaves error rows out of every accuracy, so a file with them is not ranked on its
    sample; the re-score here fails on the same images (the rows agree)."""
    path, broken = error_rows_file(tmp_path / "errors.jsonl", prompts, every=3)

    def same_errors(images, batch, model_key, sample_indices):
        records = truthful(images, batch, model_key, sample_indices)
        return [
            r.model_copy(update={"error": "decode failed here too", "objects": [], "statements": []})
            if (r.prompt_id, r.sample_index) in broken
            else r
            for r in records
        ]

    index, store = PromptIndex(prompts), SQLiteStore(tmp_path / "lb.sqlite")
    entry = send(store, files, index, path, "Broken Model", "dave", score=same_errors, now=0.0)
    assert entry.status == "held", entry.reason
    assert entry.verification.disagreements == 0
    assert f"held: {len(broken)} of its 19200 images are error rows (not scored)" in entry.reason
    assert leaderboard_frame(store.list_entries(), include_paper=False).empty
    assert entry.row["images"] == 19200 - len(broken) and entry.row["coverage"] < 100  # the claim, listed apart
