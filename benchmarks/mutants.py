"""Mutation testing of the project's modules (run by hand, not a test; docs/contributing.md).

    .venv/bin/python benchmarks/mutants.py                        # the table: every mutation must fail a fast test
    .venv/bin/python benchmarks/mutants.py --generated            # a sampled pass over every module
    .venv/bin/python benchmarks/mutants.py --generated --guarded --all   # every mutant of the guarded functions
    .venv/bin/python benchmarks/mutants.py --generated --list     # what would run, without running it

Each mutation is applied to a temporary copy of the repository and the fast tests that should catch
it run there; the checkout is never written (`mutant_runner.py`).

- `TABLE` (`mutant_table.py`): hand-written mutations, each the exact text it replaces. The command
  exits 1 unless every one is killed by a failing test (a timeout or an error collecting the tests
  does not count); tests/project/test_mutants.py runs it.
- `--generated`: the mutants `mutant_operators.py` makes of every module of the eight packages but
  the few `mutant_modules.EXCLUDED` names (each with its reason), each run against the test files
  that import its module, and its mirror test file (`mutant_modules.py`). Per module, every mutant of
  a guarded function (`mutant_modules.GUARDED`: the unpickler, the claim, the resolver, the
  regeneration decision) and a seeded sample of `--per-module` others (`--all`: every one); no
  mutant starts after `--minutes`, and the skipped ones are counted. The mutants listed as
  equivalent (`mutant_equivalents.py`) are not run: they are counted apart with their reasons.
  `--save` keeps the outcomes as JSON, `--rerun` runs again the survivors of saved runs, `--resume`
  leaves out the mutants saved runs already ran (a run cut by its bound goes on), `--from` merges
  saved runs, `--write-results` writes the score and the survivors into
  benchmarks/RESULTS.md (its section between `<!-- mutants:begin -->` and `<!-- mutants:end -->`).
"""

from __future__ import annotations

import argparse
import ast
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutant_equivalents import EQUIVALENT  # noqa: E402
from mutant_modules import (  # noqa: E402
    GUARDED,
    excluded_by,
    function_at,
    guards_of,
    importers_tests,
    product_imports,
    product_modules,
    qualified_functions,
    test_imports,
    tests_of,
)
from mutant_operators import apply, compiles, edits  # noqa: E402
from mutant_results import Outcome, Run, Site, load, merged, save, section, summary_line, tally, write_section  # noqa: E402
from mutant_runner import applied, copy_work_tree, run_all  # noqa: E402
from mutant_table import TABLE, Mutation  # noqa: E402

__all__ = ["TABLE", "Mutation", "applied", "copy_work_tree", "generated", "main", "sampled"]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"


def module_mutations(
    path: str, tests: tuple[str, ...], root: Path = ROOT, wider: tuple[str, ...] = ()
) -> list[Mutation]:
    """The mutants of module PATH as `Mutation`s, each with its `Site` (`old` the module's text, `new` the
    mutant's; whether it compiles is checked once it is chosen, `compiled`); WIDER: the tests run on
    one that TESTS let live (`importers_tests`)."""
    source = (root / path).read_text(encoding="utf-8")
    spans = qualified_functions(ast.parse(source))
    lines = source.splitlines()
    made, seen = [], {}
    for edit in edits(source):
        text = lines[edit.line - 1].strip()
        rank = seen[text, edit.column, edit.what] = seen.get((text, edit.column, edit.what), -1) + 1
        function = function_at(spans, edit.line)
        area = guards_of(path, function)
        site = Site(path, edit.line, edit.column, text, edit.operator, edit.what, function, area, rank)
        made.append(Mutation(site.describe(), path, source, apply(source, edit), tests, site, wider))
    return made


def generated(modules: Sequence[str], root: Path = ROOT) -> list[Mutation]:
    """Every mutant of MODULES (relative paths), with the tests found for each module."""
    tests, product = test_imports(root), product_imports(root)
    return [
        mutant
        for path in modules
        for mutant in module_mutations(
            path, tests_of(path, tests, product, root), root, importers_tests(path, tests, product, root)
        )
    ]


def sampled(made: Sequence[Mutation], per_module: int, seed: int) -> list[Mutation]:
    """Of MADE, every mutant of a guarded function and PER_MODULE others of each module, drawn with
    SEED and the module's path (a module's draw does not change when another module changes); in
    run order: the guarded first, then one mutant of each module in turn (a run cut by the time
    bound skips evenly)."""
    chosen: list[tuple[bool, int, str, Mutation]] = []
    for path in dict.fromkeys(m.path for m in made):
        mine = [m for m in made if m.path == path]
        others = [m for m in mine if not (m.site and m.site.area)]
        drawn = set(map(id, random.Random(f"{seed}:{path}").sample(others, min(per_module, len(others)))))
        guarded = [m for m in mine if m.site and m.site.area]
        chosen += [(False, k, path, m) for k, m in enumerate(guarded)]
        chosen += [(True, k, path, m) for k, m in enumerate(m for m in others if id(m) in drawn)]
    return [m for *_, m in sorted(chosen, key=lambda item: item[:3])]


def equivalent_reason(site: Site | None) -> str | None:
    """The reason EQUIVALENT gives for the mutant at SITE, or None when it is not listed."""
    if site is None:
        return None
    for entry in EQUIVALENT:
        if (entry.module, entry.line, entry.change) == (site.module, site.text, site.what):
            return entry.reason
    return None


def chosen_modules(wanted: Sequence[str] | None, root: Path = ROOT) -> list[str]:
    """The product modules under ROOT that WANTED names (a file, or a folder ending in "/"), or all."""
    modules = product_modules(root)
    if not wanted:
        return modules
    for name in wanted:
        if excluded_by(name) and name.endswith(".py"):
            print(f"note: {name} is excluded ({excluded_by(name)}); it is not mutated", file=sys.stderr)
    return [m for m in modules if any(m == w or w.endswith("/") and m.startswith(w) for w in wanted)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--generated", action="store_true", help="the generated pass instead of the table")
    add("--module", action="append", help="only this module, or the modules under this folder/ (repeatable)")
    add("--match", help="only the mutations whose name contains this text")
    add("--guarded", action="store_true", help="only the mutants of the guarded functions")
    add("--per-module", type=int, default=3, help="mutants drawn per module besides the guarded (default 3)")
    add("--all", action="store_true", help="every mutant of the chosen modules, no sample")
    add("--seed", type=int, default=0, help="the sample's seed (default 0)")
    add("--minutes", type=float, default=240.0, help="start no mutant after this many minutes (default 240)")
    add("--rerun", type=Path, action="append", help="only the survivors of this saved run (repeatable)")
    add("--resume", type=Path, action="append", help="leave out the mutants this saved run ran (repeatable)")
    add("--save", type=Path, help="save the outcomes as JSON (for --rerun and --from)")
    add("--from", dest="saved", type=Path, nargs="+", help="run nothing: merge these saved runs")
    add("--write-results", action="store_true", help="write the score into RESULTS.md's mutants section")
    add("--results-file", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    add("--list", action="store_true", help="list the mutations and exit")
    add("--workers", type=int, default=2, help="copies run at once (default 2)")
    add("--timeout", type=float, default=300.0, help="seconds for one mutant's tests (default 300)")
    return parser


def selection(args: argparse.Namespace, root: Path = ROOT) -> tuple[list[Mutation], int]:
    """The generated mutants ARGS choose, in run order, and how many the chosen modules make."""
    modules = chosen_modules(args.module, root)
    if args.guarded:
        modules = [path for path in modules if any(guard.module == path for guard in GUARDED)]
    made = generated(modules, root)
    if args.guarded:
        made = [m for m in made if m.site and m.site.area]
    if args.match:
        made = [m for m in made if args.match in m.name]
    if args.rerun:
        outcomes, _ = merged([load(path) for path in args.rerun])
        again = {o.site.key for o in outcomes if o.site and o.status in ("survived", "timeout", "broken")}
        chosen = [m for m in made if m.site and m.site.key in again]
    else:
        chosen = list(made) if args.all else sampled(made, args.per_module, args.seed)
    if args.resume:
        done = {o.site.key for o in merged([load(path) for path in args.resume])[0] if o.site}
        chosen = [m for m in chosen if m.site and m.site.key not in done]
    return [m for m in chosen if compiles(m.new)], len(made)


def tree_commit(root: Path = ROOT) -> str:
    """HEAD's short commit, and whether tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True)
    return head.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")


def run_generated(args: argparse.Namespace, argv: Sequence[str], root: Path = ROOT) -> Run:
    """The generated pass ARGS ask for, as a `Run` (the listed equivalents counted, not run)."""
    chosen, made = selection(args, root)
    run = Run(time.strftime("%Y-%m-%d", time.gmtime()), tree_commit(root), " ".join(["mutants.py", *argv]), made)
    run.selected = [m.site.key for m in chosen if m.site]
    listed = [(m, equivalent_reason(m.site)) for m in chosen]
    run.outcomes = [Outcome(m.name, "equivalent", why, 0.0, m.site) for m, why in listed if why is not None]
    to_run = [m for m, why in listed if why is None]
    print(f"{len(to_run)} mutants to run of {made} made ({len(run.outcomes)} listed as equivalent)", flush=True)
    run.outcomes += run_all(to_run, args.workers, args.timeout, args.minutes, root)
    return run


def report(runs: Sequence[Run]) -> None:
    """Print the score of RUNS (merged), each survivor, and each listed equivalent with its reason."""
    outcomes, skipped = merged(runs)
    print(f"\n{summary_line(tally(outcomes), skipped)}")
    for outcome in outcomes:
        if outcome.status != "killed":
            print(f"- {outcome.status}: {outcome.name} ({outcome.seconds:.0f} s) — {outcome.detail}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if not args.generated:
        return run_table(args)
    if args.list:
        chosen, made = selection(args)
        print("\n".join(("guarded " if m.site and m.site.area else "        ") + m.name for m in chosen))
        print(f"{len(chosen)} of {made} mutants")
        return 0
    runs = [load(path) for path in args.saved] if args.saved else [run_generated(args, argv)]
    if args.save and not args.saved:
        save(runs[0], args.save)
    report(runs)
    if args.write_results:
        write_section(args.results_file, section(runs))
        print(f"written: {args.results_file}")
    return 0


def run_table(args: argparse.Namespace) -> int:
    """The table's mutations; 1 unless each is killed by a failing test."""
    chosen = [m for m in TABLE if not args.match or args.match in m.name]
    for mutation in chosen:  # each must apply before anything runs
        applied(mutation, (ROOT / mutation.path).read_text(encoding="utf-8"))
    if args.list:
        print("\n".join(m.name for m in chosen))
        return 0
    outcomes = run_all(chosen, args.workers, args.timeout)
    killed = [o for o in outcomes if o.status == "killed"]
    print(f"\n{len(killed)} of {len(outcomes)} mutants killed ({100 * len(killed) / max(1, len(outcomes)):.1f}%)")
    for outcome in outcomes:
        print(f"- {outcome.status}: {outcome.name} ({outcome.seconds:.0f} s) — {outcome.detail}")
    by_a_test = [o for o in killed if o.detail.startswith("failed ")]  # not a timeout, not a collection error
    if len(by_a_test) < len(outcomes):
        print(f"{len(outcomes) - len(by_a_test)} of the table's mutants not killed by a failing test")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
