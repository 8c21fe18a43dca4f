"""`negt2ibench annotation-sample`, `annotations export|import` and `agree`: the validation commands.

Thin shells: parse options, read files, call the pure functions of this package, write files.
"""

from __future__ import annotations

import argparse
import textwrap
from collections import Counter
from pathlib import Path

from negt2ibench.core.errors import UserError
from negt2ibench.core.options import (
    add_home_option,
    add_interval_options,
    add_prompts_option,
    add_seed_option,
    positive_int,
)

_PROMPTS_HELP = "prompt records (dataset folder, prompts.jsonl or parquet); default: the built-in corpus"


def _prompts(source: str | Path | None) -> dict:
    """{prompt_id: PromptRecord} from `source` (None: the built-in corpus; a source that cannot be
    read is `load_prompts`'s `UserError`)."""
    from dataset_builder.loading import load_prompts

    return {record.prompt_id: record for record in load_prompts(source)}


def _has_prompts(folder: Path) -> bool:
    return (folder / "prompts.jsonl").is_file() or any((folder / "prompts").glob("*.parquet"))


# --------------------------------------------------------------------------------- annotation-sample


def _sample(args: argparse.Namespace) -> int:
    from .sample import dataset_candidates, stratified_sample, write_sample

    dataset = Path(args.images)
    if not dataset.is_dir():
        raise UserError(f"{dataset}: not a dataset folder (one holding images/<split>-*.parquet)")
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise UserError(f"{out} exists (annotations may refer to it); pass --overwrite to replace it")
    source = args.prompts if args.prompts else (dataset if _has_prompts(dataset) else None)
    prompts = _prompts(source)
    candidates = dataset_candidates(dataset, args.splits, prompts)
    sample = stratified_sample(candidates, per_category=args.per_category, seed=args.seed)
    if not sample:
        raise UserError(f"{dataset}: no images to sample")
    write_sample(sample, out)

    def spread(attribute: str) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(Counter(getattr(i, attribute) for i in sample).items()))

    print(f"wrote {len(sample)} images to {out} (seed {args.seed}) from {len(candidates)} in {dataset}")
    for attribute in ("category", "setting", "model_key"):
        print(f"  by {attribute.replace('model_key', 'split')}: {spread(attribute)}")
    drawn = Counter(i.category for i in sample)
    categories = sorted({prompt.category for prompt in prompts.values()})  # a category without images is short too
    short = {c: args.per_category - drawn[c] for c in categories if drawn[c] < args.per_category}
    if short:
        print("note: too few images for " + ", ".join(f"{c} (short by {n})" for c, n in sorted(short.items())))
    return 0


# -------------------------------------------------------------------------------------- annotations


def _export(args: argparse.Namespace) -> int:
    from leaderboard.store.sqlite_store import open_store

    from .annotations import write_annotations

    store = open_store(args.home)
    records = store.annotations(args.annotator)
    count = write_annotations(records, args.out)
    images = len({r.image_key for r in records})
    print(
        f"wrote {count} annotation records ({images} images, {len({r.annotator for r in records})} annotators) "
        f"from {store!r} to {args.out}"
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    from leaderboard.store.sqlite_store import open_store

    from .annotations import check_against_prompt, read_annotations

    records = read_annotations(args.file)  # refuses two lines of one image × annotator
    prompts = _prompts(args.prompts)
    for record in records:
        if record.prompt_id not in prompts:
            raise UserError(f"{args.file}: unknown prompt id {record.prompt_id!r} (another corpus? pass --prompts)")
        check_against_prompt(record, prompts[record.prompt_id])
    store = open_store(args.home)
    stored = {(r.image_key, r.annotator): r for r in store.annotations()}
    identical = [r for r in records if (old := stored.get((r.image_key, r.annotator))) and old.same_answers(r)]
    conflicts = [r for r in records if (old := stored.get((r.image_key, r.annotator))) and not old.same_answers(r)]
    if conflicts and args.on_conflict == "fail":
        first = conflicts[0]
        raise UserError(
            f"{len(conflicts)} record(s) answer differently from the stored ones for the same image and annotator "
            f"(first: {first.annotator!r} on {first.model_key}/{first.prompt_id}#{first.sample_index}); nothing "
            "imported. Pass --on-conflict keep to keep the stored answers, or replace to take the file's"
        )
    skip = {id(r) for r in identical}
    if args.on_conflict == "keep":
        skip |= {id(r) for r in conflicts}
    new = [r for r in records if id(r) not in skip]
    written = store.add_annotations(new) if new else 0
    replaced = len(conflicts) if args.on_conflict == "replace" else 0
    kept = len(conflicts) if args.on_conflict == "keep" else 0
    print(
        f"imported {written} of {len(records)} records into {store!r}: {len(identical)} already stored "
        f"(identical), {replaced} replaced, {kept} conflicting kept as stored"
    )
    return 0


# -------------------------------------------------------------------------------------------- agree


def _names(runs_records: list[tuple[Path, list]]) -> list[str]:
    """Evaluator names from the records, made unique with the file stem (then a number)."""
    base = [records[0].evaluator if records else path.stem for path, records in runs_records]
    counts = Counter(base)
    names = [f"{n} ({path.stem})" if counts[n] > 1 else n for n, (path, _) in zip(base, runs_records, strict=True)]
    seen: Counter[str] = Counter()
    unique = []
    for name in names:
        seen[name] += 1
        unique.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return unique


def _negvqa_records(paths) -> list:
    """The NegVQA records of `agree --negvqa FILE...`, by judge (each file's originals read beside it)."""
    if not paths:
        return []
    from judges.negvqa.records import original_path, read_negvqa_records
    from judges.negvqa.summary import group_by_judge

    files = list(dict.fromkeys(Path(p) for p in paths))
    files += [original_path(p) for p in list(files) if original_path(p).is_file() and original_path(p) not in files]
    return group_by_judge([(str(path), read_negvqa_records(path, strict=False)) for path in files])


def _agree(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from evaluator.resultio import read_results

    from .agreement import compute_agreement
    from .annotations import read_annotations
    from .costs import gather_costs
    from .labels import build_labels
    from .report import main_table, section_markdown, write_report
    from .runs import check_results

    prompts = _prompts(args.prompts)
    labels = build_labels(read_annotations(args.annotations), prompts)
    labels.require_labels(args.annotations)
    files = [(Path(p), read_results(p)) for p in args.results]
    negvqa = _negvqa_records(args.negvqa or ())  # before any statistic: a bad file fails fast
    costs = gather_costs(args.results, args.costs or ())  # before any statistic: a bad record fails fast
    runs = [
        check_results(records, prompts, name=name, source=str(path))
        for name, (path, records) in zip(_names(files), files, strict=True)
    ]
    with tqdm(total=len(runs), desc="agree", unit="evaluator", disable=None) as bar:

        def progress(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update(0)

        report = compute_agreement(
            labels,
            runs,
            resamples=args.bootstrap,
            seed=args.seed,
            confidence=args.confidence,
            progress=progress,
            probe_inputs={"negvqa": negvqa} if negvqa else None,
        )
        bar.update(len(runs))
    written = write_report(report, args.out, costs)
    print(section_markdown(main_table(report)))
    if "negvqa" in report.get("probes", {}):
        from .negvqa_probe import negvqa_markdown

        print(negvqa_markdown(report["probes"]["negvqa"]))
    if labels.under_annotated:
        print(f"note: {len(labels.under_annotated)} annotated image(s) have fewer than 3 annotators and are not used")
    for name, block in report["evaluators"].items():
        cov = block["coverage"]
        left_out = {k: cov[k] for k in ("error_rows", "not_annotated", "under_annotated") if cov[k]}
        if left_out:
            detail = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in left_out.items())
            print(f"note: {name}: {cov['used']} images compared; left out {detail}")
    if costs:
        print("costs (Table 2) from " + ", ".join(f"{key}: {cost.source}" for key, cost in costs.items()))
    names = [p.name for p in written if not p.name.startswith("table")]
    print(f"wrote {', '.join(names)} and the paper's tables (table2 … table13: .md, .csv, .json) to {args.out}")
    return 0


# ----------------------------------------------------------------------------------------- register


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `annotation-sample`, `annotations` (export, import) and `agree` to the main parser's sub-commands."""
    _register_annotation_sample(subparsers)
    _register_annotations(subparsers)
    _register_agree(subparsers)


def _register_annotation_sample(subparsers: argparse._SubParsersAction) -> None:
    """`annotation-sample`: its parser, options and handler."""
    sample = subparsers.add_parser(
        "annotation-sample",
        help="draw the seeded, stratified sample of images to annotate (docs/validation.md)",
        description=textwrap.fill(
            "Write sample.jsonl: --per-category images per category, spread evenly over the 8 settings and the "
            "chosen splits, seeded. One line per image: its key (prompt_id, model_key, sample_index), category, "
            "setting, and where the annotation UI fetches it (dataset folder, parquet shard, row).",
            width=88,
        ),
        epilog="example:\n  negt2ibench annotation-sample --images build/negt2ibench --splits sd_1_5 flux_2_dev "
        "--out sample.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sample.add_argument(
        "--images", required=True, metavar="DATASET", help="dataset folder with images/<split>-*.parquet"
    )
    sample.add_argument(
        "--splits", nargs="+", metavar="SPLIT", help="image splits (model keys) to draw from; default all"
    )
    sample.add_argument("--out", required=True, metavar="FILE", help="sample JSONL to write")
    sample.add_argument(
        "--per-category", type=positive_int, default=100, metavar="N", help="images per category (default 100)"
    )
    add_seed_option(sample, "seed of the draw (default 0)")
    add_prompts_option(sample, _PROMPTS_HELP.replace("default:", "default: DATASET's, else"), metavar="SRC")
    sample.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    sample.set_defaults(handler=_sample)


def _register_annotations(subparsers: argparse._SubParsersAction) -> None:
    """`annotations export` and `annotations import`: their parsers, options and handlers."""
    annotations = subparsers.add_parser(
        "annotations",
        help="export or import human annotations (the leaderboard store's annotation records)",
        description="Annotations live in the leaderboard store (SQLite under NEGT2I_HOME, or the Hub repo named by "
        "NEGT2I_RESULTS_REPO). `export` writes them as annotations.jsonl; `import` adds records made elsewhere.",
    )
    actions = annotations.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write the stored annotation records as JSONL")
    export.add_argument("--out", required=True, metavar="FILE", help="annotations JSONL to write (replaced)")
    export.add_argument("--annotator", metavar="NAME", help="only this annotator's records")
    add_home_option(export, "NEGT2I_HOME of the store (default $NEGT2I_HOME or ~/.cache/negt2ibench)")
    export.set_defaults(handler=_export)
    imported = actions.add_parser(
        "import",
        help="add annotation records from a JSONL file (validated against the prompts)",
        description="Validate every record (schema, prompt id, the prompt's objects and statements) and store "
        "them in one transaction. Two lines of one image × annotator in FILE are refused. A record for an image and "
        "annotator already stored with the same answers is skipped; with other answers --on-conflict decides.",
    )
    imported.add_argument("file", metavar="FILE", help="annotations JSONL")
    imported.add_argument(
        "--on-conflict",
        choices=("fail", "keep", "replace"),
        default="fail",
        help="stored record of the same image and annotator with other answers: fail (default, nothing imported), "
        "keep the stored one, or replace it",
    )
    add_prompts_option(imported, _PROMPTS_HELP, metavar="SRC")
    add_home_option(imported, "NEGT2I_HOME of the store", metavar="DIR")
    imported.set_defaults(handler=_import)


def _register_agree(subparsers: argparse._SubParsersAction) -> None:
    """`agree`: its parser, options and handler."""
    agree = subparsers.add_parser(
        "agree",
        help="agreement of evaluators with the human annotations (paper Tables 2, 5-7, 9-13)",
        description=textwrap.fill(
            "Compare each results file (one evaluator's verdicts: `negt2ibench score` output under any preset, or a "
            "judge's) with the majority label of three annotators. Writes DIR/agreement.json (fractions), "
            "DIR/agreement.md (percentages), CSVs, and the paper's Tables 2, 5, 6, 7, 9, 10, 11, 12 and 13 in its "
            "layout (DIR/table2.md, .csv, .json ... table13.*; a judge's modes side by side), and prints the main "
            "table. Table 2's cost columns come from run records: the ones `judge` writes beside its results "
            "(OUT.run.json), or --costs; blank without one. Images without three annotators, and error rows, are "
            "counted and reported, not compared.",
            width=88,
        ),
        epilog="example:\n  negt2ibench agree --annotations annotations.jsonl --results current.jsonl q8.whole.jsonl "
        "q8.pos.jsonl q8.neg.jsonl --out agreement/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agree.add_argument(
        "--annotations", required=True, metavar="FILE", help="annotations JSONL (from `annotations export`)"
    )
    agree.add_argument(
        "--results", required=True, nargs="+", metavar="FILE", help="result JSONL files, one per evaluator"
    )
    agree.add_argument(
        "--out", required=True, metavar="DIR", help="folder for agreement.json / .md / *.csv and table{N}.md/.csv/.json"
    )
    agree.add_argument(
        "--costs",
        nargs="+",
        metavar="FILE",
        help='cost records for Table 2 (a judge\'s OUT.run.json, or JSON {"evaluator", "params", '
        '"peak_memory_gib", "seconds_per_image"}); default: the run records beside the results',
    )
    agree.add_argument(
        "--negvqa",
        nargs="+",
        metavar="FILE",
        help="NegVQA records of the judges (`negt2ibench negvqa --out FILE`): each judge's NegVQA accuracy is "
        "printed beside its Table 2 and Table 10 figures (docs/judges.md)",
    )
    add_interval_options(agree)
    add_prompts_option(agree, _PROMPTS_HELP, metavar="SRC")
    agree.set_defaults(handler=_agree)
