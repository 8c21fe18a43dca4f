"""The Submit tab's handler as the app calls it (space/tabs/submit/submit_handlers.py): one submission at a time per
client, an hourly limit on uploads refused as invalid files, and messages written for the Space
(no Python option; a cut message keeps its last clause; the whole text in the log)."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import pytest

import leaderboard.intake.submissions as submissions_module
from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from leaderboard.intake.submissions import NOT_COUNTED, SubmissionLimits, hub_images
from leaderboard.store.sqlite_store import SQLiteStore
from space.app import Handlers
from space.error_messages import error_markdown, error_reply
from space.shared_state import WorkDir
from tests.helpers.space_helpers import write_results


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)[:10]


@pytest.fixture
def handlers(prompts, tmp_path):
    on = Handlers(
        prompts=prompts,
        index=PromptIndex(prompts),
        store=SQLiteStore(tmp_path / "lb.sqlite"),
        score_on_gpu=None,  # type: ignore[arg-type]
        config=PRESETS["current"],
        open_images=hub_images,
        limits=SubmissionLimits(invalid_per_hour=3),
        require_login=False,
        work_dir=WorkDir(),
        resolve_revision=lambda repo, revision: "c" * 40,  # the Hub's commit of the revision (offline here)
    )
    yield on
    on.work_dir.cleanup()


def request(host: str):
    return SimpleNamespace(username=None, client=SimpleNamespace(host=host))


def send(on: Handlers, path, name: str, host: str) -> str:
    status, _ = on.submit(str(path), name, "", "org/toy", "main", request(host))
    return status


def shown(markdown: str) -> str:
    import re

    return re.sub(r"\\(.)", r"\1", markdown)


def test_a_torn_last_line_is_explained_for_the_space(handlers, prompts, tmp_path):
    path = write_results(tmp_path / "torn.jsonl", prompts, "toy_model")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # a writer killed in the middle of the last record
    status = shown(send(handlers, path, "Torn Model", "192.0.2.1"))
    assert "malformed results file: torn.jsonl:40: torn last line" in status
    assert "the file ends in the middle of a record" in status and "finish the run" in status
    assert "strict" not in status and "=False" not in status and str(tmp_path) not in status
    assert status.endswith(NOT_COUNTED)


def test_a_cut_message_keeps_its_last_clause_and_the_log_keeps_all(handlers, prompts, tmp_path, caplog):
    # a prompt id of 528 characters is quoted clipped, and the refusal ends as it should
    lines = write_results(tmp_path / "ids.jsonl", prompts, "toy_model").read_text().splitlines()
    long_id = "color_pos1_neg0_" + "9" * 512
    lines[0] = lines[0].replace(prompts[0].prompt_id, long_id, 1)
    (tmp_path / "ids.jsonl").write_text("\n".join(lines) + "\n")
    status = shown(send(handlers, tmp_path / "ids.jsonl", "Long Id Model", "192.0.2.2"))
    assert "1 records are not benchmark images (e.g. prompt 'color_pos1_neg0_999" in status
    assert "(528 characters)" in status and status.endswith(NOT_COUNTED)
    # any message longer than what is shown: its start and its last clause, the whole of it logged
    message = "not submitted: " + "x" * 2000 + f"; {NOT_COUNTED}"
    with caplog.at_level(logging.INFO, logger="space.error_messages"):
        reply = error_reply(message)
    assert len(reply) < 700 and shown(reply).endswith(f"…; {NOT_COUNTED}") and reply == error_markdown(message)
    assert any(message in record.getMessage() for record in caplog.records)


def gate_loading(monkeypatch, marker: str):
    """Make `submit`'s reading of files named *marker* wait until released; count every read."""
    entered, release, reads = threading.Event(), threading.Event(), []
    original = submissions_module._load_results

    def load(path, *args):
        reads.append(path.name)
        if marker in path.name:
            entered.set()
            assert release.wait(120)
        return original(path, *args)

    monkeypatch.setattr(submissions_module, "_load_results", load)
    return entered, release, reads


def test_one_submission_at_a_time_per_client(handlers, prompts, tmp_path, monkeypatch):
    flood = tmp_path / "flood.jsonl"
    flood.write_text("{not json\n")
    valid = write_results(tmp_path / "valid.jsonl", prompts, "toy_model")
    entered, release, reads = gate_loading(monkeypatch, "flood")
    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(send(handlers, flood, "Flood", "198.51.100.1")))
    first.start()
    try:
        assert entered.wait(60)  # the flooder's first upload is being read
        for _ in range(5):
            refused = shown(send(handlers, flood, "Flood", "198.51.100.1"))
            assert "you already have a submission being checked here" in refused and refused.endswith(NOT_COUNTED)
        other = send(handlers, valid, "Other Model", "198.51.100.2")  # another client: not behind the flooder
        assert "status **validated**" in other and not release.is_set()
        assert reads == ["flood.jsonl", "valid.jsonl"]  # the refused five were never read
    finally:
        release.set()
        first.join(60)
    assert "malformed results file" in shown(answers[0])


def test_invalid_uploads_count_toward_an_hourly_limit_per_client(handlers, prompts, tmp_path, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt_id": "color_pos1_neg0_000"}\n')
    valid = write_results(tmp_path / "valid.jsonl", prompts, "toy_model")
    _, release, reads = gate_loading(monkeypatch, "never")
    release.set()
    for _ in range(3):
        assert "malformed results file: bad.jsonl:1: not a result record" in shown(
            send(handlers, bad, "M", "192.0.2.9")
        )
    limited = shown(send(handlers, valid, "Mallory Model", "192.0.2.9"))  # even a valid file waits for the hour
    assert "3 of your uploads in the last hour were refused as invalid files; try again after" in limited
    assert limited.endswith(NOT_COUNTED) and reads == ["bad.jsonl"] * 3  # refused before reading
    assert "status **validated**" in send(handlers, valid, "Other Model", "192.0.2.10")
    assert handlers.store.count_recent(handlers.store.list_entries()[0].submitter, 0) == 1  # nothing else stored
