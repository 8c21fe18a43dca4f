"""Submission validation, limits and the spot check (pure flow; the UI tests are in test_space_app)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from evaluator.pipeline import score_images
from evaluator.results import ResultRecord
from leaderboard.checks.verification_run import recheck
from leaderboard.intake.submissions import (
    ImagesUnreachable,
    ParquetImages,
    SpotCheckPlan,
    SpotCheckSetup,
    SubmissionError,
    SubmissionForm,
    SubmissionLimits,
    SubmissionStoredError,
    check_results,
    spot_check,
    submit,
    transition,
)
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.core.errors import MissingWeightsError
from tests.helpers.space_helpers import (
    RectanglePerception,
    ToggleImages,
    png_bytes,
    result_line,
    write_images_dataset,
    write_results,
)

SPLIT = "toy_model"


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def index(prompts):
    return PromptIndex(prompts)


@pytest.fixture(scope="module")
def failing_results_file(prompts, tmp_path_factory) -> Path:
    return write_results(tmp_path_factory.mktemp("results") / "toy.jsonl", prompts, SPLIT, passed=False)


@pytest.fixture(scope="module")
def failing_results(failing_results_file) -> list[ResultRecord]:
    with failing_results_file.open() as handle:
        return [ResultRecord.model_validate_json(line) for line in handle]


@pytest.fixture(scope="module")
def images_folder(prompts, tmp_path_factory) -> Path:
    return write_images_dataset(tmp_path_factory.mktemp("images_repo"), prompts, SPLIT)


def all_fail_scorer(calls: list):
    """Re-scores every image as all objects missing (what the submitted all-fail results claim);
    a batch at a time, as `Evaluator.score_many`."""

    def score(images, prompts, model_key, sample_indices):
        records = []
        for image, prompt, sample_index in zip(images, prompts, sample_indices, strict=True):
            calls.append((prompt.prompt_id, sample_index, image.size))
            records.append(ResultRecord.model_validate(result_line(prompt, sample_index, model_key, passed=False)))
        return records

    return score


def form(name: str = "Toy Model", submitter: str = "alice", repo: str = "org/toy-images") -> SubmissionForm:
    return SubmissionForm(
        model_name=name, link="https://example.org/toy", images_repo=repo, images_revision="main", submitter=submitter
    )


def local_images(folder: Path):
    def open_images(repo_id: str, revision: str, split: str):
        assert (repo_id, revision) == ("org/toy-images", "main")
        return ParquetImages.from_folder(folder, split)

    return open_images


def unreachable(repo_id, revision, split):
    raise ImagesUnreachable("images not reachable: offline")


# ------------------------------------------------------------------------ check_results


@pytest.mark.slow
def test_complete_results_pass_the_check(failing_results, index):
    assert check_results(failing_results, index.ids()) == ""


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda rs: rs[:-1], "1 of 19200 images are missing"),
        (lambda rs: rs + [rs[0]], "scored more than once"),
        (lambda rs: rs[:-1] + [rs[-1].model_copy(update={"prompt_id": "color_pos9_neg0_000"})], "not benchmark images"),
        (lambda rs: rs[:-1] + [rs[-1].model_copy(update={"evaluator_version": "0.9.0"})], "evaluator version"),
        (lambda rs: rs[:-1] + [rs[-1].model_copy(update={"config_hash": "deadbeef"})], "config hash"),
        (lambda rs: rs[:-1] + [rs[-1].model_copy(update={"model_key": "other"})], "mix 2 model keys"),
        (lambda rs: [], "no records"),
    ],
)
def test_incomplete_or_foreign_results_are_refused(failing_results, index, mutate, message):
    assert message in check_results(mutate(list(failing_results)), index.ids())


def test_previous_preset_results_do_not_match_current_hash(failing_results, index):
    assert "config hash" in check_results(failing_results, index.ids(), config=PRESETS["previous"])


# ------------------------------------------------------------------------ images + spot check


def test_parquet_images_reads_the_requested_rows(images_folder, prompts):
    images = ParquetImages.from_folder(images_folder, SPLIT)
    keys = [(prompts[10].prompt_id, 3), (prompts[0].prompt_id, 0)]
    found = dict(images.images(keys))
    assert set(found) == set(keys) and found[keys[0]].size == (96, 64)
    with pytest.raises(ImagesUnreachable, match="no image for color_pos1_neg0_999 sample 0"):
        list(images.images([keys[0], ("color_pos1_neg0_999", 0)]))
    with pytest.raises(ImagesUnreachable, match="no images/other-"):
        ParquetImages.from_folder(images_folder, "other")


def test_spot_check_reports_disagreements(failing_results, images_folder, index):
    calls: list = []
    images = ParquetImages.from_folder(images_folder, SPLIT)
    plan = SpotCheckPlan(3, 0)
    outcome = spot_check(failing_results, images, index, all_fail_scorer(calls), plan=plan, seed=1)
    assert outcome.accepted and outcome.checked == 3 and outcome.disagreements == []
    assert len(calls) == 3 and all(size == (96, 64) for *_, size in calls)
    claimed_pass = [r.model_copy(update={"passed": True}) for r in failing_results[:50]]
    outcome = spot_check(claimed_pass, images, index, all_fail_scorer([]), plan=SpotCheckPlan(4, 1), seed=1)
    assert not outcome.accepted and len(outcome.disagreements) == 4
    assert "submitted pass" in outcome.disagreements[0] and "re-scored fail" in outcome.disagreements[0]


# ------------------------------------------------------------------------ submit


@pytest.mark.slow
def test_valid_submission_is_verified(tmp_path, failing_results_file, images_folder, index):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    calls: list = []
    entry = submit(
        store,
        form(),
        failing_results_file,
        prompts=index,
        score=all_fail_scorer(calls),
        open_images=local_images(images_folder),
        secret=b"test",
    )
    assert entry.status == "verified", entry.reason  # the default plan: 652 of the 19,200 images
    assert entry.reason == "spot check: 652 of 652 re-scored images agree (0 disagree; at most 5 may)"
    assert len(calls) == 652 == len(set(calls))
    assert (entry.verification.method, entry.verification.checked, entry.verification.disagreements) == (
        "sampled",
        652,
        0,
    )
    assert entry.row["model"] == "Toy Model" and entry.row["overall"] == 0.0 and entry.row["images"] == 19200
    assert set(entry.detail) == {"statement_accuracy", "failure_causes", "overall_interval"}
    assert len(store.get_results(entry.submission_id)) == 19200


@pytest.mark.slow
def test_spot_check_disagreement_rejects(tmp_path, prompts, index, images_folder):
    claims_all_pass = write_results(tmp_path / "cheat.jsonl", prompts, SPLIT, passed=True)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = submit(
        store,
        form(),
        claims_all_pass,
        prompts=index,
        score=all_fail_scorer([]),
        open_images=local_images(images_folder),
        secret=b"test",
    )
    assert entry.status == "rejected"  # stopped after the first batch: 16 disagree, more than 4 may
    assert entry.reason.startswith("spot check: 16 of 16 re-scored images disagree, more than the 5 of 652 allowed")


@pytest.mark.slow
def test_unreachable_images_keep_the_entry_pending(tmp_path, failing_results_file, index):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = submit(
        store, form(), failing_results_file, prompts=index, score=all_fail_scorer([]), open_images=unreachable
    )
    assert entry == store.get_entry(entry.submission_id)  # what submit says is what is stored
    assert (entry.status, entry.attempts) == ("pending", 1)
    assert entry.reason == ("spot check waits (attempt 1): images not reachable: offline; it is retried automatically")
    assert entry.row["model"] == "Toy Model" and entry.row["images"] == 19200  # validated: listed apart


NOT_COUNTED = "nothing was stored, and this attempt does not count toward the daily limit"


@pytest.mark.parametrize(
    "content, reason",
    [
        ("{not json\n", "malformed results file: bad.jsonl:1: not JSON"),
        ('{"prompt_id": "color_pos1_neg0_000"}\n', "malformed results file: bad.jsonl:1: not a result record"),
    ],
)
def test_a_malformed_file_is_refused_not_stored_not_counted(tmp_path, index, content, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    with pytest.raises(SubmissionError) as refused:
        submit(store, form(), path, prompts=index, score=all_fail_scorer([]), open_images=unreachable)
    assert str(refused.value).startswith(reason) and str(refused.value).endswith(NOT_COUNTED)
    assert str(tmp_path) not in str(refused.value)
    assert store.list_entries() == [] and store.count_recent("alice", 0) == 0


def test_a_partial_file_is_refused(tmp_path, prompts, index):
    partial = write_results(tmp_path / "partial.jsonl", prompts[:100], SPLIT, passed=False)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    with pytest.raises(SubmissionError, match="invalid results file: 18800 of 19200 images are missing"):
        submit(store, form(), partial, prompts=index, score=all_fail_scorer([]), open_images=unreachable)
    assert store.list_entries() == []


@pytest.mark.slow
def test_limits_refuse_without_storing_and_only_stored_submissions_count(
    tmp_path, failing_results_file, prompts, index, images_folder
):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    T0 = time.time() - 3 * 86_400  # three days ago: the day's limits are counted from it
    partial = write_results(tmp_path / "partial.jsonl", prompts[:5], SPLIT, passed=False)
    kwargs = dict(prompts=index, score=all_fail_scorer([]), open_images=local_images(images_folder))
    with pytest.raises(SubmissionError, match="limit is 1 MB"):
        submit(store, form(), failing_results_file, limits=SubmissionLimits(max_bytes=2**20), **kwargs)
    assert store.list_entries() == []
    one_a_day = SubmissionLimits(per_day=1, spot_check=SpotCheckPlan(2, 0))
    for _ in range(3):  # refused files never use up the day's submission
        with pytest.raises(SubmissionError, match="invalid results file"):
            submit(store, form(), partial, limits=one_a_day, now=T0, **kwargs)
    first = submit(store, form(), failing_results_file, limits=one_a_day, now=T0, **kwargs)
    assert first.status == "verified"
    with pytest.raises(SubmissionError, match="already made 1 submissions in the last 24 hours"):
        submit(store, form("Another"), failing_results_file, limits=one_a_day, now=1_000_100.0, **kwargs)
    later = submit(store, form("Another"), failing_results_file, limits=one_a_day, now=T0 + 86_401, **kwargs)
    assert later.status == "verified"
    with pytest.raises(SubmissionError, match="enter the model's name"):
        submit(store, form("  "), partial, **kwargs)
    with pytest.raises(SubmissionError, match="upload the results JSONL"):
        submit(store, form(), tmp_path / "missing.jsonl", **kwargs)
    assert [e.submission_id for e in store.list_entries()] == [first.submission_id, later.submission_id]


@pytest.mark.slow
def test_another_submitters_model_name_is_refused(tmp_path, failing_results_file, index):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    owned = store.add_submission(Entry(model_name="Toy Model", model_key="toy_model", submitter="alice"))
    with pytest.raises(SubmissionError, match="submitted by another user"):
        submit(
            store,
            form("toy-model", submitter="mallory"),
            failing_results_file,
            prompts=index,
            score=None,
            open_images=unreachable,
        )
    assert store.list_entries() == [owned]
    # The owner can resubmit: stored next to the old entry; no scorer here, so its spot check waits.
    again = submit(
        store,
        form("Toy Model", submitter="alice"),
        failing_results_file,
        prompts=index,
        score=None,
        open_images=unreachable,
    )
    assert again.status == "pending" and "no scorer here" in again.reason
    assert store.get_entry(owned.submission_id) == owned


def test_jsonl_lines_are_what_score_writes(tmp_path, prompts, index):
    """The helper's all-fail lines, which these tests submit, equal field for field what the real
    scoring pipeline writes for images where nothing is found (one prompt of each category)."""
    chosen = prompts[::800]
    assert sorted({p.category for p in chosen}) == sorted({p.category for p in prompts})
    folder = tmp_path / SPLIT
    folder.mkdir()
    for prompt in chosen:  # one flat colour: the perception double finds no object in it
        (folder / f"{prompt.prompt_id}_0.png").write_bytes(png_bytes())
    out = tmp_path / "scored.jsonl"
    summary = score_images(
        folder, index, RectanglePerception(), out_path=out, config=PRESETS["current"], model_key=SPLIT, progress=False
    )
    assert (summary.scored, summary.passed, summary.errors) == (len(chosen), 0, 0)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["prompt_id"] for line in written) == sorted(p.prompt_id for p in chosen)
    by_id = {prompt.prompt_id: prompt for prompt in chosen}
    for line in written:
        assert result_line(by_id[line["prompt_id"]], 0, SPLIT, passed=False) == line


# ------------------------------------------------------------------------ the state machine


def failing_scorer(error: BaseException):
    def score(images, prompts, model_key, sample_indices):
        raise error

    return score


def zero_gpu_quota_error() -> Exception:
    import gradio as gr

    return gr.Error("You have exceeded your free ZeroGPU quota (120s requested vs. 3s left). Try again in 0:41:12.")


@pytest.mark.slow
@pytest.mark.parametrize(
    "error, why",
    [
        (MissingWeightsError("RFDETRSegXLarge"), "the scorer's model weights are not on this machine;"),
        (zero_gpu_quota_error(), "no GPU time left here now (the ZeroGPU quota is spent);"),
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), "the GPU ran out of memory;"),
        (ValueError("something else"), "the spot check failed here (an internal error; it is in the server's log);"),
    ],
)
def test_a_spot_check_that_cannot_run_leaves_a_truthful_pending_entry(
    tmp_path, failing_results_file, index, images_folder, error, why
):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = submit(
        store,
        form(),
        failing_results_file,
        prompts=index,
        score=failing_scorer(error),
        open_images=local_images(images_folder),
    )
    assert entry == store.get_entry(entry.submission_id) and entry.status == "pending"
    assert entry.reason.startswith(f"spot check waits (attempt 1): {why}")
    assert entry.reason.endswith("; it is retried automatically") and entry.row is not None
    assert str(getattr(error, "message", error)) not in entry.reason  # the library's words go to the log only


@pytest.mark.slow
def test_recheck_finishes_pending_and_half_done_submissions(
    tmp_path, failing_results_file, failing_results, index, images_folder
):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    images = ToggleImages(images_folder)
    limits = SubmissionLimits(spot_check=SpotCheckPlan(2, 0))
    setup = SpotCheckSetup(index, all_fail_scorer([]), images, limits=limits, secret=b"test")
    pending = submit(
        store, form(), failing_results_file, prompts=index, score=setup.score, open_images=images, limits=limits
    )
    assert pending.status == "pending"
    # A crash right after storing leaves a received entry: recheck validates and spot-checks it.
    crashed = Entry(
        model_name="Crashed",
        model_key="crashed",
        submitter="bob",
        status="received",
        config_hash=PRESETS["current"].config_hash,
        images_repo="org/toy-images",
        images_revision="main",
    )
    store.add_submission(crashed, failing_results)

    assert [e.status for e in recheck(store, setup)] == ["pending", "pending"]  # still unreachable
    assert store.get_entry(pending.submission_id).attempts == 2
    assert store.get_entry(crashed.submission_id).row is not None  # validated on the way

    images.reachable = True
    settled = recheck(store, setup)
    assert [(e.model_name, e.status, e.attempts) for e in settled] == [
        ("Toy Model", "verified", 3),
        ("Crashed", "verified", 2),
    ]
    assert settled[0].reason == "spot check: 2 of 2 re-scored images agree (0 disagree; at most 0 may)"
    assert recheck(store, setup) == []  # nothing left to do
    with pytest.raises(RuntimeError, match="it is verified, which cannot become pending"):
        transition(store, settled[0], "pending", "no")


@pytest.mark.slow
def test_a_submission_of_another_config_waits_and_says_why(tmp_path, failing_results, index, images_folder):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    old = Entry(model_name="Old", model_key="old", submitter="a", status="pending", config_hash="0badc0de", row={})
    store.add_submission(old, failing_results)
    [entry] = recheck(store, SpotCheckSetup(index, all_fail_scorer([]), local_images(images_folder)))
    assert entry.status == "pending" and "scored with config 0badc0de; this Space scores with" in entry.reason


@pytest.mark.slow
def test_a_store_that_fails_after_storing_is_reported_as_stored(tmp_path, failing_results_file, index):
    class FlakyStore(SQLiteStore):
        def modify(self, *args, **kwargs):  # every change of a stored entry
            raise OSError("the Hub commit failed")

    store = FlakyStore(tmp_path / "lb.sqlite")
    with pytest.raises(SubmissionStoredError) as stuck:
        submit(store, form(), failing_results_file, prompts=index, score=None, open_images=unreachable)
    [entry] = store.list_entries()
    assert stuck.value.submission_id == entry.submission_id and entry.status == "received"
    assert str(stuck.value) == f"stored as {entry.submission_id[:8]}, then OSError: the Hub commit failed"
