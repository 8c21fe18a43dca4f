"""No function over 60 lines (from its `def` to its last line, docstring included) in any module of
the eight product packages (`negt2ibench`, `dataset_builder`, `generation`, `evaluator`, `judges`,
`validation`, `leaderboard`, `space`): a longer one is split into named steps (docs/architecture.md's
rule: functions of about 60 lines at most)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("negt2ibench", "dataset_builder", "generation", "evaluator", "judges", "validation", "leaderboard", "space")
MAX_LINES = 60


def checked_files() -> list[Path]:
    """Every module of every product package."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def long_functions(source: str, name: str) -> list[str]:
    """'NAME:LINE FUNCTION (N lines)' for each function or method of SOURCE over MAX_LINES lines,
    nested ones too."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_LINES:
                found.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_checked_files_are_every_module_of_every_package():
    names = {path.relative_to(ROOT).as_posix() for path in checked_files()}
    assert {"space/app.py", "negt2ibench/api.py", "leaderboard/intake/submissions.py"} <= names
    assert {"generation/cli.py", "evaluator/eval_results_cli.py", "judges/negvqa/cli.py"} <= names
    assert {"evaluator/engine.py", "judges/negvqa/runner.py", "dataset_builder/validate.py"} <= names
    assert {"generation/runner.py", "validation/__init__.py"} <= names
    assert {path.parts[0] for path in map(Path, names)} == set(PACKAGES)  # every package, nothing else
    assert not any(name.startswith(("tests/", ".venv/", "build/")) for name in names)


def test_a_function_of_61_lines_is_named_and_one_of_60_is_not():
    def function(name: str, lines: int) -> str:  # a def line, a docstring, then lines - 2 statements
        body = '    """Docstring."""\n' + "    x = 1\n" * (lines - 2)
        return f"def {name}():\n{body}"

    source = function("fits", 60) + "\n\nclass Holder:\n" + textwrap.indent(function("too_long", 61), "    ")
    assert long_functions(source, "example.py") == ["example.py:64 too_long (61 lines)"]  # 60 lines, 2 blank, the class


def test_no_function_is_over_60_lines():
    found = [
        line
        for path in checked_files()
        for line in long_functions(path.read_text("utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, "functions over 60 lines (split them into named steps):\n" + "\n".join(found)
