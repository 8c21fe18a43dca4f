"""`negt2ibench eval-results`: a model's results file → the Hub's `.eval_results` YAML (and a pull request)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import commit_sha, http_url, positive_int, repo_id


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `eval-results` to the main parser's sub-commands."""
    parser = subparsers.add_parser(
        "eval-results",
        help="write a model's scores as the Hub's .eval_results YAML (optionally as a pull request)",
        description=textwrap.fill(
            "Read one model's result files (from `negt2ibench score`) as `report` reads them and write the "
            "YAML the Hub reads from a model repo's .eval_results/ folder: one entry per task of the "
            "benchmark's eval.yaml (overall, then each category), each value exactly the number `report` "
            "prints for that Table 3 column (percent, one decimal), with dataset.revision (the benchmark "
            "dataset's commit: --dataset-revision, else read from the Hub), date (when the results were scored: "
            "the files' last modification) and notes naming the evaluator version, preset and config hash. "
            "A file with several models, missing images, mixed evaluator configurations, or another evaluator "
            "version or configuration than the benchmark's (unless --allow-other-evaluator) is refused. "
            "With --model-repo and --create-pr, opens a pull request on that "
            "model repo adding .eval_results/negt2ibench.yaml (token: `hf auth login` or HF_TOKEN) and "
            "prints its URL. docs/hub.md explains the Hub side.",
            width=100,
        ),
        epilog=(
            "examples:\n"
            "  negt2ibench eval-results results/sd_1_5.jsonl --dataset-id my-org/NegT2IBench --out sd_1_5.yaml\n"
            "  negt2ibench eval-results results/sd_1_5.jsonl --dataset-id my-org/NegT2IBench \\\n"
            "      --dataset-revision 5503434ddd753f426f4b38109466949a1217c2bb   # offline\n"
            "  negt2ibench eval-results results/sd_1_5.jsonl --dataset-id my-org/NegT2IBench \\\n"
            "      --model-repo stable-diffusion-v1-5/stable-diffusion-v1-5 --create-pr"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_eval_results_options(parser)
    parser.set_defaults(handler=run_eval_results)


def _add_eval_results_options(parser: argparse.ArgumentParser) -> None:
    """`eval-results`' options: the result files, the benchmark's repo and revision, the output and the PR."""
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.jsonl", help="one model's result files")
    parser.add_argument(
        "--dataset-id", required=True, type=repo_id, metavar="ORG/NAME", help="the benchmark's dataset repo on the Hub"
    )
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the YAML here (default: print it)")
    parser.add_argument(
        "--source-url", type=http_url, metavar="URL", help="source.url of each entry: where the results can be seen"
    )
    parser.add_argument(
        "--dataset-revision",
        type=commit_sha,
        metavar="SHA",
        help="dataset.revision: the benchmark dataset's commit the prompts came from (default: its current "
        "commit, read from the Hub; required offline)",
    )
    parser.add_argument(
        "--allow-other-evaluator",
        action="store_true",
        help="accept results scored by another evaluator version or configuration than the benchmark's "
        "(the notes then say so)",
    )
    parser.add_argument(
        "--model-repo", type=repo_id, metavar="ORG/MODEL", help="the model repo the scores belong to (for --create-pr)"
    )
    parser.add_argument(
        "--create-pr",
        action="store_true",
        help="open a pull request on --model-repo adding .eval_results/negt2ibench.yaml",
    )
    parser.add_argument(
        "--samples",
        type=positive_int,
        default=4,
        metavar="K",
        help="images per prompt in a complete run (default 4)",
    )


def run_eval_results(args: argparse.Namespace) -> int:
    from negt2ibench.core.atomic import write_atomic

    from .hub_results import (
        EVAL_RESULTS_PATH,
        dataset_revision,
        eval_result_entries,
        eval_results_yaml,
        open_pull_request,
        scores_of_file,
    )

    if args.create_pr and not args.model_repo:
        raise UsageError("--create-pr needs --model-repo ORG/MODEL (the model repo the pull request goes to)")
    if args.out is not None and args.out.is_dir():
        raise UserError(f"--out {args.out} is a folder; name the YAML file to write")
    scores = scores_of_file(
        args.results, expected_samples=args.samples, allow_other_evaluator=args.allow_other_evaluator
    )
    revision = args.dataset_revision or dataset_revision(args.dataset_id)
    entries = eval_result_entries(
        scores.values,
        dataset_id=args.dataset_id,
        notes=scores.notes,
        dataset_revision=revision,
        date=scores.date,
        source_url=args.source_url,
    )
    title = f"NegT2IBench scores of model key {scores.model_key} (negt2ibench eval-results)"
    text = eval_results_yaml(entries, title=title)
    resolved = "" if args.dataset_revision else f" (the current commit of {args.dataset_id} on the Hub)"
    said = [
        *scores.notes_read,
        f"dataset.revision: {revision}{resolved}",
        f"date: {scores.date} ("
        + (
            "the newest record's scored_at: when the last image was scored)"
            if scores.date_from == "records"
            else "the files' last modification: these records predate scored_at)"
        ),
    ]
    # Printed YAML stays pipeable: what was read goes to stderr then.
    for line in said:
        print(line, file=sys.stderr if args.out is None else sys.stdout)
    if args.out is not None:
        write_atomic(args.out, text)
        print(f"wrote {len(entries)} entries ({', '.join(e.task_id for e in entries)}) to {args.out}")
    else:
        print(text, end="")
    if args.create_pr:
        url = open_pull_request(
            text,
            args.model_repo,
            description=f"NegT2IBench scores ({scores.notes}), written by `negt2ibench eval-results`.",
        )
        print(f"opened a pull request adding {EVAL_RESULTS_PATH} to {args.model_repo}: {url}")
    elif args.model_repo:
        print(f"(no pull request opened: add --create-pr to propose it to {args.model_repo})")
    return 0
