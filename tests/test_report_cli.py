"""`negt2ibench report`: files written, stdout, and clear errors for bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from _report_helpers import hand_results

from negt2ibench.cli import main


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
    assert "| Model | 1:0 | 0:1 |" in captured.out
    assert "| alpha † | 50.0 | 40.0 |" in captured.out
    assert "wrote 12 files" in captured.out

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
        "accuracy_by_setting.png",
        "statement_accuracy.png",
        "failure_causes.png",
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


def test_report_is_deterministic_for_a_seed(result_files, tmp_path, capsys):
    outputs = []
    for name in ("one", "two"):
        assert main(["report", *map(str, result_files), "--out", str(tmp_path / name), "--bootstrap", "100"]) == 0
        outputs.append((tmp_path / name / "matched_deltas.csv").read_text())
    capsys.readouterr()
    assert outputs[0] == outputs[1]


def test_malformed_result_file_names_file_and_line(result_files, tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    lines = result_files[0].read_text().splitlines()
    broken.write_text("\n".join([lines[0], '{"prompt_id": "color_pos1_neg0_000", "passed": tru', *lines[1:]]) + "\n")
    code = main(["report", str(result_files[1]), str(broken), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("error: ") and f"{broken}:2" in captured.err
    assert "Traceback" not in captured.err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_mixed_config_hash_for_one_model_is_a_clear_error(tmp_path, capsys):
    records = [r for r in hand_results() if r.model_key == "alpha"]
    first = write_jsonl(tmp_path / "a1.jsonl", records[:5])
    second = write_jsonl(tmp_path / "a2.jsonl", [r.model_copy(update={"config_hash": "other"}) for r in records[5:]])
    code = main(["report", str(first), str(second), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "'alpha' mixes config_hash values h1, other" in err


def test_missing_file_and_bad_flags(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out")]) == 1
    assert "nope.jsonl: no such result file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path), "--bootstrap", "-5"])
    assert exit_info.value.code == 2
    assert "expected 0 or more" in capsys.readouterr().err


def test_unknown_prompt_id_is_a_clear_error(tmp_path, capsys):
    record = hand_results()[0].model_copy(update={"prompt_id": "geneval_0001"})
    path = write_jsonl(tmp_path / "odd.jsonl", [record])
    assert main(["report", str(path), "--out", str(tmp_path / "out")]) == 1
    assert "'geneval_0001' is not a NegT2IBench id" in capsys.readouterr().err


def test_report_help_lists_flags(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = capsys.readouterr().out
    for flag in ("--out", "--bootstrap", "--seed", "--samples", "RESULTS.jsonl"):
        assert flag in text
