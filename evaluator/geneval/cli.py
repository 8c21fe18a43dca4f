"""`negt2ibench geneval score` and `negt2ibench geneval summary`: the shell over `negt2ibench.geneval_api`.

Heavy imports (torch, the models) happen inside the handlers so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from negt2ibench.core.options import (
    add_batch_size_option,
    add_bootstrap_option,
    add_device_option,
    add_json_file_option,
    add_limit_option,
    add_no_progress_flag,
    add_num_workers_option,
    add_seed_option,
    add_weights_dir_option,
    positive_int,
    split_name,
)

from .config import NOT_GENEVAL_CHECKPOINT, OPTION_PARSERS, PRESET_HELP, PRESETS


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "geneval",
        help="GenEval's benchmark on this project's detectors: score images, summarise results",
        description=(
            "GenEval (Ghosh et al., 2023): 553 prompts over six tasks, 4 images each, checked by a COCO instance\n"
            "segmenter and a CLIP colour classifier with GenEval's rules exactly as its code has them.\n"
            "`generate --benchmark geneval` makes the images, `geneval score` scores them, `geneval summary`\n"
            f"gives GenEval's numbers plus completeness, an interval and the order-to-space diagnostic.\n"
            f"Both presets are {NOT_GENEVAL_CHECKPOINT}. See docs/geneval.md."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="geneval_command", metavar="COMMAND")
    parser.set_defaults(handler=lambda args: parser.print_help() or 0)
    _register_score(commands)
    _register_summary(commands)


def _register_score(commands) -> None:
    score = commands.add_parser(
        "score",
        help="score GenEval images (one GenEval result line per image, resumable, multi-process)",
        description=(
            "Score the images of GenEval's layout (DIR/00000/metadata.jsonl + DIR/00000/samples/0000.png ...) or of\n"
            "a dataset folder's geneval_* split and append one line per image to --out, with GenEval's fields\n"
            "(filename, tag, prompt, correct, reason, metadata, details: GenEval's summary_scores.py reads the file\n"
            "unchanged) and this project's (model key, prompt id, sample, preset, detector, version, config hash).\n"
            "Images already in --out are skipped, so the same command resumes; bad images and unreadable metadata\n"
            "become error rows (correct: null). Under `accelerate launch -m negt2ibench geneval score ...` (or\n"
            "torchrun) each process writes OUT.rank{i}.jsonl and the main process merges them."
        ),
        epilog=(
            "examples:\n"
            "  negt2ibench generate --benchmark geneval --model sd_1_5 --out geneval/sd_1_5\n"
            "  negt2ibench geneval score --images geneval/sd_1_5 --out results/geneval_sd_1_5.jsonl\n"
            "  negt2ibench geneval score --images data/ --split geneval_sd_1_5 --out r.jsonl --preset geneval_rfdetr\n"
            "  negt2ibench geneval score --images geneval/sd_1_5 --out r.jsonl --options threshold=0.25 max_objects=8"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    score.add_argument("--images", required=True, metavar="SRC", help="GenEval's image folder, or a dataset folder")
    score.add_argument("--split", metavar="KEY", help="the geneval_* split of a dataset source")
    score.add_argument("--out", required=True, metavar="FILE", help="results JSONL to append to (created if missing)")
    score.add_argument(
        "--preset",
        choices=tuple(PRESETS),
        default="geneval",
        metavar="PRESET",
        help="detector (default: geneval): " + "; ".join(f"{name}: {text}" for name, text in PRESET_HELP.items()),
    )
    score.add_argument(
        "--options",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help=f"GenEval's --options: {', '.join(OPTION_PARSERS)} (e.g. threshold=0.3 counting_threshold=0.9)",
    )
    score.add_argument("--metadata", metavar="FILE", help="another evaluation_metadata.jsonl (default: GenEval's 553)")
    score.add_argument("--model-key", type=split_name, metavar="KEY", help="model key of every line (default: SRC's)")
    add_batch_size_option(score, "images per batch (default 8)")
    add_limit_option(score, "score at most the first N images")
    add_num_workers_option(score, "processes that decode images while the models run (default: from the CPU count)")
    add_no_progress_flag(score)
    add_device_option(score)
    add_weights_dir_option(
        score, "folder filled by `negt2ibench download-models --preset PRESET --dir DIR` (default: the HF cache)"
    )
    score.set_defaults(handler=run_score)


def _register_summary(commands) -> None:
    summary = commands.add_parser(
        "summary",
        help="GenEval's scores of a results file, with completeness, an interval and the OTS diagnostic",
        description=(
            "Print GenEval's summary of RESULTS.jsonl (written by `geneval score` or by GenEval's own scorer),\n"
            "computed exactly as its summary_scores.py computes it: % correct images and prompts, each task's\n"
            "score and the overall mean of the task scores. Then what GenEval never says: whether the run is\n"
            "complete (553 prompts × --samples images; what is missing is listed, an incomplete run is marked),\n"
            "a 95% bootstrap interval of the overall score, and the order-to-space diagnostic (Hom over two_object,\n"
            "Ali / Rev / Δ over left-of / right-of position prompts; docs/scoring.md)."
        ),
        epilog="example: negt2ibench geneval summary results/geneval_sd_1_5.jsonl --json summary.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument("results", type=Path, metavar="RESULTS.jsonl", help="a GenEval results file")
    add_json_file_option(summary, "also write the numbers as JSON")
    summary.add_argument("--plot", type=Path, metavar="PNG", help="also plot the order-to-space diagnostic")
    summary.add_argument("--samples", type=positive_int, default=4, metavar="N", help="images per prompt (default 4)")
    summary.add_argument("--metadata", metavar="FILE", help="another evaluation_metadata.jsonl (default: GenEval's)")
    add_bootstrap_option(summary, "bootstrap resamples (default 1000)")
    add_seed_option(summary, "seed of the bootstrap (default 0)", metavar="S")
    summary.set_defaults(handler=run_summary)


def run_score(args: argparse.Namespace) -> int:
    from negt2ibench.geneval_api import GenEvalEvaluator

    from .config import parse_options

    evaluator = GenEvalEvaluator(
        args.preset,
        options=parse_options(args.options),
        device=args.device,
        weights_dir=args.weights_dir,
        batch_size=args.batch_size,
        metadata=args.metadata,
    )
    summary = evaluator.score_source(
        args.images,
        out=args.out,
        model_key=args.model_key,
        split=args.split,
        limit=args.limit,
        progress=not args.no_progress,
        num_workers=args.num_workers,
    )
    if summary.skipped_files:
        print(f"skipped {len(summary.skipped_files)} entries that are not prompt folders: {summary.skipped_files[:5]}")
    print(summary.line())
    if summary.error_reasons:
        print("errors: " + ", ".join(f"{reason} ×{count}" for reason, count in sorted(summary.error_reasons.items())))
    print(f"preset {evaluator.config.name} ({evaluator.config.detector_label}): {NOT_GENEVAL_CHECKPOINT}")
    return 0


def run_summary(args: argparse.Namespace) -> int:
    from evaluator.geneval.prompts import load_geneval_prompts
    from evaluator.geneval.summary import summary_text
    from negt2ibench.core.atomic import atomic_file
    from negt2ibench.geneval_api import summarize_file

    summary = summarize_file(
        args.results,
        load_geneval_prompts(args.metadata),
        samples=args.samples,
        resamples=args.bootstrap,
        seed=args.seed,
    )
    print(summary_text(summary))
    if args.json:
        with atomic_file(args.json) as handle:
            handle.write((json.dumps(summary.to_dict(), indent=2, allow_nan=False) + "\n").encode("utf-8"))
        print(f"\nwrote {args.json}")
    if args.plot:
        from evaluator.report.ots import ots_table
        from evaluator.report.ots_plot import plot_ots

        model = args.results.stem
        plot_ots(ots_table({model: summary.ots}), args.plot, title=f"Order-to-space bias on GenEval ({model})")
        print(f"wrote {args.plot}")
    return 0
