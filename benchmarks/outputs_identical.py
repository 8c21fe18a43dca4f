"""Every output file byte-identical before and after a change: the same commands, the same inputs, two trees.

    .venv/bin/python benchmarks/outputs_identical.py                  # --before a8621bf, after: this tree
    .venv/bin/python benchmarks/outputs_identical.py --before main --keep build/identical

REF (`--before`, a git ref; default a8621bf, the commit before the refactor series) is checked out as a
temporary `git worktree` (removed after). In each tree a fixed list of commands (`COMMANDS`) runs as
`python -m negt2ibench ...` with PYTHONPATH set to that tree (checked: every package of the project
imports from it), in one and the same work folder (so absolute paths in what they print agree), on
the CPU, offline, without weights, with SOURCE_DATE_EPOCH=1767225600 and PYTHONHASHSEED=0. The inputs
are made once, by REF's code, and copied into the work folder before each tree's run: the examples
(`negt2ibench examples`) and a full 19,200-image result file (`tests.helpers.space_helpers
.write_results`, passes that vary by prompt and sample). Then the sha256 of every file the commands
wrote, and of each command's stdout, stderr (the durations it prints masked) and exit code, is
compared: a table, file by file; exit status 1 on any difference (or a file only one tree wrote), 0
when all are identical.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BEFORE = "a8621bf"
PACKAGES = ("negt2ibench", "dataset_builder", "evaluator", "generation", "judges", "validation", "leaderboard", "space")
SOURCE_DATE_EPOCH = "1767225600"  # 2026-01-01T00:00:00Z, as tests/conftest.py fixes it
REVISION = "0" * 40  # the dataset commit eval-results records (offline: given, not read from the Hub)
INPUTS = ("examples", "full.jsonl", "study")
# What a command prints may time itself ("corpus 0.11 s"): those durations are masked in its logs.
DURATION = re.compile(rb"\b\d+\.\d+ m?s\b")

# The README's first commands (`make run`: build, validate), the examples' commands (examples/README.md),
# `report` and `eval-results` on a full run, GenEval's summary, the agreement studies (the examples' and a
# judge's) and annotations.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("examples", "--out", "examples_written"),
    ("build", "--out", "build/negt2ibench"),
    ("validate", "build/negt2ibench"),
    ("push", "--repo-id", "org/negt2ibench", "--dir", "build/negt2ibench", "--dry-run"),
    ("report", "examples/results/current.jsonl", "--out", "report/"),
    ("report", "full.jsonl", "--out", "report_full/"),
    ("eval-results", "full.jsonl", "--dataset-id", "org/negt2ibench", "--dataset-revision", REVISION)
    + ("--source-url", "https://example.org/negt2ibench", "--out", "negt2ibench.yaml"),
    ("geneval", "summary", "examples/geneval/results.jsonl", "--samples", "1")
    + ("--json", "geneval/summary.json", "--plot", "geneval/ots.png"),
    ("agree", "--annotations", "examples/annotations.jsonl", "--out", "agreement/", "--results")
    + ("examples/results/current.jsonl", "examples/results/no_sam.jsonl", "examples/results/c2.jsonl"),
    ("agree", "--annotations", "study/annotations.jsonl", "--out", "agreement_judge/", "--bootstrap", "50")
    + ("--results", "study/current.jsonl", *(f"study/q8.{mode}.jsonl" for mode in ("whole", "pos", "neg"))),
    ("annotation-sample", "--images", "examples/dataset", "--per-category", "2", "--out", "sample2.jsonl"),
    ("annotations", "import", "examples/annotations.jsonl", "--home", "store/"),
    ("annotations", "export", "--home", "store/", "--out", "exported.jsonl"),
)

# The full result file: every prompt × 4 samples, passes varying by prompt and sample (values with
# decimals in every column), written by the tree's own test helper.
WRITE_FULL = """
from pathlib import Path
from dataset_builder.loading import load_prompts
from tests.helpers.space_helpers import write_results
write_results(Path("full.jsonl"), load_prompts(None), "toy",
              passed=lambda p, s: (int(p.prompt_id[-3:]) * 7 + s * 3) % 10 < 3)
"""

# Every command's and sub-command's --help, one file each under helps/ (as argparse prints it at COLUMNS=100).
WRITE_HELPS = """
import argparse
from pathlib import Path
from negt2ibench.cli import build_parser

def walk(parser, names):
    out = Path("helps") / ("_".join(names) or "negt2ibench")
    out.parent.mkdir(exist_ok=True)
    out.with_suffix(".txt").write_text(parser.format_help(), encoding="utf-8")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                walk(sub, [*names, name])

walk(build_parser(), [])
"""

# A judge's agreement study: 600 images, 3 annotators, the scorer, Qwen3-VL-8B's three modes and its run
# record (the records of tests/validation/test_agree_paper_tables.py, hand-derived there).
WRITE_STUDY = """
import json
from pathlib import Path
from tests.helpers.validation_helpers import study, write_jsonl
from tests.validation.test_agree_paper_tables import judge_run
folder = Path("study")
folder.mkdir()
annotations, scorer = study(tp=180, tn=330, fp=40, fn=50)
write_jsonl(annotations, folder / "annotations.jsonl")
write_jsonl(scorer, folder / "current.jsonl")
for mode in ("whole", "pos", "neg"):
    write_jsonl(judge_run(mode), folder / f"q8.{mode}.jsonl")
record = {"judge": "qwen3_vl_8b", "params": "8B", "peak_memory_gib": 16.0, "memory_kind": "cuda"}
record |= {"seconds_per_question": 0.1, "seconds_per_image": 1.3, "modes": {"pos": {"questions_per_image": 5.0}}}
(folder / "q8.run.json").write_text(json.dumps(record))
"""


@dataclass(frozen=True)
class Difference:
    """One output compared: its path in the work folder and its sha256 in each tree (None: not written)."""

    path: str
    before: str | None
    after: str | None

    @property
    def identical(self) -> bool:
        return self.before == self.after

    @property
    def verdict(self) -> str:
        if self.identical:
            return "yes"
        return "no" if self.before and self.after else "only " + ("before" if self.before else "after")


def environment(tree: Path, work: Path) -> dict[str, str]:
    """The variables every command runs under: the tree's code first, CPU, offline, a fixed clock."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("NEGT2I_", "HF_"))}
    env.update(
        PYTHONPATH=str(tree),
        SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH,
        PYTHONHASHSEED="0",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(work.parent / "hf_home"),
        NEGT2I_HOME=str(work / "home"),
        CUDA_VISIBLE_DEVICES="",
        MPLBACKEND="Agg",
        TZ="UTC",
        LC_ALL="C.UTF-8",
        COLUMNS="100",
    )
    return env


def python(tree: Path, work: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run `python ARGS` in WORK with TREE's code."""
    return subprocess.run(
        [sys.executable, *args], cwd=work, env=environment(tree, work), capture_output=True, check=False
    )


def check_imports_from(tree: Path, work: Path) -> None:
    """Refuse to go on unless every project package imports from TREE (not an installed copy)."""
    probe = "import importlib, sys\nfor name in sys.argv[1:]:\n    print(importlib.import_module(name).__file__)"
    done = python(tree, work, "-c", probe, *PACKAGES)
    if done.returncode != 0:
        raise SystemExit(f"cannot import the project from {tree}: {done.stderr.decode(errors='replace').strip()}")
    for name, file in zip(PACKAGES, done.stdout.decode().split(), strict=True):
        if not Path(file).resolve().is_relative_to(tree.resolve()):
            raise SystemExit(f"{name} imports from {file}, not from {tree}")


@contextmanager
def checkout(ref: str, parent: Path) -> Iterator[Path]:
    """REF as a detached `git worktree` under PARENT, removed afterwards."""
    folder = parent / "before-tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(folder), ref], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False)


def make_inputs(tree: Path, folder: Path) -> None:
    """The shared inputs, written once by TREE's code into FOLDER."""
    folder.mkdir(parents=True)
    for args in (("-m", "negt2ibench", "examples", "--out", "examples"), ("-c", WRITE_FULL), ("-c", WRITE_STUDY)):
        done = python(tree, folder, *args)
        if done.returncode != 0:
            raise SystemExit(f"inputs not made ({args[-1][:40]}): {done.stderr.decode(errors='replace')[-500:]}")


def run_commands(tree: Path, work: Path, inputs: Path, into: Path, progress: bool) -> None:
    """Run COMMANDS with TREE's code in an empty WORK (the inputs copied in); move what they wrote to INTO.

    Each command's stdout, stderr (durations masked) and exit code go to INTO/_commands/NN.{out,err,rc}."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(inputs, work)
    check_imports_from(tree, work)
    logs = into / "_commands"
    logs.mkdir(parents=True)
    for number, command in enumerate(COMMANDS, 1):
        if progress:
            print(f"  [{number:2d}/{len(COMMANDS)}] negt2ibench {' '.join(command)}", file=sys.stderr, flush=True)
        done = python(tree, work, "-m", "negt2ibench", *command)
        (logs / f"{number:02d}.out").write_bytes(DURATION.sub(b"<duration>", done.stdout))
        (logs / f"{number:02d}.err").write_bytes(DURATION.sub(b"<duration>", done.stderr))
        (logs / f"{number:02d}.rc").write_text(f"{done.returncode}\n")
    helps = python(tree, work, "-c", WRITE_HELPS)
    (logs / "helps.err").write_bytes(helps.stderr)
    (logs / "helps.rc").write_text(f"{helps.returncode}\n")
    for name in INPUTS:
        if (work / name).is_dir():
            shutil.rmtree(work / name)
        else:
            (work / name).unlink()
    for entry in work.iterdir():
        shutil.move(str(entry), str(into / entry.name))


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file under FOLDER, by its path relative to FOLDER."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def compare(before: Path, after: Path) -> list[Difference]:
    """Every output either tree wrote, with its digest in each."""
    old, new = digests(before), digests(after)
    return [Difference(path, old.get(path), new.get(path)) for path in sorted(old.keys() | new.keys())]


def table(rows: list[Difference], only_differences: bool) -> str:
    """The comparison as a Markdown table (file, identical)."""
    lines = ["| file | identical |", "|---|---|"]
    for row in rows:
        if only_differences and row.identical:
            continue
        lines.append(f"| `{row.path}` | {row.verdict} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="outputs_identical.py",
        description="Run the same output-writing commands (examples, build, validate, push --dry-run, "
        "report, eval-results, geneval summary, agree over the scorer's presets and over a judge's modes, "
        "annotation-sample, annotations, and every command's --help) on the same inputs with the code of REF "
        "and of this tree, and compare every file written, byte for byte (sha256). Exit 1 if any differs.",
    )
    parser.add_argument(
        "--before",
        default=DEFAULT_BEFORE,
        metavar="REF",
        help="git ref of the tree before (default %(default)s: the commit before the refactor series)",
    )
    parser.add_argument(
        "--after", default=str(ROOT), metavar="DIR", help="the tree to compare (default: this checkout)"
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep both trees' outputs here (must not exist)")
    parser.add_argument("--all", action="store_true", help="list identical files too, not only the differences")
    parser.add_argument("--no-progress", action="store_true", help="do not name each command as it runs")
    args = parser.parse_args(argv)
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep} exists: name a new folder")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    after_tree = Path(args.after).resolve()
    with tempfile.TemporaryDirectory(prefix="outputs-identical-") as temp:
        scratch = Path(temp)
        with checkout(args.before, scratch) as before_tree:
            inputs = scratch / "inputs"
            make_inputs(before_tree, inputs)
            work = scratch / "work"
            outputs = {"before": scratch / "out-before", "after": scratch / "out-after"}
            for label, tree in (("before", before_tree), ("after", after_tree)):
                if not args.no_progress:
                    print(f"{label}: {tree}", file=sys.stderr, flush=True)
                run_commands(tree, work, inputs, outputs[label], progress=not args.no_progress)
        rows = compare(outputs["before"], outputs["after"])
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            for label, folder in outputs.items():
                shutil.copytree(folder, args.keep / label)
    differing = [row for row in rows if not row.identical]
    print(f"before: {args.before}; after: {after_tree}; {len(COMMANDS)} commands")
    print(table(rows, only_differences=not args.all))
    print(f"{len(rows)} files compared (stdout, stderr and exit code of each command included): ", end="")
    print("all identical" if not differing else f"{len(differing)} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
