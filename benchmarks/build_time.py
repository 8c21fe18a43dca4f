"""Time `negt2ibench build` end to end (goal: under 2 s for 4,800 prompts) and its parts.

Run by hand: `.venv/bin/python benchmarks/build_time.py [--repeats 5]`. Prints a Markdown table
to paste into benchmarks/RESULTS.md. Nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _time(function, repeats: int) -> list[float]:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        timings.append(time.perf_counter() - started)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per measurement (median reported)")
    args = parser.parse_args()

    from dataset_builder.corpus import build_corpus
    from dataset_builder.hub import write_dataset_folder
    from dataset_builder.validate import validate_folder

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "negt2ibench"
        command = [sys.executable, "-m", "negt2ibench", "build", "--out", str(out), "--overwrite"]
        subprocess.run(command, cwd=REPO, check=True, capture_output=True)  # warm the file cache
        end_to_end = _time(lambda: subprocess.run(command, cwd=REPO, check=True, capture_output=True), args.repeats)
        startup = _time(
            lambda: subprocess.run(
                [sys.executable, "-m", "negt2ibench", "--help"], cwd=REPO, check=True, capture_output=True
            ),
            args.repeats,
        )
        corpus = _time(build_corpus, args.repeats)
        records = build_corpus()
        files = _time(lambda: write_dataset_folder(records, out, overwrite=True), args.repeats)
        validate = _time(lambda: validate_folder(out), max(1, args.repeats // 2))
        sizes = {p.relative_to(out).as_posix(): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}

    rows = [
        ("`negt2ibench build` end to end (fresh process)", end_to_end),
        ("of which: process start + CLI imports (`negt2ibench --help`)", startup),
        ("corpus generation alone (`build_corpus()`, 4,800 records)", corpus),
        ("writing the folder alone (jsonl, parquet, card, atomic rename)", files),
        ("`validate_folder` (every invariant, parse round trip)", validate),
    ]
    print("| Step | Median | Min | Runs |")
    print("|---|---:|---:|---:|")
    for label, timings in rows:
        print(f"| {label} | {statistics.median(timings):.2f} s | {min(timings):.2f} s | {len(timings)} |")
    print()
    print("Files: " + ", ".join(f"`{name}` {size / 1024:.0f} KiB" for name, size in sizes.items()))


if __name__ == "__main__":
    main()
