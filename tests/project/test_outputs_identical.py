"""`benchmarks/outputs_identical.py`'s comparison on small folders (the full two-tree run takes about
half a minute and is run by hand; its figures are in benchmarks/RESULTS.md): a file that differs by
one byte, a file only one tree wrote, and identical ones are told apart, and `--help` answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from outputs_identical import DURATION, compare, table  # noqa: E402


def test_differences_and_files_only_one_tree_wrote_are_named(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, text in ((before, b"| 1.5 |"), (after, b"| 1.6 |")):
        (folder / "report").mkdir(parents=True)
        (folder / "report" / "table3.md").write_bytes(text)
        (folder / "same.json").write_bytes(b"{}")
    (before / "gone.csv").write_bytes(b"a")
    (after / "report" / "new.png").write_bytes(b"b")

    rows = compare(before, after)
    assert {row.path: row.verdict for row in rows} == {
        "gone.csv": "only before",
        "report/new.png": "only after",
        "report/table3.md": "no",
        "same.json": "yes",
    }
    assert "same.json" not in table(rows, only_differences=True)
    assert "| `same.json` | yes |" in table(rows, only_differences=False)


def test_only_printed_durations_are_masked():
    printed = b"4800 prompts in 2400 matched groups; corpus 0.11 s, files 12.5 ms; 3 s; 19,200 images"
    assert DURATION.sub(b"<duration>", printed) == (
        b"4800 prompts in 2400 matched groups; corpus <duration>, files <duration>; 3 s; 19,200 images"
    )


def test_help_answers():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "outputs_identical.py"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "--before REF" in done.stdout and "(sha256)" in done.stdout
