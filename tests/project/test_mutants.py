"""The mutation harness (`benchmarks/mutants.py` and its `mutant_*.py` modules): its table still
matches the code, its operators make the mutants they say, its copy leaves the checkout alone, every
module of the eight packages is mutated but the reasoned exclusions, each module's tests are found by
their imports, a sample is seeded and the guarded functions are never sampled, no mutant starts
after the time bound, a kill counts only when the test passes without the mutant, the score is
written into benchmarks/RESULTS.md and read from there by docs/contributing.md, every listed
equivalent still names a mutant, and every mutation of the table fails a fast test (slow: one pytest
run per mutant)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import mutant_equivalents  # noqa: E402
import mutant_modules  # noqa: E402
import mutant_operators  # noqa: E402
import mutant_results  # noqa: E402
import mutant_runner  # noqa: E402
import mutants  # noqa: E402


def test_every_mutation_of_the_table_applies_once_and_names_existing_tests():
    for mutation in mutants.TABLE:
        source = (ROOT / mutation.path).read_text(encoding="utf-8")
        changed = mutants.applied(mutation, source)
        assert changed != source, mutation.name
        ast.parse(changed)  # still Python
        assert all((ROOT / test).is_file() for test in mutation.tests), mutation.name
    with pytest.raises(ValueError, match="0 times, not once"):
        mutants.applied(mutants.Mutation("x", "p.py", "absent", "y", ()), "source")


SOURCE = '''"""Doc: 1 < 2."""
from __future__ import annotations


def f(values: list[int], limit: int = 3) -> bool:
    """Not mutated: 0 == 0."""
    kept = [v for v in values if v > 0]
    label = f"{limit + 1} é"
    if not kept and limit >= 2:
        return max(kept) == limit
    return True
'''


def test_the_operators_make_one_edit_each_and_leave_docstrings_annotations_and_f_strings():
    made = [(edit.line, edit.operator, edit.what) for edit, _ in mutant_operators.mutants(SOURCE)]
    assert made == [
        (5, "number", "3 → 4"),
        (7, "compare", "> → >="),
        (7, "condition", "comprehension filter dropped"),
        (7, "number", "0 → 1"),
        (9, "boolean", "and → or"),
        (9, "boolean", "not x → x"),
        (9, "condition", "condition negated"),
        (9, "compare", ">= → >"),
        (9, "number", "2 → 3"),
        (10, "builtin", "max → min"),
        (10, "compare", "== → !="),
        (11, "boolean", "True → False"),
    ]
    for edit, mutated in mutant_operators.mutants(SOURCE):
        changed = [(a, b) for a, b in zip(SOURCE.splitlines(), mutated.splitlines(), strict=True) if a != b]
        assert len(changed) == 1 and changed[0][0].startswith(changed[0][1][: edit.column])  # one line, one place
    by_what = {edit.what: mutated for edit, mutated in mutant_operators.mutants(SOURCE)}
    assert "    kept = [v for v in values if True]" in by_what["comprehension filter dropped"]
    assert "    if not (not kept and limit >= 2):" in by_what["condition negated"]
    assert "    if (kept) and limit >= 2:" in by_what["not x → x"]


def test_the_copy_is_the_work_tree_as_git_sees_it_and_the_checkout_is_untouched(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("build/\n", encoding="utf-8")
    for name, text in {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n", "build/out.txt": "ignored\n"}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "a.py", ".gitignore"], cwd=repo, check=True)
    (repo / "new.py").write_text("z = 3\n", encoding="utf-8")  # untracked, not ignored: copied as it is now
    copy = mutants.copy_work_tree(tmp_path / "copy", repo)
    copied = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert copied == [".gitignore", "a.py", "new.py", "pkg/b.py"]
    mutation = mutants.Mutation("one", "a.py", "x = 1", "x = 2", ())
    target = copy / "a.py"
    target.write_text(mutants.applied(mutation, target.read_text(encoding="utf-8")), encoding="utf-8")
    assert (repo / "a.py").read_text(encoding="utf-8") == "x = 1\n"


def plant(root: Path, files: dict[str, str]) -> Path:
    """Write FILES (relative path → text) under ROOT, make it a git repository with them added."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


PLANTED = {
    "leaderboard/__init__.py": "",
    "leaderboard/store/__init__.py": '"""Docstring only."""\n',
    "leaderboard/store/states.py": "def allowed(x):\n    return x > 1\n",
    "leaderboard/store/brand_new.py": "from . import helper\n\n\ndef g(x):\n    return helper.h(x) and x < 3\n",
    "leaderboard/store/helper.py": "def h(x):\n    return x == 2\n",
    "leaderboard/store/unused.py": "Z = 1 + 2\n",
    "negt2ibench/__init__.py": "def __getattr__(name):\n    if name == 'x':\n        return 1\n",
    "space/tabs/explore.py": "WIDTH = 320\n",
    "tests/leaderboard/store/test_states.py": "def test_nothing():\n    pass\n",
    "tests/other/test_a.py": "import leaderboard.store.states as s\n",
    "tests/other/test_b.py": "def test_late():\n    from leaderboard.store import states\n",
    "tests/other/test_c.py": "from leaderboard.store.brand_new import g\n",
    "tests/other/test_d.py": "from leaderboard.store.states_of_mind import x\n",  # another name's prefix
    "tests/helpers/helping.py": "import leaderboard.store.helper\n",  # a helper, not a test file
}


def test_every_module_of_the_packages_is_found_but_the_excluded_and_its_tests_by_their_imports(tmp_path):
    """A new module is mutated without anyone listing it; the facades and layout the exclusion list
    names are not; a module's tests are its mirror file first, then the test files that import it
    (`import M`, `from P import m`, lazily too), not a name that merely starts like it, not a helper;
    a module no test imports gets the tests of the modules that import it."""
    root = plant(tmp_path, PLANTED)
    modules = mutant_modules.product_modules(root)
    assert modules == [
        "leaderboard/__init__.py",
        "leaderboard/store/__init__.py",
        "leaderboard/store/brand_new.py",
        "leaderboard/store/helper.py",
        "leaderboard/store/states.py",
        "leaderboard/store/unused.py",
    ]
    tests, product = mutant_modules.test_imports(root), mutant_modules.product_imports(root)
    found = {path: mutant_modules.tests_of(path, tests, product, root) for path in modules}
    assert found["leaderboard/store/states.py"] == (
        "tests/leaderboard/store/test_states.py",
        "tests/other/test_a.py",
        "tests/other/test_b.py",
    )
    assert found["leaderboard/store/brand_new.py"] == ("tests/other/test_c.py",)
    assert found["leaderboard/store/helper.py"] == ("tests/other/test_c.py",)  # through brand_new's relative import
    assert found["leaderboard/store/unused.py"] == ()
    assert set(found["leaderboard/store/__init__.py"]) == {f"tests/other/test_{k}.py" for k in "abcd"}


def test_the_tree_s_generated_list_holds_every_module_the_acceptance_names():
    """The generated list covers every module of leaderboard/, negt2ibench/ (reward and its server
    among them), evaluator/geneval/ and dataset_builder/train_split.py that makes a mutant; each
    exclusion names an existing path and says why."""
    modules = set(mutant_modules.product_modules())
    wanted = [
        path.relative_to(ROOT).as_posix()
        for folder in ("leaderboard", "negt2ibench", "evaluator/geneval")
        for path in (ROOT / folder).rglob("*.py")
    ] + ["dataset_builder/train_split.py"]
    missing = [
        path
        for path in wanted
        if path not in modules and any(mutant_operators.edits((ROOT / path).read_text(encoding="utf-8")))
    ]
    assert missing == ["negt2ibench/__init__.py"]  # the facade, excluded with its reason
    assert {"negt2ibench/reward.py", "negt2ibench/reward_server.py", "negt2ibench/reward_pickle.py"} <= modules
    for entry, reason in mutant_modules.EXCLUDED.items():
        assert (ROOT / entry).exists() and len(reason) > 20, entry


def test_every_guarded_function_exists_and_each_area_makes_mutants():
    """A guard names functions that are there (a rename fails here rather than silently sampling
    the unpickler, the claim, the resolver or the regeneration decision), and each area has mutants
    (`_pinned` alone has none: no operator applies to a call and a re-raise)."""
    areas = set()
    for guard in mutant_modules.GUARDED:
        made = mutants.module_mutations(guard.module, ())
        names = {name for *_, name in mutant_modules.qualified_functions(ast.parse(made[0].old))}
        assert set(guard.functions) <= names, guard
        areas.update(m.site.area for m in made if m.site and m.site.area)
    assert areas == {"the unpickler", "the claim", "the resolver", "the regeneration decision"}  # each makes some


def fake_mutations(module: str, count: int, guarded: int = 0) -> list[mutants.Mutation]:
    sites = [
        mutant_results.Site(
            module, k + 1, 0, f"x = {k}", "number", f"{k} → {k + 1}", "f", "area" if k < guarded else None
        )
        for k in range(count)
    ]
    return [mutants.Mutation(site.describe(), module, "old", "new", (), site) for site in sites]


def test_a_sample_is_seeded_per_module_and_keeps_every_guarded_mutant():
    """The same seed draws the same mutants; a module's draw does not move when another module
    changes; every guarded mutant runs, first, then one of each module in turn."""
    a, b = fake_mutations("a.py", 20, guarded=3), fake_mutations("b.py", 20)
    chosen = mutants.sampled(a + b, per_module=4, seed=7)
    names = [m.name for m in chosen]
    assert names == [m.name for m in mutants.sampled(a + b, per_module=4, seed=7)]
    assert names[:3] == [m.name for m in a[:3]]  # the guarded first, all of them
    assert len(chosen) == 3 + 4 + 4 and [m.path for m in chosen[3:5]] == ["a.py", "b.py"]
    alone = [m.name for m in mutants.sampled(a + fake_mutations("b.py", 30), per_module=4, seed=7) if m.path == "a.py"]
    assert alone == [m.name for m in chosen if m.path == "a.py"]
    assert len(mutants.sampled(b, per_module=50, seed=0)) == 20  # no more than the module makes


def test_no_mutant_starts_after_the_time_bound_and_the_skipped_are_counted(tmp_path, monkeypatch):
    """`--minutes`: a run past its bound starts nothing more, and the section says how many were
    skipped; within it, each mutant runs in the copy (mutated there, the checkout untouched)."""
    root = plant(tmp_path / "repo", {"m.py": "x = 1\n", "tests/test_m.py": "import m\n"})
    seen = []

    def fake_tests(copy, tests, timeout):
        seen.append((copy / "m.py").read_text(encoding="utf-8"))
        return "survived", "1 passed", ""

    monkeypatch.setattr(mutant_runner, "run_tests", fake_tests)
    made = mutants.module_mutations("m.py", ("tests/test_m.py",), root)
    assert mutant_runner.run_all(made, workers=1, timeout=10, minutes=0, root=root) == []
    run = mutant_results.Run("2026-01-01", "abc", "mutants.py --minutes 0", len(made), [m.site.key for m in made])
    assert mutant_results.merged([run]) == ([], len(made))
    assert "1 skipped at the time bound" in mutant_results.section([run])
    outcomes = mutant_runner.run_all(made, workers=1, timeout=10, minutes=None, root=root)
    assert [o.status for o in outcomes] == ["survived"] and seen == ["x = 2\n"]
    assert (root / "m.py").read_text(encoding="utf-8") == "x = 1\n"


def test_a_kill_counts_only_when_the_failing_test_passes_without_the_mutant(tmp_path, monkeypatch):
    """A test that fails on the unmutated code too does not kill (a flaky or broken test): the
    mutant is `broken`; the confirmation runs once per failing test."""
    original = "x = 1\ny = 2\nz = 3\n"
    root = plant(tmp_path / "repo", {"m.py": original})
    calls = []

    def fake_tests(copy, tests, timeout):
        calls.append(list(tests))
        text = (copy / "m.py").read_text(encoding="utf-8")
        if list(tests) == ["tests/test_m.py::test_flaky"]:
            return "killed", "failed tests/test_m.py::test_flaky", tests[0]
        if "y = 3" in text:
            return "killed", "failed tests/test_m.py::test_flaky", "tests/test_m.py::test_flaky"
        if text != original:
            return "killed", "failed tests/test_m.py::test_x", "tests/test_m.py::test_x"
        return "survived", "1 passed", ""

    monkeypatch.setattr(mutant_runner, "run_tests", fake_tests)
    made = mutants.module_mutations("m.py", ("tests/test_m.py",), root)
    outcomes = mutant_runner.run_all(made, workers=1, timeout=10, root=root)
    assert [o.status for o in outcomes] == ["killed", "broken", "killed"]
    assert "fails without the mutant too" in outcomes[1].detail
    assert calls.count(["tests/test_m.py::test_x"]) == 1  # confirmed once, remembered


def test_a_listed_equivalent_is_not_run_and_is_counted_apart_with_its_reason(tmp_path, monkeypatch):
    """The table of equivalents is applied when scoring: its mutant is counted as equivalent, its
    reason printed in the section, and the survivor share leaves it out."""
    root = plant(tmp_path / "repo", {"leaderboard/rule.py": "def f(a, b):\n    return a <= b\n"})
    entry = mutant_equivalents.Equivalent("leaderboard/rule.py", "return a <= b", "<= → <", "a and b never equal")
    monkeypatch.setattr(mutants, "EQUIVALENT", (entry,))
    ran = []
    monkeypatch.setattr(mutants, "run_all", lambda chosen, *a: ran.extend(chosen) or [])
    args = mutants._parser().parse_args(["--generated", "--all"])
    run = mutants.run_generated(args, ["--generated", "--all"], root)
    assert [o.status for o in run.outcomes] == ["equivalent"] and ran == []
    shown = mutant_results.section([run])
    assert "rule.py:2 (f) compare: <= → < in `return a <= b`: a and b never equal" in shown
    assert "1 mutants: 0 killed, 0 timed out, 0 survived, 1 equivalent" in shown


def test_every_listed_equivalent_names_a_mutant_of_the_tree():
    """A stale entry (its line changed or moved away) fails here instead of hiding a new survivor."""
    by_module: dict[str, set[tuple[str, str]]] = {}
    for entry in mutant_equivalents.EQUIVALENT:
        if entry.module not in by_module:
            made = mutants.module_mutations(entry.module, ())
            by_module[entry.module] = {(m.site.text, m.site.what) for m in made if m.site}
        assert (entry.line, entry.change) in by_module[entry.module], entry
        assert entry.reason.strip(), entry


def test_rerun_takes_the_survivors_of_a_saved_run_and_resume_the_mutants_it_did_not_run(tmp_path):
    """`--rerun` runs again what survived (timed out, broke) in saved runs, found by line text and
    change, not line number; `--resume` leaves out what a saved run already ran."""
    root = plant(tmp_path / "repo", {"leaderboard/rule.py": "def f(a):\n    return a < 1 or a > 5\n"})
    made = mutants.generated(["leaderboard/rule.py"], root)
    assert len(made) == 5
    run = mutant_results.Run("2026-01-01", "aaa", "first", 5, [m.site.key for m in made])
    run.outcomes = [
        mutant_results.Outcome(m.name, status, "", 1.0, m.site)
        for m, status in zip(made, ["survived", "killed", "timeout"], strict=False)
    ]
    mutant_results.save(run, tmp_path / "run.json")
    (root / "leaderboard/rule.py").write_text(
        "# a line above moves every line number\ndef f(a):\n    return a < 1 or a > 5\n"
    )

    def chosen(*options: str) -> list[str]:
        args = mutants._parser().parse_args(["--generated", "--all", *options])
        return [m.site.key for m in mutants.selection(args, root)[0]]

    assert chosen("--rerun", str(tmp_path / "run.json")) == [made[0].site.key, made[2].site.key]
    assert chosen("--resume", str(tmp_path / "run.json")) == [m.site.key for m in made[3:]]


def test_the_command_merges_saved_runs_and_writes_the_section(tmp_path, capsys):
    """`--from A B --write-results`: nothing runs; the merged score is printed and written."""
    first = mutant_results.Run("2026-01-01", "aaa", "first", 2, [], [outcome("a.py", 1, "survived")])
    mutant_results.save(first, tmp_path / "a.json")
    mutant_results.save(
        mutant_results.Run("2026-01-02", "bbb", "rerun", 2, [], [outcome("a.py", 1, "killed")]), tmp_path / "b.json"
    )
    results = tmp_path / "RESULTS.md"
    saved = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    assert mutants.main(["--generated", "--from", *saved, "--write-results", "--results-file", str(results)]) == 0
    assert "1 mutants: 1 killed, 0 timed out, 0 survived" in capsys.readouterr().out
    assert "1 mutants: 1 killed" in results.read_text(encoding="utf-8")


def outcome(module: str, line: int, status: str) -> mutant_results.Outcome:
    site = mutant_results.Site(module, line, 4, f"y = {line}", "number", f"{line} → {line + 1}", "f")
    return mutant_results.Outcome(site.describe(), status, "why", 1.0, site)


def test_runs_are_saved_merged_and_written_between_the_markers(tmp_path):
    """A later run's outcome replaces an earlier one's (a rerun of survivors); the section replaces
    the one between the markers and leaves the rest of RESULTS.md as it was, or is appended."""
    first = mutant_results.Run(
        "2026-01-01", "aaa", "first", 9, [], [outcome("a.py", 1, "survived"), outcome("a.py", 2, "killed")]
    )
    first.selected = [o.site.key for o in first.outcomes] + ["a.py|never|0|run|0"]
    mutant_results.save(first, tmp_path / "first.json")
    loaded = mutant_results.load(tmp_path / "first.json")
    assert loaded == first
    again = mutant_results.Run("2026-01-02", "bbb", "rerun", 9, [], [outcome("a.py", 1, "killed")])
    merged, skipped = mutant_results.merged([loaded, again])
    assert sorted(o.status for o in merged) == ["killed", "killed"] and skipped == 1
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# Results\n\nbefore\n\n{mutant_results.BEGIN}\nold figure\n{mutant_results.END}\n\nafter\n")
    mutant_results.write_section(results, mutant_results.section([loaded, again]))
    text = results.read_text(encoding="utf-8")
    assert text.startswith("# Results\n\nbefore\n\n<!-- mutants:begin -->") and text.endswith(
        "<!-- mutants:end -->\n\nafter\n"
    )
    assert "old figure" not in text and "2026-01-01, tree aaa" in text and "2026-01-02, tree bbb" in text
    assert "2 mutants: 2 killed, 0 timed out, 0 survived" in text and "1 skipped at the time bound" in text
    bare = tmp_path / "bare.md"
    bare.write_text("# Results\n", encoding="utf-8")
    mutant_results.write_section(bare, mutant_results.section([first]))
    assert bare.read_text(encoding="utf-8").count(mutant_results.BEGIN) == 1
    assert "- survived: a.py:1 (f) number: 1 → 2 in `y = 1`" in bare.read_text(encoding="utf-8")


def test_the_contributing_guide_reads_the_score_from_results_instead_of_stating_it():
    """The mutation score lives in benchmarks/RESULTS.md's section, written by the tool; a figure
    typed into docs/contributing.md by hand goes stale, so none may be there."""
    guide = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    stated = re.findall(r"\d[\d,]*\s+of\s+\d[\d,]*\s+(?:\w+\s+)?mutants?\s+(?:were\s+)?killed", guide, re.IGNORECASE)
    assert stated == [], "docs/contributing.md states a mutation score by hand; point at RESULTS.md instead"
    assert "benchmarks/RESULTS.md" in guide and mutant_results.BEGIN in guide
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    assert results.count(mutant_results.BEGIN) == 1 and results.count(mutant_results.END) == 1


@pytest.mark.slow
def test_every_mutation_of_the_table_fails_a_fast_test(capsys):
    assert mutants.main(["--workers", "1"]) == 0, capsys.readouterr().out
    shown = capsys.readouterr().out
    assert f"{len(mutants.TABLE)} of {len(mutants.TABLE)} mutants killed" in shown


def test_a_mutant_its_own_tests_let_live_is_run_against_its_importers_tests(tmp_path, monkeypatch):
    """A module tested through what imports it: a mutant that passes its own test file is run against
    the importers' tests (the nearest level that has any besides its own) and is killed there; one
    that passes both survives, and its detail says both ran."""
    files = {
        "leaderboard/__init__.py": "",
        "leaderboard/low.py": "x = 1\ny = 2\n",
        "leaderboard/high.py": "from leaderboard import low\n",
        "tests/leaderboard/test_low.py": "from leaderboard import low\n",
        "tests/leaderboard/test_high.py": "from leaderboard import high\n",
    }
    root = plant(tmp_path / "repo", files)
    tests, product = mutant_modules.test_imports(root), mutant_modules.product_imports(root)
    assert mutant_modules.tests_of("leaderboard/low.py", tests, product, root) == ("tests/leaderboard/test_low.py",)
    wider = mutant_modules.importers_tests("leaderboard/low.py", tests, product, root)
    assert wider == ("tests/leaderboard/test_high.py",)
    ran: list[tuple[str, ...]] = []

    def fake_tests(copy, tests, timeout):  # test_high catches x changed; nothing catches y
        ran.append(tuple(tests))
        changed = (copy / "leaderboard/low.py").read_text(encoding="utf-8") != files["leaderboard/low.py"]
        if "high" in tests[0] and changed and "x = 2" in (copy / "leaderboard/low.py").read_text(encoding="utf-8"):
            return "killed", "failed tests/leaderboard/test_high.py::test_x", "tests/leaderboard/test_high.py::test_x"
        return "survived", "1 passed", ""

    monkeypatch.setattr(mutant_runner, "run_tests", fake_tests)
    made = mutants.module_mutations("leaderboard/low.py", ("tests/leaderboard/test_low.py",), root, wider)
    outcomes = mutant_runner.run_all(made, workers=1, timeout=10, root=root)
    assert [(o.name.split(" in ")[-1], o.status) for o in outcomes] == [("`x = 1`", "killed"), ("`y = 2`", "survived")]
    assert outcomes[0].detail.startswith("by an importer's: failed tests/leaderboard/test_high.py::test_x")
    assert outcomes[1].detail == "1 passed; its importers' tests: 1 passed"
    assert ran.count(("tests/leaderboard/test_low.py",)) == 2  # each mutant: its own tests first
