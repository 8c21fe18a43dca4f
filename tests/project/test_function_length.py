"""No function over 60 lines (from its `def` to its last line, docstring included) in `space/`,
`negt2ibench/`, `leaderboard/` and every command module (`cli.py`, `*_cli.py`) of the project's packages:
a longer one is split into named steps (docs/architecture.md's rule: functions of about 60 lines at most)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("negt2ibench", "dataset_builder", "generation", "evaluator", "judges", "validation", "leaderboard", "space")
WHOLE_PACKAGES = ("space", "negt2ibench", "leaderboard")
MAX_LINES = 60


def checked_files() -> list[Path]:
    """Every module of the three packages checked whole, and every command module of the others."""
    files = {path for package in WHOLE_PACKAGES for path in (ROOT / package).rglob("*.py")}
    files |= {path for package in PACKAGES for path in (ROOT / package).rglob("*cli*.py")}
    return sorted(files)


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


def test_the_checked_files_are_the_three_packages_and_the_command_modules():
    names = {path.relative_to(ROOT).as_posix() for path in checked_files()}
    assert {"space/app.py", "negt2ibench/api.py", "leaderboard/intake/submissions.py"} <= names
    assert {"generation/cli.py", "evaluator/eval_results_cli.py", "judges/negvqa/cli.py"} <= names
    assert "evaluator/engine.py" not in names  # the other packages: their command modules only
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
