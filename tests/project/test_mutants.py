"""The mutation harness (`benchmarks/mutants.py`, `benchmarks/mutant_operators.py`): its table still
matches the code, its operators make the mutants they say, its copy leaves the checkout alone, and
every mutation of the table fails a fast test (slow: one pytest run per mutant)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import mutant_operators  # noqa: E402
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


@pytest.mark.slow
def test_every_mutation_of_the_table_fails_a_fast_test(capsys):
    assert mutants.main(["--workers", "1"]) == 0, capsys.readouterr().out
    shown = capsys.readouterr().out
    assert f"{len(mutants.TABLE)} of {len(mutants.TABLE)} mutants killed" in shown
