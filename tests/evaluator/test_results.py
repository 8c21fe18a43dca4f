"""One verdict for a result record (evaluator/results.py `record_verdict`, `is_error_row`), the same
for every reader: the report, the leaderboard's holds, the spot check, the Gallery and Compare, the
Score tab's summary and the frozen twin the report reads.

An `error` set to "" is an error row like any other: docs/records.md says `error` is "set when the
image could not be scored ..., with the reason", so being set is what counts, never its text.
"""

from __future__ import annotations

import pytest

from dataset_builder.loading import load_prompts
from evaluator.report import table3
from evaluator.results import VERDICTS, ResultRecord, is_error_row, parse_frozen_result, record_verdict
from leaderboard.checks.compared_fields import disagreement, shown_numbers
from leaderboard.checks.full_rescore_policy import hold_reason
from leaderboard.store.sqlite_store import Entry
from space.verdict_views import verdict_summary
from space.verified_images.verified_views import gallery_row
from tests.helpers.space_helpers import result_line

PROMPT_ID = "color_pos1_neg1_000"


@pytest.fixture(scope="module")
def prompt():
    return next(p for p in load_prompts(None) if p.prompt_id == PROMPT_ID)


def records(prompt) -> dict[str, ResultRecord]:
    passed = ResultRecord.model_validate(result_line(prompt, 0, "toy", passed=True))
    failed = ResultRecord.model_validate(result_line(prompt, 1, "toy", passed=False))
    bare = {"objects": [], "statements": [], "score": None, "passed": False}
    empty = failed.model_copy(update={"error": "", "sample_index": 2, **bare})
    said = failed.model_copy(update={"error": "image could not be decoded", "sample_index": 3, **bare})
    claimed = passed.model_copy(update={"error": "", "sample_index": 3})  # an error row that says passed
    return {"passed": passed, "failed": failed, "empty": empty, "said": said, "claimed": claimed}


def test_the_verdict_is_error_for_any_error_text_else_pass_or_fail(prompt):
    shown = {name: record_verdict(record) for name, record in records(prompt).items()}
    assert shown == {"passed": "pass", "failed": "fail", "empty": "error", "said": "error", "claimed": "error"}
    assert set(shown.values()) == set(VERDICTS)
    assert [is_error_row(r) for r in records(prompt).values()] == [False, False, True, True, True]


def test_an_empty_error_is_an_error_row_for_every_reader(prompt):
    rows = records(prompt)
    empty, failed, said = rows["empty"], rows["failed"], rows["said"]
    # the Gallery and Compare (their rows), the Score tab's summary (the Gallery's full view)
    assert gallery_row(empty).verdict == "error"
    assert "<span class='verdict-error'>ERROR</span>" in verdict_summary(prompt, empty)
    assert "<span class='verdict-fail'>FAIL</span>" in verdict_summary(prompt, failed)
    # the spot check: "" against a scored image disagrees; against another error row it agrees
    assert "submitted error, re-scored fail" in disagreement(empty, failed.model_copy(update={"sample_index": 2}))
    assert disagreement(empty, said.model_copy(update={"sample_index": 2})) == ""
    # the report (and so the leaderboard's numbers): left out of every accuracy, counted as an error
    (row,) = table3([rows["passed"], failed, empty]).values()
    assert (row["images"], row["passed"], row["errors"]) == (2, 1, 1)
    board, _ = shown_numbers([rows["passed"], failed, empty])
    assert board["images"] == 2
    # the holds: a file with such a row is held for a full re-score
    entry = Entry(model_name="Toy", model_key="toy", submitter="dave")
    assert hold_reason([entry], entry, [failed, empty]).startswith("1 of its 2 images are error rows")


def test_the_frozen_twin_has_the_same_verdict(prompt):
    for record in records(prompt).values():
        twin = parse_frozen_result(record.model_dump_json())
        assert record_verdict(twin) == record_verdict(record) and is_error_row(twin) == is_error_row(record)


def test_scored_now_is_the_clock_or_the_fixed_moment_of_source_date_epoch(monkeypatch):
    import re
    from datetime import datetime, timezone

    from evaluator.results import scored_now

    assert scored_now() == "2026-01-01T00:00:00Z"  # tests/conftest.py fixes SOURCE_DATE_EPOCH
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert scored_now() == "1970-01-01T00:00:00Z"
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    before = datetime.now(timezone.utc).replace(microsecond=0)
    stamp = scored_now()
    after = datetime.now(timezone.utc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    assert before <= datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) <= after


def test_a_record_without_scored_at_keeps_its_bytes_and_one_with_it_round_trips():
    from evaluator.results import ResultRecord

    line = {
        "prompt_id": "p", "model_key": "m", "sample_index": 0, "passed": False, "objects": [], "statements": [],
        "evaluator_version": "1.1.0", "config_hash": "0" * 16, "error": None, "evaluator": "negt2ibench",
        "score": None,
    }  # fmt: skip
    old = ResultRecord.model_validate(line)
    assert "scored_at" not in old.model_dump_json()  # a record without the field keeps its exact bytes
    stamped = ResultRecord.model_validate({**line, "scored_at": "2026-12-03T17:19:00Z"})
    assert ResultRecord.model_validate_json(stamped.model_dump_json()) == stamped
