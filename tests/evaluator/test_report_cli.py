"""`negt2ibench report`: files written, stdout, and clear errors for bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from negt2ibench.cli import main
from tests.helpers.report_helpers import hand_results


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(record.model_dump_json() + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def result_files(tmp_path: Path) -> list[Path]:
    records = hand_results()
    return [
        write_jsonl(tmp_path / "alpha.jsonl", [r for r in records if r.model_key == "alpha"]),
        write_jsonl(tmp_path / "beta.jsonl", [r for r in records if r.model_key == "beta"]),
    ]


def test_report_writes_markdown_csv_json_and_png(result_files, tmp_path, capsys):
    out = tmp_path / "report"
    code = main(["report", *map(str, result_files), "--out", str(out), "--bootstrap", "200", "--seed", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    # stdout: Table 3 in Markdown, then the files written
    assert "| **Model** | **1:0** | **0:1** |" in captured.out
    assert "| *Other* |" in captured.out  # test models are not in the generation registry: family "Other"
    assert "| alpha † | 50.0 | 40.0 |" in captured.out
    assert "wrote 14 files" in captured.out

    names = {path.name for path in out.iterdir()}
    assert {
        "report.md",
        "report.json",
        "table3.csv",
        "statement_accuracy.csv",
        "failure_causes_by_setting.csv",
        "failure_causes_by_category.csv",
        "forbidden_share.csv",
        "dead_zone.csv",
        "matched_deltas.csv",
        "ots.csv",
        "accuracy_by_setting.png",
        "statement_accuracy.png",
        "failure_causes.png",
        "ots.png",
    } == names
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000

    data = json.loads((out / "report.json").read_text())
    assert data["models"] == ["alpha", "beta"]
    assert data["options"]["bootstrap"] == 200 and data["options"]["seed"] == 3
    assert data["table3"]["alpha"]["overall"] == pytest.approx(40.0)
    assert data["table3"]["beta"]["settings"]["0:1"] is None

    with (out / "table3.csv").open() as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    assert float(rows["alpha"]["1:0"]) == pytest.approx(50.0)
    assert rows["alpha"]["2:0"] == ""  # no images in that setting
    assert rows["alpha"]["images"] == "10" and rows["alpha"]["errors"] == "1" and rows["alpha"]["complete"] == "False"

    with (out / "dead_zone.csv").open() as handle:
        dead = [row for row in csv.DictReader(handle) if row["model"] == "(all models)" and row["category"] == "total"]
    assert dead[0]["evaluable"] == "4" and dead[0]["dead_zone_passes"] == "2"

    markdown = (out / "report.md").read_text()
    assert "## Dead-zone passes among negated relations (Table 19)" in markdown


@pytest.mark.slow
def test_report_is_deterministic_for_a_seed(result_files, tmp_path, capsys):
    outputs = []
    for name in ("one", "two"):
        assert main(["report", *map(str, result_files), "--out", str(tmp_path / name), "--bootstrap", "100"]) == 0
        outputs.append((tmp_path / name / "matched_deltas.csv").read_text())
    capsys.readouterr()
    assert outputs[0] == outputs[1]


def test_a_malformed_line_is_left_out_and_named_not_fatal(result_files, tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    lines = result_files[0].read_text().splitlines()
    broken.write_text("\n".join([lines[0], '{"prompt_id": "color_pos1_neg0_000", "passed": tru', *lines[1:]]) + "\n")
    code = main(["report", str(result_files[1]), str(broken), "--out", str(tmp_path / "out"), "--bootstrap", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"1 line(s) left out of the report:\n  {broken}:2: not JSON" in captured.out
    assert "1 error row(s): images not scored, counted in coverage:" in captured.out
    assert f"{broken}:6 (color_pos1_neg0_001 sample 0): CUDA out of memory" in captured.out
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [note["where"] for note in data["inputs"]["left_out"]] == [f"{broken}:2"]
    assert data["inputs"]["records"] == len(lines) + len(result_files[1].read_text().splitlines())  # all the rest
    assert f"| left out | {broken}:2 |" in (tmp_path / "out" / "report.md").read_text()


def test_mixed_config_hash_for_one_model_is_a_clear_error(tmp_path, capsys):
    records = [r for r in hand_results() if r.model_key == "alpha"]
    first = write_jsonl(tmp_path / "a1.jsonl", records[:5])
    second = write_jsonl(tmp_path / "a2.jsonl", [r.model_copy(update={"config_hash": "other"}) for r in records[5:]])
    code = main(["report", str(first), str(second), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "model 'alpha' was scored by different evaluator configurations" in err
    assert f"config h1 (e.g. {first}:1)" in err and f"config other (e.g. {second}:1)" in err
    assert not (tmp_path / "out").exists()


def test_one_model_two_configurations_over_the_same_images_is_refused_not_dropped(tmp_path, capsys):
    """`report current.jsonl no_sam.jsonl` for one model key over the same images is refused (exit 1),
    not answered by keeping the first file and leaving the second out as "another result of this
    image". The frozen records are a real run of both presets on the same 12 images, model key `frozen`."""
    frozen = Path(__file__).resolve().parents[1] / "data" / "frozen_records"  # tests.helpers.frozen_records
    current, no_sam = frozen / "current.jsonl", frozen / "no_sam.jsonl"
    code = main(["report", str(current), str(no_sam), "--out", str(tmp_path / "out"), "--bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("error: model 'frozen' was scored by different evaluator configurations")
    assert f"(e.g. {current}:1)" in err and f"(e.g. {no_sam}:1)" in err  # the first line of each
    assert "report each configuration on its own" in err
    assert not (tmp_path / "out").exists() and "Model" not in out
    # each file alone reports
    assert main(["report", str(no_sam), "--out", str(tmp_path / "alone"), "--bootstrap", "0"]) == 0


def test_missing_file_and_bad_flags(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out")]) == 1
    assert "nope.jsonl: no such result file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path), "--bootstrap", "-5"])
    assert exit_info.value.code == 2
    assert "must be a non-negative integer" in capsys.readouterr().err


@pytest.mark.slow
def test_unknown_prompt_ids_are_left_out_and_named_and_only_nothing_left_is_fatal(tmp_path, capsys):
    odd = hand_results()[0].model_copy(update={"prompt_id": "geneval_0001"})
    path = write_jsonl(tmp_path / "odd.jsonl", [odd])
    assert main(["report", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: nothing to report in {path}: 1 line(s) left out, e.g. {path}:1 (geneval_0001")
    assert "'geneval_0001' is not a NegT2IBench id" in err and not (tmp_path / "out").exists()

    stray = hand_results()[0].model_copy(update={"prompt_id": "color_pos0_neg1_999", "error": "unknown prompt id"})
    path = write_jsonl(tmp_path / "with_stray.jsonl", [*hand_results(), stray])
    assert main(["report", str(path), "--out", str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert f"{path}:{len(hand_results()) + 1} (color_pos0_neg1_999 sample 0): not a benchmark image" in out
    assert "prompt number 999 is outside 000–099" in out


def test_report_help_lists_flags(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = capsys.readouterr().out
    for flag in ("--out", "--bootstrap", "--seed", "--samples", "RESULTS.jsonl"):
        assert flag in text


@pytest.mark.slow
def test_a_report_replaces_its_folder_whole_and_keeps_the_users_other_files(
    result_files, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "report"
    assert main(["report", str(result_files[0]), "--out", str(out), "--bootstrap", "0"]) == 0
    (out / "notes.txt").write_text("mine")
    first = {path.name: path.read_bytes() for path in out.iterdir()}

    import evaluator.report.plots as plots

    def broken_plot(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(plots, "plot_failure_causes", broken_plot)  # dies after the tables are written
    assert main(["report", *map(str, result_files), "--out", str(out), "--bootstrap", "0"]) == 1
    assert {path.name: path.read_bytes() for path in out.iterdir()} == first  # the old report, whole
    monkeypatch.undo()

    assert main(["report", *map(str, result_files), "--out", str(out), "--bootstrap", "0"]) == 0
    capsys.readouterr()
    assert json.loads((out / "report.json").read_text())["models"] == ["alpha", "beta"]  # every file is new
    assert (out / "failure_causes.png").read_bytes() != first["failure_causes.png"]
    assert (out / "notes.txt").read_text() == "mine"  # not a report file: kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alpha.jsonl", "beta.jsonl", "report"]  # nothing hidden left


def test_records_outside_the_run_or_contradicting_themselves_are_left_out(tmp_path):
    from evaluator.report import read_report_inputs

    records = [r for r in hand_results() if r.model_key == "alpha"]
    sample_nine = records[0].model_copy(update={"sample_index": 9})
    no_cause = records[1].model_copy(
        update={"statements": [s.model_copy(update={"cause": None}) for s in records[1].statements]}
    )
    rescored = records[2].model_copy(update={"passed": not records[2].passed})
    path = write_jsonl(tmp_path / "a.jsonl", [*records, sample_nine, no_cause, rescored])
    inputs = read_report_inputs([path])
    assert len(inputs.records) == len(records) and len(inputs.error_rows) == 1
    assert [(note.where, note.reason[:40]) for note in inputs.left_out] == [
        (f"{path}:12", "sample index 9 is outside 0–3 (pass --sa"),
        (f"{path}:13", "statement 0 failed without a cause"),
        (f"{path}:14", "another result of this image, different,"),
    ]
