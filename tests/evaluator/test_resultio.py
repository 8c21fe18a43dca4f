"""Result files: line-numbered errors, torn last lines, resume, version guard, locking, merging."""

from __future__ import annotations

import logging
import os

import pytest

from evaluator.config import EVALUATOR_VERSION, PRESETS
from evaluator.resultio import ResultFileError, ResultWriter, merge_results, read_results
from evaluator.results import ObjectResult, ResultRecord, StatementResult
from evaluator.verdict import error_record
from negt2ibench.core.errors import UserError

CURRENT_HASH = PRESETS["current"].config_hash


def record(
    prompt_id: str = "color_pos1_neg0_000",
    sample: int = 0,
    model: str = "toy",
    passed: bool = True,
    config_hash: str = CURRENT_HASH,
    version: str = EVALUATOR_VERSION,
) -> ResultRecord:
    return ResultRecord(
        prompt_id=prompt_id,
        model_key=model,
        sample_index=sample,
        passed=passed,
        objects=[ObjectResult(name="cup", present=True, confidence=0.9, box=[1.0, 2.0, 3.0, 4.0])],
        statements=[
            StatementResult(
                index=0,
                polarity="positive",
                satisfied=passed,
                cause=None if passed else "wrong_value",
                observed=["red"],
                measurements={"max_score": 30.5},
            )
        ],
        evaluator_version=version,
        config_hash=config_hash,
    )


def write_lines(path, *lines: str) -> None:
    path.write_text("".join(lines), encoding="utf-8")


def line(r: ResultRecord) -> str:
    return r.model_dump_json() + "\n"


def test_round_trip_and_resume_skips_written_keys(tmp_path):
    path = tmp_path / "out" / "results.jsonl"
    first = [record(sample=i) for i in range(3)]
    with ResultWriter(path) as writer:
        assert writer.done == set()
        assert [writer.write(r) for r in first] == [True, True, True]
        assert writer.write(first[0]) is False  # same key again in one run
    assert read_results(path) == first
    with ResultWriter(path) as writer:  # a re-run
        assert writer.done == {("toy", "color_pos1_neg0_000", i) for i in range(3)}
        assert writer.write(record(sample=1, passed=False)) is False
        assert writer.write(record(sample=3)) is True
        assert writer.written == 1
    assert [r.sample_index for r in read_results(path)] == [0, 1, 2, 3]
    assert read_results(path)[1].passed  # the first verdict stays


def test_malformed_lines_are_reported_with_their_line_number(tmp_path):
    path = tmp_path / "r.jsonl"
    write_lines(path, line(record(sample=0)), "{not json\n", line(record(sample=1)))
    with pytest.raises(ResultFileError, match=r"r\.jsonl:2: not JSON"):
        read_results(path)
    with pytest.raises(ResultFileError, match=r":2: not JSON"):
        read_results(path, strict=False)  # only a torn LAST line may be dropped
    write_lines(path, line(record(sample=0)), "\n", '{"prompt_id": "x"}\n')
    with pytest.raises(ResultFileError, match=r"r\.jsonl:3: not a result record \(model_key: Field required"):
        read_results(path)
    with pytest.raises(ResultFileError, match=r":3:"):
        ResultWriter(path).open()  # the writer refuses too and leaves the file as it is
    assert path.read_text().endswith('{"prompt_id": "x"}\n')


def test_result_file_errors_are_user_errors_and_value_errors(tmp_path):
    with pytest.raises(ResultFileError) as caught:
        read_results(tmp_path / "absent.jsonl")
    assert isinstance(caught.value, UserError) and isinstance(caught.value, ValueError)
    assert "no such result file" in str(caught.value)
    with pytest.raises(ResultFileError, match="is a folder"):
        read_results(tmp_path)
    with pytest.raises(ResultFileError, match="cannot open for appending"):
        ResultWriter(tmp_path).open()


def test_torn_last_line_strict_and_lenient(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    torn = line(record(sample=1))[:40]
    write_lines(path, line(record(sample=0)), torn)
    with pytest.raises(ResultFileError, match=r"r\.jsonl:2: torn last line \(40 bytes without a newline"):
        read_results(path)
    with caplog.at_level(logging.WARNING, logger="evaluator.resultio"):
        assert read_results(path, strict=False) == [record(sample=0)]
    assert "torn last line" in caplog.text


def test_writer_cuts_a_torn_line_and_appends_cleanly(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    write_lines(path, line(record(sample=0)), line(record(sample=1))[:-30])
    with caplog.at_level(logging.WARNING, logger="evaluator.resultio"):
        with ResultWriter(path) as writer:
            assert writer.done == {("toy", "color_pos1_neg0_000", 0)}  # the torn record is not done
            assert writer.write(record(sample=1))
    assert "cutting away" in caplog.text
    assert read_results(path) == [record(sample=0), record(sample=1)]


def test_a_whole_last_record_without_newline_is_kept(tmp_path):
    path = tmp_path / "r.jsonl"
    write_lines(path, line(record(sample=0)), line(record(sample=1)).rstrip("\n"))
    assert len(read_results(path)) == 2
    with ResultWriter(path) as writer:
        assert len(writer.done) == 2
        writer.write(record(sample=2))
    assert [r.sample_index for r in read_results(path)] == [0, 1, 2]


def test_writer_refuses_another_evaluator_version_or_config(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultWriter(path) as writer:
        writer.write(record(sample=0))
        with pytest.raises(ResultFileError, match=f"config .* but this record is evaluator {EVALUATOR_VERSION} config"):
            writer.write(record(sample=1, config_hash=PRESETS["previous"].config_hash))
    with ResultWriter(path) as writer:
        with pytest.raises(ResultFileError, match=f"holds results of evaluator {EVALUATOR_VERSION}"):
            writer.write(record(sample=1, version="2.0.0"))
        assert writer.write(error_record("color_pos1_neg0_000", "toy", 1, "unreadable image"))
    assert len(read_results(path)) == 2


def test_writer_refuses_a_file_that_already_mixes_configs(tmp_path):
    path = tmp_path / "r.jsonl"
    write_lines(path, line(record(sample=0)), line(record(sample=1, config_hash="0" * 16)))
    with pytest.raises(ResultFileError, match="several evaluator versions/configs"):
        ResultWriter(path).open()


def test_two_writers_on_one_file_are_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultWriter(path):
        with pytest.raises(ResultFileError, match="another process is writing"):
            ResultWriter(path).open()
    with ResultWriter(path) as writer:  # the lock is released on close
        assert writer.write(record())


def _hold_until(started, release) -> None:
    started.set()  # the fork hooks have run by now
    release.wait(60)


def test_a_forked_child_does_not_keep_the_file_locked(tmp_path):
    """A loader worker forked while a writer is open (and still alive when its writer is gone,
    e.g. after the run was killed) must not keep the next run off the file."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    started, release = context.Event(), context.Event()
    path = tmp_path / "r.jsonl"
    writer = ResultWriter(path)
    writer.open()
    child = context.Process(target=_hold_until, args=(started, release))
    child.start()
    try:
        assert started.wait(60)
        writer.close()  # the writer is gone, the child lives on
        assert child.is_alive()
        with ResultWriter(path) as again:
            assert again.write(record())
    finally:
        release.set()
        child.join(60)
    assert child.exitcode == 0
    assert read_results(path) == [record()]


def test_write_needs_an_open_writer(tmp_path):
    with pytest.raises(RuntimeError, match="not open"):
        ResultWriter(tmp_path / "r.jsonl").write(record())


def test_fsync_option_writes_through(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    with ResultWriter(tmp_path / "r.jsonl", fsync=True) as writer:
        writer.write(record())
    assert len(synced) == 1


def test_merge_dedupes_sorts_and_reports_conflicts(tmp_path):
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "merged" / "all.jsonl"
    write_lines(a, line(record(sample=2)), line(record(sample=0)), line(record(sample=1, model="alpha")))
    write_lines(b, line(record(sample=0)), line(record(sample=2, passed=False)), line(record(sample=3)))
    summary = merge_results([a, b], out)
    assert (summary.records_in, summary.records_out, summary.duplicates) == (6, 4, 1)
    assert summary.conflicts == {("toy", "color_pos1_neg0_000", 2): [str(a), str(b)]}
    merged = read_results(out)
    assert [r.key for r in merged] == sorted(r.key for r in merged)
    assert next(r for r in merged if r.key == ("toy", "color_pos1_neg0_000", 2)).passed  # first file wins
    assert "1 conflicting key" in summary.describe()


def test_merge_refuses_mixed_configs_existing_output_and_torn_inputs(tmp_path):
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    write_lines(a, line(record(sample=0)))
    write_lines(b, line(record(sample=1, config_hash="f" * 16)))
    with pytest.raises(ResultFileError, match="different evaluator versions/configs"):
        merge_results([a, b], out)
    assert not out.exists()
    write_lines(out, "keep me\n")
    with pytest.raises(ResultFileError, match="exists"):
        merge_results([a], out)
    assert out.read_text() == "keep me\n"
    write_lines(b, line(record(sample=1)), line(record(sample=2))[:25])
    with pytest.raises(ResultFileError, match="torn last line"):
        merge_results([a, b], out, overwrite=True)
    summary = merge_results([a, b], out, strict=False, overwrite=True)
    assert summary.records_out == 2 and len(summary.torn_dropped) == 1
    with pytest.raises(ResultFileError, match="at least one"):
        merge_results([], out)


def test_merge_into_one_of_its_inputs(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_lines(a, line(record(sample=0)))
    write_lines(b, line(record(sample=1)))
    merge_results([a, b], a)
    assert [r.sample_index for r in read_results(a)] == [0, 1]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind
