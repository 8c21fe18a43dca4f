"""Mutation testing of the rules that guard the leaderboard and the reports (run by hand, not a test).

    .venv/bin/python benchmarks/mutants.py                 # the table: every mutation must fail a fast test
    .venv/bin/python benchmarks/mutants.py --generated     # the generated pass (docs/contributing.md)
    .venv/bin/python benchmarks/mutants.py --list          # what would run, without running it

Each mutation is applied to a temporary copy of the repository (the files git tracks, and those it
does not ignore, as they are in the work tree now), and the fast tests that should catch it (`-m "not
slow"`) run there, stopping at the first failure; the checkout itself is never written. A mutant is
*killed* when a test fails (its first failure is shown: the test and its assertion), *timed out* when
its tests ran past `--timeout`, and *survives* when they all pass.

- `TABLE`: the surviving mutations of issue 44's audit (and the two findings beside it: the verdict of
  an `error: ""` row, the frozen twin's constraints), each written as the exact text it replaces.
  The command exits 1 unless every one is killed by a failing test (a timeout or an error collecting
  the tests does not count); tests/project/test_mutants.py runs it.
- `--generated`: every mutant `benchmarks/mutant_operators.py` makes of the modules of `GENERATED`
  (the spot check and its plan, the compared fields, names, holds, the relation rules, the report's
  aggregation), each run against that module's tests; prints the score and each survivor.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutant_operators import mutants  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOLDS_TESTS = ("tests/leaderboard/checks/test_full_rescore_policy.py",)
NEGVQA_TESTS = ("tests/judges/test_negvqa_summary.py",)
FROZEN_TESTS = ("tests/core/test_frozen.py",)


@dataclass(frozen=True)
class Mutation:
    """Replace `old` (found exactly once in `path`) by `new`; `tests` should then fail."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


TABLE: tuple[Mutation, ...] = (
    Mutation(
        "compared: the statement-count check dropped",
        "leaderboard/checks/compared_fields.py",
        '    if len(submitted.statements) != len(rescored.statements):\n        found.append(f"submitted {len(sub',
        '    if False:\n        found.append(f"submitted {len(sub',
        ("tests/leaderboard/checks/test_compared_fields.py",),
    ),
    Mutation(
        "names: mutual confusable pairs mapped to each other",
        "leaderboard/text/submitted_names.py",
        "mapping[key] = min(key, other) if mutual else other",
        "mapping[key] = other",
        ("tests/leaderboard/text/test_submitted_names.py",),
    ),
    Mutation(
        "holds: `check_rejections` counts any rejection, not only a check's (one at validation too)",
        "leaderboard/checks/full_rescore_policy.py",
        'return "spot check" if entry.verification is not None else ""',
        'return "spot check"',
        HOLDS_TESTS,
    ),
    Mutation(
        "holds: `check_rejections` counts other accounts' rejections",
        "leaderboard/checks/full_rescore_policy.py",
        "e.submitter == submitter and caught_by(e)",
        "caught_by(e)",
        HOLDS_TESTS,
    ),
    Mutation(
        "holds: `ranked_on_a_sample` also holds entries verified by a full re-score",
        "leaderboard/checks/full_rescore_policy.py",
        '        and e.verification.method == "sampled"\n',
        "",
        HOLDS_TESTS,
    ),
    Mutation(
        "negvqa: `error_rows` is the number of error kinds",
        "judges/negvqa/summary.py",
        '"error_rows": sum(errors.values()),',
        '"error_rows": len(errors),',
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: `bias_A`'s denominator counts error rows",
        "judges/negvqa/summary.py",
        '"bias_A": share(chosen["A"] - key["A"], len(answered))',
        '"bias_A": share(chosen["A"] - key["A"], len(records.negated))',
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: the originals' error rows paired (as wrong answers)",
        "judges/negvqa/accuracy.py",
        "originals = {r.question_id: r for r in original if r.error is None}",
        "originals = {r.question_id: r for r in original}",
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: `unread` over every answer, not the written replies",
        "judges/negvqa/summary.py",
        "unread = sum(r.generated_letter is None for r in replies)",
        "unread = sum(r.generated_letter is None for r in answered)",
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: `unread` over every record, error rows included",
        "judges/negvqa/summary.py",
        "unread = sum(r.generated_letter is None for r in replies)",
        "unread = sum(r.generated_letter is None for r in records.negated)",
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: the originals' `chosen_A` counts B",
        "judges/negvqa/accuracy.py",
        'sum(o.letter == "A" for _, o in pairs)',
        'sum(o.letter == "B" for _, o in pairs)',
        NEGVQA_TESTS,
    ),
    Mutation(
        "frozen: a field's constraints, alias and options dropped (its default kept)",
        "negt2ibench/core/frozen.py",
        "namespace[name] = copy.copy(info)",
        "namespace[name] = dataclasses.field(default_factory=info.default_factory) if info.default_factory "
        "else info.default",
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: the model's validators dropped",
        "negt2ibench/core/frozen.py",
        "    namespace.update(_validators(model))\n",
        "",
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: the model's configuration dropped (but `extra`)",
        "negt2ibench/core/frozen.py",
        "    config = ConfigDict(**model.model_config)",
        '    config = ConfigDict(extra=model.model_config.get("extra", "ignore"))',
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: a model with a rule it cannot keep twinned all the same",
        "negt2ibench/core/frozen.py",
        "    if refused:\n",
        "    if False:\n",
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: `thaw` validates the values again",
        "negt2ibench/core/frozen.py",
        "    thawed = _thawed(twin)\n",
        "    thawed = model.model_validate(dataclasses.asdict(twin), by_name=True)\n",
        FROZEN_TESTS,
    ),
    Mutation(
        'verdict: an `error: ""` row read as pass or fail (its truthiness)',
        "evaluator/results.py",
        "    return record.error is not None\n",
        "    return bool(record.error)\n",
        ("tests/evaluator/test_results.py",),
    ),
)


# Module → the fast tests that hold it (the generated pass).
GENERATED: dict[str, tuple[str, ...]] = {
    "leaderboard/checks/spot_check_run.py": (
        "tests/leaderboard/checks/test_spot_check_run.py",
        "tests/leaderboard/checks/test_compared_fields.py",
    ),
    "leaderboard/checks/spot_check_policy.py": ("tests/leaderboard/checks/test_spot_check_policy.py",),
    "leaderboard/checks/compared_fields.py": (
        "tests/leaderboard/checks/test_compared_fields.py",
        "tests/evaluator/test_results.py",
    ),
    "leaderboard/text/submitted_names.py": (
        "tests/leaderboard/text/test_submitted_names.py",
        "tests/leaderboard/intake/test_identity_names.py",
    ),
    "leaderboard/checks/full_rescore_policy.py": HOLDS_TESTS,
    "evaluator/rules.py": ("tests/evaluator/test_rules.py",),
    "evaluator/report/aggregate.py": (
        "tests/evaluator/report/test_aggregate.py",
        "tests/evaluator/report/test_tables.py",
    ),
    "evaluator/report/facts.py": ("tests/evaluator/report/test_aggregate.py", "tests/evaluator/report/test_tables.py"),
}


@dataclass(frozen=True)
class Outcome:
    mutation: Mutation
    status: str  # killed | survived | timeout
    detail: str  # the first failing test and why, or what ran
    seconds: float


def work_tree_files(root: Path = ROOT) -> list[str]:
    """The files of the work tree as git sees them: tracked, or untracked and not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def copy_work_tree(target: Path, root: Path = ROOT) -> Path:
    for name in work_tree_files(root):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination)
    return target


def _environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", COLUMNS="400")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def check_copy_is_imported(copy: Path) -> None:
    """The copy's packages must shadow the checkout's (an editable install points at the checkout)."""
    module = "leaderboard.checks.full_rescore_policy"
    probe = f"import {module}, evaluator.results; print({module}.__file__)"
    shown = subprocess.run(
        [sys.executable, "-c", probe], cwd=copy, env=_environment(copy), capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(shown).resolve().is_relative_to(copy.resolve()):
        raise SystemExit(f"the copy's code is not the one imported ({shown}): mutants would run the checkout")


def applied(mutation: Mutation, source: str) -> str:
    """SOURCE with MUTATION made; a mutation whose text is not there exactly once is a ValueError."""
    found = source.count(mutation.old)
    if found != 1:
        raise ValueError(f"{mutation.name}: its text is in {mutation.path} {found} times, not once")
    return source.replace(mutation.old, mutation.new)


_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)


def run_tests(copy: Path, tests: Sequence[str], timeout: float) -> tuple[str, str]:
    """(status, detail) of the fast tests TESTS in COPY: killed (a test failed), survived, or timeout."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-m", "not slow", "-p", "no:cacheprovider"]
    command += ["-p", "no:warnings", "-o", "addopts=", *tests]
    try:
        done = subprocess.run(
            command, cwd=copy, env=_environment(copy), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", f"its tests ran past {timeout:.0f} s"
    if done.returncode == 0:
        return "survived", (done.stdout.strip().splitlines() or [""])[-1]
    failed = _FAILED.search(done.stdout)
    if failed:
        kind = "error in" if failed[1] == "ERROR" else "failed"
        return "killed", f"{kind} {failed[2]}" + (f": {failed[3][:160]}" if failed[3] else "")
    return "killed", f"pytest exited {done.returncode}: {(done.stdout + done.stderr).strip()[-200:]}"


def baseline(copy: Path, mutations: Sequence[Mutation], timeout: float) -> None:
    """The tests of MUTATIONS pass on the unmutated copy (else every mutant would look killed)."""
    for tests in dict.fromkeys(m.tests for m in mutations):
        status, detail = run_tests(copy, tests, timeout)
        if status != "survived":
            print(f"the unmutated code fails {' '.join(tests)}: {detail}", file=sys.stderr, flush=True)
            os._exit(2)


def run_all(mutations: Sequence[Mutation], workers: int, timeout: float) -> list[Outcome]:
    """Each mutation in a copy of the work tree (one copy per worker, restored after each mutant)."""
    pending: queue.Queue[tuple[int, Mutation]] = queue.Queue()
    for item in enumerate(mutations):
        pending.put(item)
    results: dict[int, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="negt2i_mutants_") as scratch:

        def worker(number: int) -> None:
            copy = copy_work_tree(Path(scratch) / f"copy{number}")
            check_copy_is_imported(copy)
            if number == 0:
                baseline(copy, mutations, timeout)
            while True:
                try:
                    position, mutation = pending.get_nowait()
                except queue.Empty:
                    return
                target = copy / mutation.path
                original = target.read_text(encoding="utf-8")
                target.write_text(applied(mutation, original), encoding="utf-8")
                started = time.perf_counter()
                try:
                    status, detail = run_tests(copy, mutation.tests, timeout)
                finally:
                    target.write_text(original, encoding="utf-8")
                results[position] = Outcome(mutation, status, detail, time.perf_counter() - started)
                print(f"[{len(results)}/{len(mutations)}] {status:8} {mutation.name}", flush=True)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(max(1, workers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return [results[k] for k in sorted(results)]


def generated(modules: dict[str, tuple[str, ...]] = GENERATED) -> list[Mutation]:
    """The mutants of each module as `Mutation`s (the changed line as `old`, with its line number in the name)."""
    made = []
    for path, tests in modules.items():
        source = (ROOT / path).read_text(encoding="utf-8")
        for edit, mutated in mutants(source):
            before = source.splitlines()[edit.line - 1].strip()
            name = f"{path}:{edit.line} {edit.operator}: {edit.what} in `{before[:90]}`"
            made.append(Mutation(name, path, source, mutated, tests))
    return made


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generated", action="store_true", help="run the generated pass instead of the table")
    parser.add_argument("--module", action="append", help="with --generated: only this module (repeatable)")
    parser.add_argument("--match", help="only the mutations whose name contains this text")
    parser.add_argument(
        "--rerun", type=Path, help="with --generated: only the mutants this earlier output says survived"
    )
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--workers", type=int, default=2, help="copies run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for one mutant's tests (default 300)")
    args = parser.parse_args(argv)
    if args.generated:
        modules = {m: t for m, t in GENERATED.items() if not args.module or m in args.module}
        chosen = generated(modules)
    else:
        chosen = list(TABLE)
        for mutation in chosen:  # each must apply before anything runs
            applied(mutation, (ROOT / mutation.path).read_text(encoding="utf-8"))
    chosen = [m for m in chosen if not args.match or args.match in m.name]
    if args.rerun:
        survived = re.findall(r"^\[\d+/\d+\] survived (.*)$", args.rerun.read_text(encoding="utf-8"), re.MULTILINE)
        chosen = [m for m in chosen if m.name in set(survived)]
    if args.list:
        print("\n".join(m.name for m in chosen))
        return 0
    outcomes = run_all(chosen, args.workers, args.timeout)
    killed = [o for o in outcomes if o.status == "killed"]
    print(f"\n{len(killed)} of {len(outcomes)} mutants killed ({100 * len(killed) / max(1, len(outcomes)):.1f}%)")
    for outcome in outcomes:
        if outcome.status != "killed" or not args.generated:
            print(f"- {outcome.status}: {outcome.mutation.name} ({outcome.seconds:.0f} s) — {outcome.detail}")
    if args.generated:
        return 0
    by_a_test = [o for o in killed if o.detail.startswith("failed ")]  # not a timeout, not a collection error
    if len(by_a_test) < len(outcomes):
        print(f"{len(outcomes) - len(by_a_test)} of the table's mutants not killed by a failing test")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
