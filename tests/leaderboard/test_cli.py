"""`negt2ibench leaderboard list` and `negt2ibench leaderboard recheck` against a SQLite store (offline)."""

from __future__ import annotations

import time

import pytest

from dataset_builder.loading import load_prompts
from evaluator.config import PRESETS
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.cli import main
from tests.helpers.perception_helpers import replace_model_perception
from tests.helpers.space_helpers import RectanglePerception, write_results

SPLIT = "toy_model"


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture
def rectangle_models(monkeypatch):
    """`recheck` builds the evaluator's models: hand it the perception double instead."""
    made = []

    def factory(config, device="auto", batch_size=8, dtype=None, weights_dir=None):
        made.append((config.name, device, weights_dir))
        return RectanglePerception()

    replace_model_perception(monkeypatch, factory)
    return made


@pytest.mark.slow
def test_recheck_advances_what_waits_and_says_what_it_did(tmp_path, prompts, rectangle_models, capsys):
    from evaluator.results import ResultRecord

    home = tmp_path / "home"
    store = SQLiteStore(home / "leaderboard.sqlite")
    assert main(["leaderboard", "recheck", "--home", str(home)]) == 0
    said = capsys.readouterr().out  # an empty store says so (it has nothing verified or rejected either)
    assert said.startswith("nothing to verify: SQLiteStore(") and said.rstrip().endswith("holds no submissions yet")

    results_file = write_results(tmp_path / "toy.jsonl", prompts, SPLIT, passed=False)
    results = [ResultRecord.model_validate_json(line) for line in results_file.read_text().splitlines()]
    received = Entry(
        model_name="Toy",
        model_key="toy",
        submitter="alice",
        status="received",
        created_at=time.time() - 60,
        images_repo="org/toy-images",
        images_revision="main",
        config_hash=PRESETS["current"].config_hash,
    )
    store.add_submission(received, results)
    store.add_submission(
        Entry(model_name="Done", model_key="done", submitter="bob", status="verified", created_at=time.time() - 30)
    )

    assert main(["leaderboard", "recheck", "--home", str(home), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert f"spot-checking 1 submission(s) in SQLiteStore('{home / 'leaderboard.sqlite'}') ..." in out
    entry = store.get_entry(received.submission_id)
    assert (entry.status, entry.attempts) == ("pending", 1) and entry.row is not None  # validated, then waits
    assert f"{entry.submission_id[:8]}  Toy: received → pending: {entry.reason}" in out
    assert "images not reachable" in entry.reason and out.rstrip().endswith("0 settled, 1 still waiting")
    assert rectangle_models == []  # the images were unreachable: no model was loaded for nothing

    assert main(["leaderboard", "list", "--home", str(home)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == f"2 submission(s) in SQLiteStore('{home / 'leaderboard.sqlite'}')"
    assert [line.split("  ")[2:4] for line in listed[1:]] == [["Toy", "pending"], ["Done", "verified"]]


def test_leaderboard_needs_an_action(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["leaderboard"])
    assert exited.value.code == 2 and "ACTION" in capsys.readouterr().err


@pytest.mark.slow
def test_verify_full_rescores_every_image_and_ranks_the_projects_numbers(tmp_path, prompts, rectangle_models, capsys):
    """`leaderboard verify --full`: every image re-scored through `score`'s engine (resumable), the
    re-score's numbers ranked, the submitted ones kept apart, and a second run finds nothing to do."""
    from evaluator.results import ResultRecord
    from tests.helpers.space_helpers import write_images_dataset

    home = tmp_path / "home"
    store = SQLiteStore(home / "leaderboard.sqlite")
    chosen = prompts[:50]  # a small corpus: --dataset below gives the same 50 prompts
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text("".join(p.model_dump_json() + "\n" for p in chosen))
    write_images_dataset(tmp_path / "images" / "org" / "toy-images", chosen, SPLIT)
    # the file claims passes on its first 20 images; the re-score (flat images: nothing found) fails all 200
    claims = write_results(tmp_path / "toy.jsonl", chosen, SPLIT, passed=lambda p, s: chosen.index(p) < 5)
    results = [ResultRecord.model_validate_json(line) for line in claims.read_text().splitlines()]
    entry = Entry(
        model_name="Toy",
        model_key="toy",
        submitter="alice",
        status="received",
        images_repo="org/toy-images",
        images_revision="main",
        config_hash=PRESETS["current"].config_hash,
    )
    store.add_submission(entry, results)
    args = ["leaderboard", "verify", "--full", "--home", str(home), "--dataset", str(dataset), "--device", "cpu"]
    args += ["--images-from", str(tmp_path / "images"), "--no-progress", "--num-workers", "0"]
    assert main(args) == 0
    out = capsys.readouterr().out
    verified = store.get_entry(entry.submission_id)
    assert verified.status == "verified" and verified.verification.method == "full"
    assert (verified.verification.checked, verified.verification.disagreements) == (200, 20)
    assert verified.row["overall"] == 0.0 and verified.claimed_row["overall"] == 10.0  # ours ranked, theirs kept
    assert "the submitted file disagreed on 20 (10.0%)" in verified.reason and verified.reason in out
    rescored = (home / "verify" / f"{entry.submission_id}.jsonl").read_text().splitlines()
    assert len(rescored) == 200
    assert main(args) == 0  # nothing left: fully re-scored entries are not taken again
    assert "0 submission(s) to re-score in full" in capsys.readouterr().out


LONG_ID = "0123abcd" * 625  # 5,000 characters
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b[31m0123abcd"  # clear the screen, set the title, red
PUBLISH = ["--model-repo", "org/model", "--space-url", "https://hf.co/spaces/o/s", "--dataset-id", "org/bench"]


@pytest.mark.parametrize(
    "command",
    [
        ["verify-job", "--entry"],
        ["withdraw", "--entry"],
        ["publish", *PUBLISH, "--dataset-revision", "0" * 40, "--dry-run", "--"],
    ],
    ids=["verify-job", "withdraw", "publish"],
)
def test_a_typed_entry_id_is_cut_and_escaped_in_its_error(command, tmp_path, capsys):
    """An over-long entry id is cut in its error as the app cuts it (`MAX_ENTRY_ID`), and one with
    escape sequences reaches the terminal as their escapes; one line either way."""
    from leaderboard.text.submitted_names import MAX_ENTRY_ID

    home = ["--home", str(tmp_path / "home")]
    for typed in (LONG_ID, ESCAPES):
        argv = ["leaderboard", command[0], *home, *command[1:], typed]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert "\x1b" not in err and "\x07" not in err
        if typed is LONG_ID:
            assert LONG_ID[:MAX_ENTRY_ID] + "… (5,000 characters)" in err
            assert LONG_ID[: MAX_ENTRY_ID + 1] not in err and len(err) < 400
        else:
            assert "\\x1b[2J\\x1b]0;pwned\\x07\\x1b[31m0123abcd" in err
