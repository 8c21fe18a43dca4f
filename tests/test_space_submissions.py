"""Submission validation, limits and the spot check (pure flow; the UI tests are in test_space_app)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _space_helpers import RectanglePerception, png_bytes, result_line, write_images_dataset, write_results

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from evaluator.pipeline import score_images
from evaluator.results import ResultRecord
from space.store import Entry, SQLiteStore
from space.submissions import (
    ImagesUnreachable,
    ParquetImages,
    SubmissionError,
    SubmissionForm,
    SubmissionLimits,
    check_results,
    spot_check,
    submit,
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
    """Re-scores every image as all objects missing (what the submitted all-fail results claim)."""

    def score(image, prompt, model_key, sample_index):
        calls.append((prompt.prompt_id, sample_index, image.size))
        return ResultRecord.model_validate(result_line(prompt, sample_index, model_key, passed=False))

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


def test_parquet_images_reads_the_requested_row(images_folder, prompts):
    images = ParquetImages.from_folder(images_folder, SPLIT)
    assert images.image(prompts[10].prompt_id, 3).size == (96, 64)
    with pytest.raises(ImagesUnreachable, match="no image for"):
        images.image("color_pos1_neg0_999", 0)
    with pytest.raises(ImagesUnreachable, match="no images/other-"):
        ParquetImages.from_folder(images_folder, "other")


def test_spot_check_reports_disagreements(failing_results, images_folder, index):
    calls: list = []
    images = ParquetImages.from_folder(images_folder, SPLIT)
    assert spot_check(failing_results, images, index, all_fail_scorer(calls), k=3, seed=1) == []
    assert len(calls) == 3 and all(size == (96, 64) for *_, size in calls)
    claimed_pass = [r.model_copy(update={"passed": True}) for r in failing_results[:50]]
    mismatches = spot_check(claimed_pass, images, index, all_fail_scorer([]), k=4, seed=1)
    assert len(mismatches) == 4 and "submitted pass" in mismatches[0] and "re-scored fail" in mismatches[0]


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
        limits=SubmissionLimits(spot_check_k=5),
        seed=0,
    )
    assert entry.status == "verified", entry.reason
    assert entry.reason == "spot check: 5 of 5 re-scored images agree"
    assert len(calls) == 5
    assert entry.row["model"] == "Toy Model" and entry.row["overall"] == 0.0 and entry.row["images"] == 19200
    assert set(entry.detail) == {"statement_accuracy", "failure_causes"}
    assert len(store.get_results(entry.submission_id)) == 19200


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
        limits=SubmissionLimits(spot_check_k=4),
        seed=0,
    )
    assert entry.status == "rejected"
    assert entry.reason.startswith("spot check: 4 of 4 re-scored images disagree")


def test_unreachable_images_keep_the_entry_pending(tmp_path, failing_results_file, index):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = submit(
        store, form(), failing_results_file, prompts=index, score=all_fail_scorer([]), open_images=unreachable
    )
    assert entry.status == "pending"
    assert "images not reachable" in entry.reason
    assert entry.row["model"] == "Toy Model" and entry.row["images"] == 19200  # validated: shown as pending


@pytest.mark.parametrize(
    "content, reason",
    [
        ("{not json\n", "malformed results file"),
        ('{"prompt_id": "color_pos1_neg0_000"}\n', "malformed results file"),
    ],
)
def test_malformed_file_is_rejected_with_reason(tmp_path, index, content, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = submit(store, form(), path, prompts=index, score=all_fail_scorer([]), open_images=unreachable)
    assert entry.status == "rejected" and entry.reason.startswith(reason)
    assert "bad.jsonl:1" in entry.reason and str(tmp_path) not in entry.reason


def test_partial_file_is_rejected(tmp_path, prompts, index):
    partial = write_results(tmp_path / "partial.jsonl", prompts[:100], SPLIT, passed=False)
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = submit(store, form(), partial, prompts=index, score=all_fail_scorer([]), open_images=unreachable)
    assert entry.status == "rejected" and "18800 of 19200 images are missing" in entry.reason


def test_limits_refuse_without_storing(tmp_path, failing_results_file, prompts, index):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    partial = write_results(tmp_path / "partial.jsonl", prompts[:5], SPLIT, passed=False)
    kwargs = dict(prompts=index, score=all_fail_scorer([]), open_images=unreachable)
    with pytest.raises(SubmissionError, match="limit is 1 MB"):
        submit(store, form(), failing_results_file, limits=SubmissionLimits(max_bytes=2**20), **kwargs)
    assert store.list_entries() == []
    # Rejected submissions count toward the daily limit too.
    one_a_day = SubmissionLimits(per_day=1)
    first = submit(store, form(), partial, limits=one_a_day, now=1_000_000.0, **kwargs)
    assert first.status == "rejected"
    with pytest.raises(SubmissionError, match="already submitted 1 times"):
        submit(store, form("Another"), partial, limits=one_a_day, now=1_000_100.0, **kwargs)
    later = submit(store, form("Another"), partial, limits=one_a_day, now=1_000_000.0 + 86_401, **kwargs)
    assert later.status == "rejected"
    with pytest.raises(SubmissionError, match="enter the model's name"):
        submit(store, form("  "), partial, **kwargs)
    with pytest.raises(SubmissionError, match="upload the results JSONL"):
        submit(store, form(), tmp_path / "missing.jsonl", **kwargs)
    assert [e.submission_id for e in store.list_entries()] == [first.submission_id, later.submission_id]


def test_another_submitters_model_name_is_refused(tmp_path, prompts, index):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    owned = store.add_submission(Entry(model_name="Toy Model", model_key="toy_model", submitter="alice"))
    partial = write_results(tmp_path / "partial.jsonl", prompts[:5], SPLIT, passed=False)
    with pytest.raises(SubmissionError, match="submitted by another user"):
        submit(
            store, form("toy-model", submitter="mallory"), partial, prompts=index, score=None, open_images=unreachable
        )
    assert store.list_entries() == [owned]
    # The owner can resubmit (this file is partial, so it is stored as rejected next to the old entry).
    again = submit(
        store, form("Toy Model", submitter="alice"), partial, prompts=index, score=None, open_images=unreachable
    )
    assert again.status == "rejected" and store.get_entry(owned.submission_id) == owned


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
