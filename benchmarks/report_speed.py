"""Time `build_report` and `write_report` on a full-size synthetic sweep (run by hand).

    .venv/bin/python benchmarks/report_speed.py [--models 11] [--bootstrap 1000]

Builds `--models` complete runs (4,800 prompts × 4 images, one statement result per statement of
the prompt's setting, random verdicts with a fixed seed) and reports wall times.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_builder.vocabulary import CATEGORIES, RELATION_CATEGORIES, SETTINGS  # noqa: E402
from evaluator.report import build_report, write_report  # noqa: E402
from evaluator.results import ResultRecord, StatementResult  # noqa: E402


def synthetic_run(model: str, rng: random.Random) -> list[ResultRecord]:
    records = []
    for category in CATEGORIES:
        for p, n in SETTINGS:
            polarities = ["positive"] * p + ["negated"] * n
            for k in range(100):
                for sample in range(4):
                    statements = []
                    for index, polarity in enumerate(polarities):
                        ok = rng.random() < 0.7
                        cause = None
                        if not ok:
                            cause = (
                                "forbidden_rendered"
                                if polarity == "negated"
                                else rng.choice(("wrong_value", "subject_missing"))
                            )
                        dead = ok and polarity == "negated" and category in RELATION_CATEGORIES and rng.random() < 0.2
                        statements.append(
                            StatementResult(
                                index=index, polarity=polarity, satisfied=ok, cause=cause, dead_zone_pass=dead
                            )
                        )
                    records.append(
                        ResultRecord(
                            prompt_id=f"{category}_pos{p}_neg{n}_{k:03d}",
                            model_key=model,
                            sample_index=sample,
                            passed=all(s.satisfied for s in statements),
                            statements=statements,
                            evaluator_version="1.0.0",
                            config_hash="bench",
                        )
                    )
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=11)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(0)
    results = [record for m in range(args.models) for record in synthetic_run(f"model_{m}", rng)]
    print(f"{len(results):,} result records, {args.models} models, {args.bootstrap} bootstrap resamples")
    start = time.perf_counter()
    report = build_report(results, n_resamples=args.bootstrap)
    built = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        written = write_report(report, folder)
        wrote = time.perf_counter() - start
    print(f"build_report: {built:.2f} s ({1e6 * built / len(results):.1f} µs per record)")
    print(f"write_report: {wrote:.2f} s ({len(written)} files)")


if __name__ == "__main__":
    main()
