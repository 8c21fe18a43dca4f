"""`negt2ibench report`: result files → Table 3 on stdout, plus Markdown, CSV, JSON and PNG files."""

from __future__ import annotations

import argparse
from pathlib import Path

from negt2ibench.core.errors import UserError
from negt2ibench.core.options import (
    add_bootstrap_option,
    add_prompts_option,
    add_seed_option,
    positive_int,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="aggregate result files into the paper's tables (Markdown, CSV, JSON, PNG)",
        description=(
            "Read one or more result JSONL files (from `negt2ibench score`), group the results by model, "
            "and write Table 3 (accuracy by setting, category and overall, with coverage), statement "
            "accuracy by polarity and category, failure causes (Figure 3) with the share of forbidden "
            "content rendered, dead-zone passes (Table 19), matched-group negated−positive deltas with "
            "bootstrap 95% intervals, and the order-to-space diagnostic of OTS-Bench (Hom, Ali, Rev, Δ; "
            "docs/scoring.md). Table 3 is printed to stdout; the files go to --out, which is replaced "
            "as a whole (other files there are kept). Images whose result has an error are not scored and "
            "lower the model's coverage; a model with missing images is marked, never averaged as if "
            "complete. Lines that cannot be reported (not a result record, a torn last line, an image that "
            "is not a benchmark image) are left out and named file:line on stdout, in report.md and "
            "report.json; only nothing left to report stops the command."
        ),
        epilog="Example: negt2ibench report results/sd_1_5.jsonl results/flux.jsonl --out reports/",
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS.jsonl", help="result files (any number, any mix of models)"
    )
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder for report.md, *.csv, report.json and *.png (created if missing)",
    )
    add_bootstrap_option(
        parser, "bootstrap resamples for the matched-group intervals (default 1000; 0 skips the intervals)"
    )
    add_seed_option(parser, "seed of the bootstrap resampling (default 0)", metavar="S")
    parser.add_argument(
        "--samples",
        type=positive_int,
        default=4,
        metavar="K",
        help="images per prompt in a complete run, for coverage (default 4)",
    )
    add_prompts_option(
        parser,
        "prompt records the results were scored against, for the order-to-space diagnostic's objects "
        "and sides (dataset folder, prompts.jsonl or parquet; default: the built-in corpus)",
    )
    parser.set_defaults(handler=run_report, exit_at_once=True)  # its records are not freed one by one at exit


# Inputs from this size on (≈ 3 complete runs) get the statement plot drawn in a worker process
# (`plot_worker`) beside the rest; below it the worker's start costs more than it saves.
PLOT_WORKER_BYTES = 48 * 2**20


def run_report(args: argparse.Namespace) -> int:
    import contextlib

    from dataset_builder.loading import prompt_index
    from evaluator.report import build_report, read_report_inputs, report_tables, write_report
    from evaluator.report.document import plot_worker
    from negt2ibench.core.jsonl import gc_paused
    from negt2ibench.core.table import to_markdown

    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out} exists and is not a folder")
    size = sum(path.stat().st_size for path in args.results if path.is_file())
    with plot_worker() if size >= PLOT_WORKER_BYTES else contextlib.nullcontext() as plotter:
        # The records and what is counted from them stay to the end: out of the garbage collector's way
        # (with it on, its collections walked the arrays' millions of new tuples: 0.8 s of 3.9 s counting).
        with gc_paused(freeze=True):
            inputs = read_report_inputs(args.results, expected_samples=args.samples)  # what it can, the rest named
            try:
                report = build_report(
                    inputs.records,
                    n_resamples=args.bootstrap,
                    seed=args.seed,
                    expected_samples=args.samples,
                    inputs=inputs.to_dict(),
                    prompts=prompt_index(args.prompts) if args.prompts else None,
                )
            except ValueError as error:
                raise UserError(str(error)) from None
            from generation.registry import table3_models

            tables = report_tables(report, table3_models())  # each table built once, for the files and stdout
        written = write_report(report, args.out, tables, plotter)
    print("\n".join(inputs.summary_lines()))
    print()
    print(to_markdown(tables["table3"]))
    print()
    print(f"wrote {len(written)} files to {args.out}:")
    for path in written:
        print(f"  {path}")
    return 0
