"""`negt2ibench leaderboard verify-job`: one entry verified by a run that claims it; idempotent,
resumable, and two runs at once land one outcome (SQLite store, perception double, offline)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import SpotCheckSetup
from leaderboard.checks.full_rescore_run import local_images
from leaderboard.cli import verify_job
from leaderboard.jobs.verify_job import VerifyContext, find_entry, verify_entry
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.api import Evaluator
from negt2ibench.cli import build_parser, main
from negt2ibench.core.errors import UserError
from tests.helpers.space_helpers import RectanglePerception, write_images_dataset, write_results

SPLIT = "toy_model"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """50 prompts (a small corpus: 200 images, a spot check of all of them), their images under
    ROOT/org/toy-images, and a file whose claims a re-score of those flat images agrees with."""
    root = tmp_path_factory.mktemp("verify_job")
    prompts = load_prompts(None)[:50]
    dataset = root / "prompts.jsonl"
    dataset.write_text("".join(p.model_dump_json() + "\n" for p in prompts))
    write_images_dataset(root / "images" / "org" / "toy-images", prompts, SPLIT)
    claims = write_results(root / "toy.jsonl", prompts, SPLIT, passed=False)
    results = [ResultRecord.model_validate_json(line) for line in claims.read_text().splitlines()]
    return {"prompts": prompts, "dataset": dataset, "images": root / "images", "results": results}


def stored_entry(store: SQLiteStore, results, status: str = "received", **fields) -> Entry:
    entry = Entry(
        model_name="Toy",
        model_key="toy",
        submitter="alice",
        status=status,
        images_repo="org/toy-images",
        images_revision="main",
        config_hash=PRESETS["current"].config_hash,
        **fields,
    )
    return store.add_submission(entry, results)


class CountingScorer:
    """The spot check's scorer over the perception double; counts the images it re-scores and can
    run a hook before its first batch (another run, a crash)."""

    def __init__(self, prompts, before_first=None):
        self.evaluator = Evaluator("current", prompts=PromptIndex(prompts), perception=RectanglePerception())
        self.images, self.before_first = 0, before_first

    def __call__(self, images, prompts, model_key, sample_indices):
        if self.before_first is not None:
            hook, self.before_first = self.before_first, None
            hook()
        self.images += len(images)
        return self.evaluator.score_many(
            images, prompts, model_key=model_key, sample_indices=sample_indices, progress=False, num_workers=0
        )


def context(store, corpus, tmp_path, score, said) -> VerifyContext:
    setup = SpotCheckSetup(PromptIndex(corpus["prompts"]), score, local_images(corpus["images"]), secret=b"s")
    return VerifyContext(store, setup, tmp_path / "work", say=said.append)


@pytest.mark.slow
def test_a_run_verifies_the_entry_and_a_second_run_changes_nothing(tmp_path, corpus):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = stored_entry(store, corpus["results"])
    said: list[str] = []
    scorer = CountingScorer(corpus["prompts"])
    verified = verify_entry(context(store, corpus, tmp_path, scorer, said), entry.submission_id[:8])
    assert verified.status == "verified" and verified.run is None and verified.attempts == 1
    # 200 images: every one re-scored; an honest file's flips are Binomial(200, 0.26%), mean 0.52, and
    # P(> 2) ≈ 1.6% > 1% while P(> 3) ≈ 0.2%, so 3 may disagree (leaderboard/checks/spot_check_policy.py, _tolerance)
    assert verified.reason == "spot check: 200 of 200 re-scored images agree (0 disagree; at most 3 may)"
    assert said[-1] == f"{entry.submission_id[:8]}  Toy: verified: {verified.reason}"
    again: list[str] = []
    assert verify_entry(context(store, corpus, tmp_path, scorer, again), entry.submission_id) == verified
    assert again == [f"{entry.submission_id[:8]}  Toy: nothing to check: it is verified ({verified.reason})"]
    assert scorer.images == 200  # the second run re-scored nothing


@pytest.mark.slow
def test_an_interrupted_run_is_resumed_without_rescoring_what_it_kept(tmp_path, corpus):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = stored_entry(store, corpus["results"], status="validated", row={"overall": 0.0})
    first = CountingScorer(corpus["prompts"])
    batches = {"n": 0}

    def crash_after_two_batches(images, prompts, model_key, sample_indices):
        batches["n"] += 1
        if batches["n"] == 3:
            raise KeyboardInterrupt  # the process is stopped mid-run (an Exception would be a "waits" outcome)
        return first(images, prompts, model_key, sample_indices)

    with pytest.raises(KeyboardInterrupt):
        verify_entry(context(store, corpus, tmp_path, crash_after_two_batches, []), entry.submission_id)
    stuck = store.get_entry(entry.submission_id)
    assert stuck.status == "pending" and stuck.reason.startswith("spot check running since") and stuck.run
    second = CountingScorer(corpus["prompts"])
    said: list[str] = []
    done = verify_entry(context(store, corpus, tmp_path, second, said), entry.submission_id)
    assert done.status == "verified" and done.attempts == 2 and done.run is None
    assert (first.images, second.images) == (32, 168)  # two batches of 16 kept; only the rest re-scored
    assert f"{entry.submission_id[:8]}: 32 re-scored images read from" in " ".join(said)
    assert f"took over from run {stuck.run.run_id[:8]}" not in done.reason  # the outcome replaced the claim


@pytest.mark.slow
def test_two_runs_at_once_land_one_outcome(tmp_path, corpus):
    """Run B starts while run A is re-scoring: B takes the claim over and lands its outcome; A's
    outcome, computed on the same entry, is dropped when it tries to write it."""
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = stored_entry(store, corpus["results"], status="validated", row={"overall": 0.0})
    said_b: list[str] = []

    def run_b():
        verify_entry(
            context(store, corpus, tmp_path / "b", CountingScorer(corpus["prompts"]), said_b), entry.submission_id
        )

    said_a: list[str] = []
    a = CountingScorer(corpus["prompts"], before_first=run_b)
    outcome = verify_entry(context(store, corpus, tmp_path / "a", a, said_a), entry.submission_id)
    landed = store.get_entry(entry.submission_id)
    assert outcome == landed and landed.status == "verified" and landed.run is None
    assert landed.attempts == 2  # A's claim, then B's
    assert said_b[-1].endswith(f"verified: {landed.reason}")
    assert "this run's outcome was dropped" in said_a[-1] and "no longer holds it" in said_a[-1]
    assert landed.verification is not None and landed.verification.checked == 200


def test_an_entry_is_named_by_its_id_or_a_long_enough_prefix(tmp_path, corpus):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = stored_entry(store, corpus["results"][:4])
    assert find_entry(store, entry.submission_id[:8].upper()) == entry
    for name, message in [(entry.submission_id[:7], "no such submission"), ("f" * 32, "no such submission")]:
        with pytest.raises(UserError, match=message):
            find_entry(store, name)


@pytest.mark.slow
def test_the_command_verifies_fully_and_withdraws(tmp_path, corpus, capsys):
    """The shell's own handler with the perception double: `--full` re-scores every image of a
    verified entry (holding it meanwhile); `withdraw` takes it off; a run after that changes nothing."""
    home = tmp_path / "home"
    store = SQLiteStore(home / "leaderboard.sqlite")
    entry = stored_entry(store, corpus["results"], status="verified", row={"overall": 0.0})
    common = ["--store", store.locator(), "--dataset", str(corpus["dataset"]), "--images-from", str(corpus["images"])]
    argv = ["leaderboard", "verify-job", "--entry", entry.submission_id[:8], *common, "--home", str(home)]
    argv += ["--full", "--no-progress", "--num-workers", "0", "--device", "cpu"]
    evaluator = Evaluator("current", prompts=PromptIndex(corpus["prompts"]), perception=RectanglePerception())
    assert verify_job(build_parser().parse_args(argv), evaluator=evaluator) == 0
    full = store.get_entry(entry.submission_id)
    assert full.verification is not None and full.verification.method == "full" and full.run is None
    assert "full re-score: all 200 images re-scored here" in capsys.readouterr().out
    assert verify_job(build_parser().parse_args(argv), evaluator=evaluator) == 0
    assert "nothing to re-score: it is verified" in capsys.readouterr().out
    assert (
        main(["leaderboard", "withdraw", "--entry", entry.submission_id, "--home", str(home), "--reason", "asked"]) == 0
    )
    assert store.get_entry(entry.submission_id).reason == "withdrawn by a maintainer: asked"
    assert main(["leaderboard", "withdraw", "--entry", entry.submission_id, "--home", str(home)]) == 1
    assert "it is withdrawn, which cannot become withdrawn" in capsys.readouterr().err


@pytest.mark.slow
def test_two_job_processes_at_once_leave_one_outcome_and_a_sound_database(tmp_path, corpus):
    """Two `verify-job` processes on one entry at the same time (the rectangle double as their
    scorer): the entry is verified once, and SQLite's integrity check is clean."""
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = stored_entry(store, corpus["results"])
    argv = [sys.executable, "-m", "tests.helpers.verify_job_double", "--", "leaderboard", "verify-job"]
    argv += ["--entry", entry.submission_id, "--store", store.locator(), "--dataset", str(corpus["dataset"])]
    argv += ["--images-from", str(corpus["images"]), "--no-progress"]
    runs = [
        subprocess.Popen([*argv, "--work-dir", str(tmp_path / f"w{i}")], cwd=REPO, stdout=subprocess.PIPE, text=True)
        for i in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    landed = store.get_entry(entry.submission_id)
    assert landed.status == "verified" and landed.run is None
    endings = sorted("dropped" if "outcome was dropped" in out else "landed" for out in outputs)
    assert endings in (["dropped", "landed"], ["landed", "landed"])  # the second may start after the first ended
    if endings == ["landed", "landed"]:
        assert any("nothing to check: it is verified" in out for out in outputs)
    with sqlite3.connect(store.path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.slow
def test_a_job_on_another_machine_verifies_an_entry_of_the_hub_results_repo(tmp_path, corpus):
    """The Space stores the entry in the results repo; a job elsewhere opens the repo by its locator,
    verifies the entry and commits the outcome; the Space's next look at the repo sees it."""
    from leaderboard.store.sqlite_store import HubStore
    from tests.helpers.hub_helpers import HubDouble

    remote = tmp_path / "remote"
    space = HubStore.from_repo("org/results", tmp_path / "space", api=HubDouble(remote))
    entry = stored_entry(space, corpus["results"])
    assert space.locator() == "hub:org/results"
    job_store = HubStore.from_repo("org/results", tmp_path / "job", api=HubDouble(remote))
    verified = verify_entry(
        context(job_store, corpus, tmp_path, CountingScorer(corpus["prompts"]), []), entry.submission_id
    )
    assert verified.status == "verified"
    assert space.get_entry(entry.submission_id).status == "received"  # the Space's clone, not read again yet
    space.refresh()
    assert space.get_entry(entry.submission_id) == verified


@pytest.mark.slow
def test_an_entry_whose_image_is_refused_for_its_size_ends_with_that_reason(tmp_path):
    """One image of 6,325 x 6,325 px = 40.005 MP, over the scorer's 40 MP (evaluator/images.py): its images
    are read at a pinned commit, so no later read can succeed; the entry ends rejected, saying why, instead of
    waiting for ever (and no check caught its account: nothing else of it is held)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    prompts = load_prompts(None)[::96]  # 50 prompts of every category and polarity
    folder = tmp_path / "images" / "org" / "toy-images"
    write_images_dataset(folder, prompts, SPLIT)
    path = folder / "images" / f"{SPLIT}-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    buffer = io.BytesIO()
    Image.new("1", (6325, 6325)).save(buffer, format="PNG")  # 1 bit a pixel: a small file, a huge image
    rows[7]["image"] = {"bytes": buffer.getvalue(), "path": None}
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    lines = write_results(tmp_path / "toy.jsonl", prompts, SPLIT, passed=False).read_text().splitlines()
    store = SQLiteStore(tmp_path / "lb.sqlite")
    entry = stored_entry(store, [ResultRecord.model_validate_json(line) for line in lines])
    setup = SpotCheckSetup(
        PromptIndex(prompts), CountingScorer(prompts), local_images(tmp_path / "images"), secret=b"s"
    )
    ended = verify_entry(VerifyContext(store, setup, tmp_path / "work", say=[].append), entry.submission_id)
    assert ended.status == "rejected" and ended.run is None
    refused = f"{rows[7]['prompt_id']} sample {rows[7]['sample_index']} is not a usable image"
    assert ended.reason.startswith(
        f"images refused: {refused}: image too large: 6325x6325 px = 40.0 MP (at most 40 MP)"
    )
    assert "cannot change: submit again with images the scorer accepts" in ended.reason
    assert ended.verification is None  # no check's catch: the account is not held for it
