"""Args/Returns contracts on the public functions of the API, the report, the judges and the
leaderboard's verification: every such function (module-level, and the public methods of public
classes) has a Google-style docstring that says `Args:` when it takes parameters and `Returns:`
(or `Yields:`) when its annotation says it returns something other than None.

Walked on the source (AST), so no module is imported. Exempt: dunder methods (their contract is
Python's), properties (an attribute's docstring says what it holds), `typing.overload` stubs, and the
shells (`cli.py`, a shell's contract is its `--help`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The modules whose public functions carry contracts (folders: every module under them).
CONTRACTED = (
    "negt2ibench/api.py",
    "negt2ibench/inputs.py",
    "negt2ibench/geneval_api.py",
    "negt2ibench/reward.py",
    "negt2ibench/reward_pickle.py",
    "negt2ibench/reward_body.py",
    "negt2ibench/reward_audit.py",
    "evaluator/report",
    "judges",
    "leaderboard/checks",  # every check: its policy, its run, the setup and the plan they share
    "leaderboard/store/states.py",
)
# Functions another change owns for now (named by module and function).
NOT_YET: set[tuple[str, str]] = set()
EXEMPT_DECORATORS = {"property", "cached_property", "overload", "setter"}


def contracted_files(root: Path) -> list[Path]:
    """Every module of CONTRACTED under ROOT, shells left out."""
    files: list[Path] = []
    for name in CONTRACTED:
        path = root / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [path for path in files if path.name != "cli.py" and not path.name.endswith("_cli.py")]


def _decorator_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in function.decorator_list:
        node = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", ""))
    return names


def public_functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of each module-level public function and public method of a public class."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for member in node.body:
                if isinstance(member, functions) and not member.name.startswith("_"):
                    yield f"{node.name}.{member.name}", member


def takes_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> bool:
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if method and "staticmethod" not in _decorator_names(function):
        positional = positional[1:]  # self or cls
    return bool(positional or arguments.kwonlyargs or arguments.vararg or arguments.kwarg)


def returns_something(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    annotation = function.returns
    if annotation is None:
        return True  # unannotated: say what comes back
    text = ast.unparse(annotation).strip("'\"")
    return text not in {"None", "NoReturn", "Never", "typing.NoReturn"}


def missing_contracts(path: Path, root: Path = ROOT) -> list[str]:
    """'module:function: what is missing' for each public function of PATH without its contract."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root).as_posix()
    missing = []
    for name, function in public_functions(tree):
        if (where, name) in NOT_YET or _decorator_names(function) & EXEMPT_DECORATORS:
            continue
        doc = ast.get_docstring(function) or ""
        lacks = []
        if takes_parameters(function, method="." in name) and "Args:" not in doc:
            lacks.append("Args:")
        if returns_something(function) and "Returns:" not in doc and "Yields:" not in doc:
            lacks.append("Returns:")
        if lacks:
            missing.append(f"{where}:{name}: no {' or '.join(lacks)}")
    return missing


@pytest.mark.parametrize("path", contracted_files(ROOT), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_public_functions_carry_their_contract(path: Path) -> None:
    missing = missing_contracts(path)
    assert not missing, "\n".join(missing)


def test_the_walk_finds_what_lacks_a_contract(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(
        '''
def bare(value: int) -> int:
    """No contract."""
    return value


def told(value: int) -> int:
    """Told.

    Args:
        value: a number.

    Returns:
        The number.
    """
    return value


def silent() -> None:
    """Takes nothing, returns nothing."""


def _private(value: int) -> int:
    return value


class Holder:
    """A class."""

    def __init__(self, value: int) -> None:
        self.value = value

    @property
    def doubled(self) -> int:
        """Twice the value."""
        return 2 * self.value

    def add(self, other: int) -> None:
        """Adds, with no Args."""
        self.value += other

    def get(self) -> int:
        """Takes nothing but returns, with no Returns."""
        return self.value
''',
        encoding="utf-8",
    )
    assert missing_contracts(tmp_path / "module.py", tmp_path) == [
        "module.py:bare: no Args: or Returns:",
        "module.py:Holder.add: no Args:",
        "module.py:Holder.get: no Returns:",
    ]
