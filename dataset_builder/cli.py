"""Sub-commands `build`, `validate` and `push` of `negt2ibench`."""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from negt2ibench.core.errors import OptionError, UserError
from negt2ibench.core.options import integer, non_negative_int, repo_id

from .layout import DEFAULT_DATASET_DIR
from .vocabulary import CATEGORIES, SETTINGS, setting_label, setting_name

DEFAULT_DIR = str(DEFAULT_DATASET_DIR)
DEFAULT_TRAIN_DIR = f"{DEFAULT_DIR}-train"


def _seed(text: str) -> int:
    try:
        return integer(text)
    except OptionError:
        raise OptionError(f"the seed must be an integer, got {text!r}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `build`, `validate` and `push` to the main parser's sub-commands."""
    _register_build(subparsers)
    _register_validate(subparsers)
    _register_push(subparsers)


def _register_build(subparsers: argparse._SubParsersAction) -> None:
    """`build`: its parser, options and handler."""
    from .corpus import DEFAULT_SEED, DEFAULT_TRAIN_SEED

    build = subparsers.add_parser(
        "build",
        help="build the 4,800 prompts into a Hub-ready dataset folder",
        description=(
            "Build the NegT2IBench corpus (6 categories x 8 polarity settings x 100 prompts) and write a "
            "Hub-ready dataset folder: prompts/test-00000-of-00001.parquet, prompts.jsonl, README.md "
            "(the dataset card) and eval.yaml (what makes the repo a Hub Benchmark: one task per number "
            "ranked, docs/hub.md). The same seed gives byte-identical files. The folder is written to a "
            "temporary folder next to the target and renamed, so an interrupted build leaves nothing half-written."
        ),
        epilog=f"example: negt2ibench build --out {DEFAULT_DIR} --overwrite",
    )
    build.add_argument("--out", metavar="DIR", help=f"dataset folder to write (default: {DEFAULT_DIR})")
    build.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help=f"integer seed of the corpus (default: {DEFAULT_SEED}, the published corpus; train: {DEFAULT_TRAIN_SEED})",
    )
    build.add_argument(
        "--split",
        choices=("test", "train"),
        default="test",
        help=(
            "test: the benchmark; train: training prompts in the same design from another seed, none sharing "
            "objects and predicates with a test prompt, in Flow-GRPO's train_metadata.jsonl too, with GenEval's "
            f"counterpart under geneval/ (default --out {DEFAULT_TRAIN_DIR}; docs/reward.md)"
        ),
    )
    build.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing dataset folder (its images/ and results/ are kept)",
    )
    build.set_defaults(handler=run_build)


def _register_validate(subparsers: argparse._SubParsersAction) -> None:
    """`validate`: its parser, options and handler."""
    validate = subparsers.add_parser(
        "validate",
        help="check every corpus invariant on a built dataset folder",
        description=(
            "Check a built dataset folder: file layout and parquet schema, JSONL = parquet, the card's "
            "configs and corpus version, eval.yaml (every task's config and split declared by the card), "
            "and every corpus invariant (counts, ids, matched groups, shared object "
            "draws across the categories of a kind, class and value balance, unique texts, text <-> metadata, "
            "grammar). Lists each violation by prompt id; exits 1 if any. With --out FIGDIR, also writes the "
            "paper's Figures 5 and 6 for the folder's prompts (figure5.png, figure6.png and their numbers as CSV, "
            "elements.csv: objects + statements per prompt) and says whether each category's objects reach the "
            "most even allocation, per draw and per prompt."
        ),
        epilog=f"example: negt2ibench validate {DEFAULT_DIR} --out figures/",
    )
    validate.add_argument(
        "--out",
        metavar="FIGDIR",
        help="folder for Figures 5 and 6 (PNG + CSV) and elements.csv (created if missing; those files replaced)",
    )
    validate.add_argument(
        "dir", metavar="DIR", nargs="?", default=DEFAULT_DIR, help=f"dataset folder (default: {DEFAULT_DIR})"
    )
    validate.add_argument(
        "--max-shown",
        type=non_negative_int,
        default=200,
        metavar="N",
        help="print at most N violations (default: 200; the count is always printed)",
    )
    validate.set_defaults(handler=run_validate)


def _register_push(subparsers: argparse._SubParsersAction) -> None:
    """`push`: its parser, options and handler."""
    push = subparsers.add_parser(
        "push",
        help="publish the dataset folder to the Hugging Face Hub",
        description=(
            "Upload a built dataset folder as a Hub dataset repo (created if missing), with its eval.yaml "
            "(written again first), which makes the repo a Hub Benchmark once the Hub allow-lists it "
            "(docs/hub.md). The token comes from `hf auth login` or HF_TOKEN. With --images, only those "
            "image splits and README.md are "
            "uploaded. --dry-run lists the files and needs neither a token nor the network."
        ),
        epilog="example: negt2ibench push --repo-id my-org/NegT2IBench --dry-run",
    )
    push.add_argument("--repo-id", required=True, type=repo_id, metavar="ORG/NAME", help="dataset repo on the Hub")
    push.add_argument("--dir", default=DEFAULT_DIR, metavar="DIR", help=f"dataset folder (default: {DEFAULT_DIR})")
    push.add_argument(
        "--images",
        nargs="+",
        metavar="KEY",
        help="upload only these image splits (images/KEY-*.parquet) plus README.md",
    )
    push.add_argument("--private", action="store_true", help="create the repo as private")
    push.add_argument("--dry-run", action="store_true", help="list what would be uploaded; touch nothing")
    push.set_defaults(handler=run_push)


def _summary_table(records) -> str:
    counts = Counter((r.category, r.setting) for r in records)
    settings = [setting_name(p, n) for p, n in SETTINGS]
    header = f"{'category':<12}" + "".join(f"{setting_label(p, n):>6}" for p, n in SETTINGS) + f"{'total':>7}"
    lines = [header]
    for category in CATEGORIES:
        cells = [counts[(category, s)] for s in settings]
        lines.append(f"{category:<12}" + "".join(f"{c:>6}" for c in cells) + f"{sum(cells):>7}")
    totals = [sum(counts[(c, s)] for c in CATEGORIES) for s in settings]
    lines.append(f"{'all':<12}" + "".join(f"{c:>6}" for c in totals) + f"{len(records):>7}")
    return "\n".join(lines)


def run_build(args: argparse.Namespace) -> int:
    from .corpus import DEFAULT_SEED, build_corpus
    from .hub import write_dataset_folder

    if args.split == "train":
        return run_build_train(args)
    seed = DEFAULT_SEED if args.seed is None else args.seed
    started = time.perf_counter()
    records = build_corpus(seed)
    built = time.perf_counter()
    out = write_dataset_folder(records, Path(args.out or DEFAULT_DIR), overwrite=args.overwrite)
    finished = time.perf_counter()
    groups = len({r.group_id for r in records})
    print(_summary_table(records))
    from .corpus import CORPUS_VERSION

    print(
        f"{len(records)} prompts in {groups} matched groups, corpus version {CORPUS_VERSION}, seed {seed}; "
        f"corpus {built - started:.2f} s, files {finished - built:.2f} s"
    )
    print(f"wrote {out}/ (README.md, eval.yaml, prompts/test-00000-of-00001.parquet, prompts.jsonl)")
    return 0


def run_build_train(args: argparse.Namespace) -> int:
    from evaluator.geneval.prompts import load_geneval_prompts
    from evaluator.geneval.train_prompts import geneval_train_prompts

    from .corpus import DEFAULT_SEED, DEFAULT_TRAIN_SEED, build_train_corpus
    from .train_split import write_train_folder

    seed = DEFAULT_TRAIN_SEED if args.seed is None else args.seed
    if seed == DEFAULT_SEED:
        raise OptionError(f"--split train needs another seed than the test split's ({DEFAULT_SEED})")
    records = build_train_corpus(seed, DEFAULT_SEED)
    geneval = geneval_train_prompts()
    out = write_train_folder(
        records,
        Path(args.out or DEFAULT_TRAIN_DIR),
        seed=seed,
        test_seed=DEFAULT_SEED,
        geneval_train=geneval,
        geneval_test=[dict(prompt.metadata) for prompt in load_geneval_prompts()],
        overwrite=args.overwrite,
    )
    print(_summary_table(records))
    print(
        f"{len(records)} training prompts (seed {seed}), none sharing objects and predicates with a test prompt "
        f"(seed {DEFAULT_SEED}); {len(geneval)} GenEval training prompts, none a test prompt's"
    )
    print(
        f"wrote {out}/ (README.md, prompts/train-00000-of-00001.parquet, prompts.jsonl, train_metadata.jsonl, geneval/)"
    )
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from .train_split import is_train_folder
    from .validate import validate_folder

    root = Path(args.dir)
    if not root.is_dir():
        raise UserError(f"{root} is not a folder; build one with `negt2ibench build --out {root}`")
    if is_train_folder(root):
        return _validate_train(root, args)
    started = time.perf_counter()
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise UserError(f"--out {args.out} exists and is not a folder")
    records, violations = validate_folder(root)
    elapsed = time.perf_counter() - started
    if violations:
        for violation in violations[: args.max_shown]:
            print(violation)
        hidden = len(violations) - args.max_shown
        if hidden > 0:
            print(f"... and {hidden} more")
        print(f"INVALID: {len(violations)} violations in {root} ({len(records)} prompts, {elapsed:.2f} s)")
        if args.out and records:
            _write_figures(records, Path(args.out))
        return 1
    from .card import balance_summary
    from .corpus import CORPUS_VERSION
    from .validate import shared_draw_summary

    uses = ", ".join(f"{row['category']} {row['min']}-{row['max']}" for row in balance_summary(records))
    print(f"class uses per category (least-most over its group draws): {uses}")
    shared = "; ".join(
        f"{', '.join(row['categories'])}: {row['shared']}/{row['positions']}" for row in shared_draw_summary(records)
    )
    print(f"shared object draws (prompt k of a setting names the same objects in every category listed): {shared}")
    from .benchmark import EVAL_TASKS

    on = sorted({f"config {task.config}, split {task.split}" for task in EVAL_TASKS})
    print(f"eval.yaml: {len(EVAL_TASKS)} tasks ({', '.join(t.id for t in EVAL_TASKS)}) on {'; '.join(on)}")
    print(
        f"OK: {root} holds {len(records)} valid prompts (corpus version {CORPUS_VERSION}); every invariant holds "
        f"({elapsed:.2f} s)"
    )
    if args.out:
        _write_figures(records, Path(args.out))
    return 0


def _write_figures(records, out: Path) -> None:
    """Figures 5 and 6 into OUT, with the verdict on the most even allocation and the element count."""
    from .balance import mean_elements
    from .figures import write_figures
    from .vocabulary import kind_of

    written, found = write_figures(records, out)
    for counting in ("draw", "prompt"):
        mine = [a for a in found if a.counting == counting]
        holding = [a.category for a in mine if a.holds]
        detail = "; ".join(
            f"{a.category} {min(a.counts)}-{max(a.counts)}"
            + ("" if a.holds else f" (most even {min(a.even)}-{max(a.even)})")
            for a in mine
        )
        verdict = "holds in every category" if len(holding) == len(mine) else f"holds in {len(holding)} of {len(mine)}"
        print(f"most even object allocation per {counting}: {verdict} ({detail})")
    by_kind = {
        kind: mean_elements([r for r in records if kind_of(r.category) == kind]) for kind in ("attribute", "relation")
    }
    print(
        f"objects + statements per prompt: {mean_elements(records):.2f} over the corpus "
        f"(attributes {by_kind['attribute']:.2f}, relations {by_kind['relation']:.2f}; the paper's Table 8 uses 4.66)"
    )
    print(f"wrote {', '.join(path.name for path in written)} to {out}")


def run_push(args: argparse.Namespace) -> int:
    from .hub import push_dataset

    paths = push_dataset(Path(args.dir), args.repo_id, private=args.private, images=args.images, dry_run=args.dry_run)
    verb = "would upload" if args.dry_run else "uploaded"
    print(f"{verb} {len(paths)} files to https://huggingface.co/datasets/{args.repo_id}:")
    for path in paths:
        print(f"  {path}")
    return 0


def _validate_train(root: Path, args: argparse.Namespace) -> int:
    """A training folder: its files and invariants, disjoint from the test split and GenEval's test."""
    from evaluator.geneval.train_prompts import train_prompt_violations

    from .layout import GENEVAL_TRAIN_DIR, TRAIN_METADATA
    from .train_split import validate_train_folder
    from .validate import Violation

    started = time.perf_counter()
    records, violations, test_seed = validate_train_folder(root)
    geneval_file = root / GENEVAL_TRAIN_DIR / TRAIN_METADATA
    where = f"{GENEVAL_TRAIN_DIR}/{TRAIN_METADATA}"
    try:
        lines = [json.loads(line) for line in geneval_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        violations += [Violation(where, problem) for problem in train_prompt_violations(lines)]
    except (OSError, ValueError) as error:
        violations.append(Violation(where, f"unreadable or missing ({error})"))
        lines = []
    elapsed = time.perf_counter() - started
    for violation in violations[: args.max_shown]:
        print(violation)
    if violations:
        print(f"INVALID: {len(violations)} violations in {root} ({len(records)} training prompts, {elapsed:.2f} s)")
        return 1
    print(
        f"OK: {root} holds {len(records)} valid training prompts, none sharing text or objects and predicates "
        f"with the test split (seed {test_seed}), and {len(lines)} GenEval training prompts, none a GenEval test "
        f"prompt's ({elapsed:.2f} s)"
    )
    return 0
