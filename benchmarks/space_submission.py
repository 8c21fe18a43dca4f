"""Cost of one leaderboard submission in the Space, without the spot check's models (run by hand).

    .venv/bin/python benchmarks/space_submission.py [--repeats 3]

A complete synthetic results file (4,800 prompts × 4 samples, random verdicts, fixed seed) goes
through each step of `leaderboard.intake.submissions.submit`: reading (evaluator.resultio), the coverage /
version check, the leaderboard row and detail (evaluator.report; and both together on the fields
the spot check compares, `leaderboard.checks.compared_fields.shown_numbers`, as submit runs them), and
storing with its results in each backend (SQLite; the Hub backend's local clone with a no-op upload).
Also the leaderboard page build (`leaderboard_frame` over 50 entries). Prints a Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _median(function, repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from dataset_builder.loading import load_prompts
    from dataset_builder.records import PromptIndex
    from evaluator.report import failure_causes, leaderboard_row, statement_accuracy
    from evaluator.resultio import read_results
    from leaderboard.checks.compared_fields import compared_record, shown_numbers
    from leaderboard.intake.submissions import check_results
    from leaderboard.store.sqlite_store import Entry, HubStore, SQLiteStore
    from space.tabs.leaderboard.leaderboard_views import leaderboard_frame
    from tests.helpers.space_helpers import write_results

    prompts = load_prompts(None)
    index = PromptIndex(prompts)
    rng = random.Random(0)
    verdicts = {(p.prompt_id, s): rng.random() < 0.3 for p in prompts for s in range(4)}
    work = Path(tempfile.mkdtemp(prefix="space_bench_"))
    path = write_results(work / "results.jsonl", prompts, "toy", passed=lambda p, s: verdicts[p.prompt_id, s])
    results = read_results(path)
    row = leaderboard_row(results, "toy")
    detail = shown_numbers(results).detail
    counter = iter(range(10**6))

    def entry() -> Entry:
        n = next(counter)
        return Entry(
            model_name=f"Model {n}",
            model_key=f"model_{n}",
            submitter=f"user{n}",
            row=row,
            detail=detail,
            status="verified",
        )

    sqlite = SQLiteStore(work / "lb.sqlite")
    hub = HubStore(work / "clone", lambda *a: None)
    steps = {
        "read 19,200 records (resultio)": lambda: read_results(path),
        "coverage/version check": lambda: check_results(results, index.ids()),
        "leaderboard row (report)": lambda: leaderboard_row(results, "toy"),
        "detail: statement accuracy + causes (report)": lambda: (statement_accuracy(results), failure_causes(results)),
        "the compared fields of every record (compared_record)": lambda: [compared_record(r) for r in results],
        "row + detail (shown_numbers, what submit runs)": lambda: shown_numbers(results),
        "store: SQLite (entry + results)": lambda: sqlite.add_submission(entry(), results),
        "store: Hub clone (entry + results, no upload)": lambda: hub.add_submission(entry(), results),
    }
    timings = {name: _median(fn, args.repeats) for name, fn in steps.items()}
    for _ in range(50 - args.repeats):
        sqlite.add_submission(entry(), [])
    entries = sqlite.list_entries()
    timings[f"leaderboard page ({len(entries)} entries: list + frame)"] = _median(
        lambda: leaderboard_frame(sqlite.list_entries()), args.repeats
    )

    size = path.stat().st_size / 2**20
    print(f"results file: {size:.1f} MB, {len(results)} records; median of {args.repeats} runs\n")
    print("| Step | Time |")
    print("|---|---:|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
