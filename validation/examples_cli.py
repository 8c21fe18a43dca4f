"""`negt2ibench examples`: the shell over `validation.examples` (write the example files, say what is there)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    examples = subparsers.add_parser(
        "examples",
        help="write small example files to try the commands on (no weights, no internet)",
        description=(
            "Write example files into DIR: synthetic pictures (they say SYNTHETIC EXAMPLE; no text-to-image "
            "model made them) as a dataset image split, result files of them under three evaluator presets, "
            "an annotation sample with answers of three invented annotators, GenEval pictures and results, and "
            "DIR/README.md with the commands to run on them (report, agree, geneval summary, serve). The "
            "results were written by the real scoring pipeline with tiny random-weight models standing in for "
            "the weights: their verdicts say nothing about any model."
        ),
        epilog="example:\n  negt2ibench examples --out examples\n  cat examples/README.md",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    examples.add_argument("--out", required=True, metavar="DIR", help="folder to write (must be empty or absent)")
    examples.add_argument("--overwrite", action="store_true", help="replace DIR if it holds something")
    examples.set_defaults(handler=run_examples)


def run_examples(args: argparse.Namespace) -> int:
    from .examples import write_examples

    written = write_examples(args.out, overwrite=args.overwrite)
    print(f"wrote {len(written)} example entries into {args.out}: " + ", ".join(path.name for path in written))
    print(f"next: read {written[0]} for the commands to try (every one runs here, offline)")
    return 0
