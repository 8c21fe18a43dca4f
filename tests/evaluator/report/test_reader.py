"""The report's reader and tables (bulk reads with the collector paused and the records frozen,
counts over arrays, the order-to-space sides over all pairs at once) give the records and notes of
the plain per-record reader, and every report file byte for byte as the reference fingerprints say.

`tests/data/report_fingerprints.json` holds the fingerprints the plain per-record reader and report
made of one seeded sweep (`tests.helpers.report_helpers.sweep_files`: objects with boxes, an error
row, a bad line, a stray image, a second result of one image, a torn last line); its `made_by` says
how, and the PNGs' are those of the Okabe-Ito palette under requirements.txt's matplotlib (3.11.2;
the Python 3.10 set has 3.10.9, whose PNG bytes differ)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from evaluator.report import read_report_inputs
from evaluator.results import ResultRecord, parse_frozen_result, thaw_result
from negt2ibench.cli import main
from tests.helpers.report_helpers import sweep_files

BEFORE = json.loads((Path(__file__).resolve().parents[2] / "data" / "report_fingerprints.json").read_text())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_as_before(written: dict[str, str]) -> None:
    """Every file of the reference report, byte for byte; the PNGs only under the matplotlib they were
    drawn with (its renderer decides their bytes: png_note), else the same PNG files are there."""
    import matplotlib

    expected = BEFORE["report_files_sha256"]
    assert written.keys() == expected.keys()
    if matplotlib.__version__ != BEFORE["png_matplotlib"]:
        written, expected = ({k: v for k, v in d.items() if not k.endswith(".png")} for d in (written, expected))
    assert written == expected


def test_the_reader_gives_the_records_and_notes_of_the_reader_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = sweep_files(tmp_path)
    inputs = read_report_inputs(files)
    assert len(inputs.records) == BEFORE["records"] == 1602
    as_models = [thaw_result(record) for record in inputs.records]  # the reader keeps frozen twins
    assert sha256("".join(r.model_dump_json() + "\n" for r in as_models).encode()) == BEFORE["records_sha256"]
    assert sha256(json.dumps(inputs.to_dict()).encode()) == BEFORE["inputs_sha256"]
    assert gc.isenabled()  # paused while parsing, on again after
    # Each one the record its line is on its own (the first file's first line: the first key of model_0).
    first_line = Path(files[0]).read_bytes().splitlines()[0]
    assert ResultRecord.model_validate_json(first_line) in as_models
    assert parse_frozen_result(first_line) in inputs.records


def test_report_writes_the_files_the_report_before_wrote_byte_for_byte(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    files = sweep_files(tmp_path)
    assert main(["report", *files, "--out", "report", "--bootstrap", "200"]) == 0
    written = {path.name: sha256(path.read_bytes()) for path in sorted((tmp_path / "report").iterdir())}
    assert_as_before(written)
    assert "8 line(s) left out of the report" in capsys.readouterr().out  # four per file
    assert gc.isenabled() and gc.get_freeze_count() > 0  # what `report` read was frozen, the collector back on


def _report_of_sweep(tmp_path):
    from evaluator.report import build_report, report_tables
    from generation.registry import table3_models

    inputs = read_report_inputs(sweep_files(tmp_path))
    report = build_report(inputs.records, n_resamples=200, inputs=inputs.to_dict())
    return report, report_tables(report, table3_models())


def _hashes(folder: Path) -> dict[str, str]:
    return {path.name: sha256(path.read_bytes()) for path in sorted(folder.iterdir())}


def test_the_statement_plot_drawn_in_the_worker_process_is_the_same_file(tmp_path, monkeypatch):
    from evaluator.report.document import plot_worker, write_report

    monkeypatch.chdir(tmp_path)
    report, tables = _report_of_sweep(tmp_path)
    with plot_worker() as worker:
        write_report(report, tmp_path / "report", tables, worker)
        assert worker.submit(os.getpid).result() != os.getpid()  # drawn there: the worker is whole
    assert_as_before(_hashes(tmp_path / "report"))


def test_a_worker_that_dies_leaves_the_plot_to_the_report_itself(tmp_path, monkeypatch):
    import multiprocessing
    from concurrent.futures import BrokenExecutor, ProcessPoolExecutor

    from evaluator.report.document import write_report

    monkeypatch.chdir(tmp_path)
    report, tables = _report_of_sweep(tmp_path)
    spawn = multiprocessing.get_context("spawn")
    # Its initializer fails (int("x")), so the pool breaks: first the drawing's result, then its submission.
    with ProcessPoolExecutor(1, mp_context=spawn, initializer=int, initargs=("x",)) as broken:
        write_report(report, tmp_path / "first", tables, broken)
        try:
            broken.submit(int, "1")
        except BrokenExecutor:
            pass
        write_report(report, tmp_path / "second", tables, broken)
    assert _hashes(tmp_path / "first") == _hashes(tmp_path / "second")
    assert_as_before(_hashes(tmp_path / "first"))


def test_report_as_a_program_prints_everything_and_exits_at_once_with_its_files(tmp_path):
    # `negt2ibench report` ends its process without freeing what it read (`exit_at_once`): what it
    # printed to a pipe (block-buffered) still arrives whole, and the files are the same.

    files = sweep_files(tmp_path)
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "negt2ibench", "report", *files, "--out", "report", "--bootstrap", "200"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(str(Path("report") / "ots.png"))  # the last line printed
    assert_as_before(_hashes(tmp_path / "report"))
