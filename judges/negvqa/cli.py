"""`negt2ibench negvqa` (a judge answers NegVQA) and `negt2ibench negvqa summary` (accuracy, intervals, drop).

Heavy imports (torch, transformers) happen inside the handlers, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from negt2ibench.core.errors import UsageError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_interval_options,
    add_json_file_option,
    add_json_flag,
    add_limit_option,
    add_no_progress_flag,
    add_num_workers_option,
)

from ..cli import JUDGE_DEVICE_HELP, add_download_flag, download_options

SHOWN_MALFORMED = 50  # malformed rows listed on screen; the run record (OUT.run.json) lists them all

DESCRIPTION = """\
NegVQA (Zhang et al., ACL 2025 Findings): 7,379 two-choice questions negated from 20 VQA datasets
in four domains, each with its affirmative original. A VLM judge answers each negated question
("What is not in the cup?") as NegVQA's authors asked their models:

  Question: {question}
  Options:
  A. {A}
  B. {B}
  Answer with the option's letter from the given choices directly.

after the image, in the judge's chat template. The answer is the likelier of the two letters as
the first token of its reply (the next-token logits over "A", " A" against "B", " B", softmaxed:
deterministic); --generate also writes the greedy reply and the letter it names. One record per
question in --out (the letters' probabilities, the answer, right or wrong); --original also asks
the affirmative originals, into OUT.original.jsonl. Rerunning the same command resumes; under
`accelerate launch -m negt2ibench negvqa ...` each process writes OUT.rank{i}.jsonl and the main
process merges. `negvqa summary OUT.jsonl` gives the accuracy overall, by domain and by source
dataset with bootstrap intervals, the drop from the originals and the letter bias.

Data (--data): a data file (.jsonl, .tsv, .parquet), a folder, or a Hub dataset repo id
(yuhuizhang/NegVQA, its authors'; read from the Hugging Face cache when offline). Columns are read
as the authors write them (negated_question, negated_answer, original_question, original_answer,
A, B, category, index, image) or as the plain schema (question, A, B, answer, source, domain, id,
image); --columns KEY=NAME reads another name. Malformed rows are left out, one line each, by
row number; the run goes on and counts them (docs/negvqa.md).
"""

EPILOG = """\
examples:
  negt2ibench negvqa --judge qwen3_vl_8b --data yuhuizhang/NegVQA --out negvqa/qwen3_vl_8b.jsonl --original
  negt2ibench negvqa --judge internvl3_5_8b --data NegVQA-7379.jsonl --out negvqa/intern.jsonl --limit 200
  negt2ibench negvqa --model-id Qwen/Qwen2-VL-2B-Instruct --data mine.parquet --out q2.jsonl \\
      --columns question=q_neg answer=label source=dataset domain=kind
  negt2ibench negvqa summary negvqa/qwen3_vl_8b.jsonl --json summary.json --plot domains.png
  negt2ibench negvqa summary negvqa/*.jsonl          # one row per judge, with its parameter count

A folder or Hub repo holding several data files: choose one with --data-file NAME (a glob, e.g.
'data/test-*.parquet'); the authors' model_preds/ folder is never read. Without --download the
judge's weights must be in the Hugging Face cache (`hf download HUB_ID`); offline, so must a Hub
dataset (`hf download --repo-type dataset yuhuizhang/NegVQA`)."""


def register(subparsers) -> None:
    negvqa = subparsers.add_parser(
        "negvqa",
        help="NegVQA on a VLM judge: how far it reads negation (accuracy, drop from the originals, letter bias)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = negvqa.add_mutually_exclusive_group()
    which.add_argument("--judge", metavar="KEY", help="a registered judge (`negt2ibench judge --list`)")
    which.add_argument("--model-id", metavar="HUB_ID", help="any transformers chat VLM (Hub id or local folder)")
    negvqa.add_argument("--key", metavar="NAME", help="with --model-id: the judge name in records (default: the id's)")
    negvqa.add_argument("--revision", metavar="REV", default="main", help="with --model-id: Hub revision (main)")
    negvqa.add_argument("--data", metavar="SRC", help="NegVQA's questions: a .jsonl/.tsv/.parquet file, folder, Hub id")
    negvqa.add_argument("--data-file", metavar="NAME", help="the data file(s) of a folder or Hub repo (a glob)")
    negvqa.add_argument(
        "--columns", nargs="+", default=[], metavar="KEY=NAME", help="read KEY (question, A, B, answer, ...) from NAME"
    )
    negvqa.add_argument("--out", metavar="FILE", help="records JSONL (the originals: FILE's stem + .original.jsonl)")
    negvqa.add_argument("--original", action="store_true", help="also ask each question's affirmative original")
    negvqa.add_argument("--generate", action="store_true", help="also write the greedy reply and the letter it names")
    add_limit_option(negvqa, "ask at most the first N questions")
    add_batch_size_option(negvqa, "(image, prompt) pairs per forward (default 8)")
    add_num_workers_option(
        negvqa, "processes that decode images while the model runs (default 0: in this process)", default=0
    )
    add_device_option(negvqa, JUDGE_DEVICE_HELP, metavar="DEVICE")
    add_download_flag(negvqa)
    add_json_flag(negvqa, "also print the run summary as JSON")
    add_no_progress_flag(negvqa)
    negvqa.set_defaults(handler=run_negvqa_command)
    commands = negvqa.add_subparsers(dest="negvqa_command", metavar="summary")
    _register_summary(commands)


def _register_summary(commands) -> None:
    summary = commands.add_parser(
        "summary",
        help="accuracy overall, by domain and source dataset, intervals, the drop, the letter bias; several judges",
        description=(
            "Summarise NegVQA records written by `negt2ibench negvqa`: accuracy on the negated questions overall,\n"
            "by domain (the mean of its source datasets, as NegVQA reports it) and by source dataset, each with a\n"
            "seeded 95% bootstrap interval (questions resampled within each source dataset); with the originals\n"
            "(OUT.original.jsonl beside OUT.jsonl, read without being named), the original accuracy and the drop\n"
            "(original − negated, paired) with its interval; the share of answers that are A against the share of A\n"
            "in the key; with --generate's replies, how often the written letter differs. Several files (several\n"
            "judges) give one table, a row per judge with its parameter count. Error rows are counted, not scored."
        ),
        epilog="examples:\n  negt2ibench negvqa summary negvqa/qwen3_vl_8b.jsonl --plot domains.png\n"
        "  negt2ibench negvqa summary negvqa/*.jsonl --json negvqa/summary.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument("records", nargs="+", type=Path, metavar="OUT.jsonl", help="records of one or more judges")
    add_json_file_option(summary, "also write every figure as JSON (fractions)")
    summary.add_argument("--plot", type=Path, metavar="PNG", help="also plot accuracy by domain")
    add_interval_options(
        summary,
        bootstrap_help="bootstrap resamples (default 1000)",
        seed_help="seed of the bootstrap (default 0)",
        seed_metavar="S",
    )
    summary.set_defaults(summary_handler=run_summary)


def _spec(args: argparse.Namespace):
    from judges.registry import chosen_spec

    return chosen_spec(args.judge, model_id=args.model_id, custom_key=args.key, revision=args.revision, flag="--judge")


def run_negvqa_command(args: argparse.Namespace) -> int:
    if getattr(args, "negvqa_command", None) == "summary":
        return args.summary_handler(args)
    spec = _spec(args)
    missing = [flag for flag, value in (("--data", args.data), ("--out", args.out)) if not value]
    if missing:
        raise UsageError(f"negvqa needs {' and '.join(missing)} (see `negt2ibench negvqa --help`)")
    import json

    from judges.registry import required_adapter_class

    from .data import parse_columns, read_questions

    columns = parse_columns(args.columns)
    judge_class = required_adapter_class(spec, download=args.download)  # before the data and torch
    data = read_questions(args.data, columns=columns, data_file=args.data_file)
    for line in data.malformed[:SHOWN_MALFORMED]:
        print(f"malformed: {line}", file=sys.stderr)
    if len(data.malformed) > SHOWN_MALFORMED:
        more = len(data.malformed) - SHOWN_MALFORMED
        print(f"malformed: ... and {more} more (OUT.run.json lists them all)", file=sys.stderr)
    from .runner import run_negvqa  # torch: once the weights and the data are known to be here

    adapter = judge_class(spec, device=args.device, batch_size=args.batch_size, **download_options(args))
    run = run_negvqa(
        data,
        adapter,
        out_path=args.out,
        original=args.original,
        generate=args.generate,
        limit=args.limit,
        progress=not args.no_progress,
        num_workers=args.num_workers,
    )
    print(run.line())
    if run.error_reasons:
        print("errors: " + ", ".join(f"{reason} ×{count}" for reason, count in sorted(run.error_reasons.items())))
    if args.json:
        print(json.dumps(run.to_dict()))
    return 0


def run_summary(args: argparse.Namespace) -> int:
    from negt2ibench.core.atomic import write_atomic
    from negt2ibench.core.strict_json import dumps
    from negt2ibench.core.table import to_json, to_markdown

    from .records import original_path, read_negvqa_records
    from .summary import domain_table, group_by_judge, headline, judges_table, source_table, summarize_judge

    paths = list(dict.fromkeys(args.records))
    for path in list(paths):  # the originals beside each file, read without being named
        beside = original_path(path)
        if beside.is_file() and beside not in paths and not path.stem.endswith(".original"):
            paths.append(beside)
    judges = group_by_judge([(str(path), read_negvqa_records(path, strict=False)) for path in paths])
    summaries = [
        summarize_judge(judge, resamples=args.bootstrap, seed=args.seed, confidence=args.confidence) for judge in judges
    ]
    table = judges_table(summaries)
    blocks = [line for summary in summaries for line in headline(summary)]
    if len(summaries) == 1:
        blocks += ["", to_markdown(domain_table(summaries[0])), "", to_markdown(source_table(summaries[0]))]
    else:
        blocks += ["", to_markdown(table)]
    print("\n".join(blocks))
    if args.json:
        write_atomic(args.json, dumps({"judges": summaries, "table": to_json(table)}, indent=2))
        print(f"\nwrote {args.json}")
    if args.plot:
        from .plot import plot_domains

        plot_domains(summaries, args.plot)
        print(f"wrote {args.plot}")
    return 0
