"""Which modules the generated mutation pass mutates, which tests hold each, and which functions it runs whole.

- **Modules**: every module of the eight product packages (`PACKAGES`), less `EXCLUDED` (each entry
  says why), so a new module is mutated without anyone listing it.
- **Tests**: the test files (`tests/**/test_*.py`) that import the module — `import M`, `from M import
  x`, `from P import m` where `P.m` is `M`; a package's `__init__` is imported by every import of a
  module below it — plus its mirror file, `tests/<package>/<subpath>/test_<module>.py`, when there is
  one. The mirror runs first (it is the likeliest to fail first, and a killed mutant stops there).
  A module no test file imports (a helper module reached through its caller: the report's `facts`
  through `aggregate`) gets the tests of the product modules that import it, the nearest level up
  that has any (at most `UP` levels).
- **Guarded**: the functions whose mutants all run, never a sample (`GUARDED`): the unpickler, the
  claim on an entry, the resolver of a submitted revision, the regeneration decision.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("negt2ibench", "dataset_builder", "generation", "evaluator", "judges", "validation", "leaderboard", "space")

# Path (a file, or a folder ending in "/") → why its mutants are not made. A module that makes no
# mutant (a docstring-only `__init__`) needs no entry.
EXCLUDED: dict[str, str] = {
    "negt2ibench/__init__.py": "the package facade: a lazy `__getattr__` over the API's names, no rule of its own",
    "negt2ibench/__main__.py": "`python -m negt2ibench` calls the CLI's main; nothing to decide",
    "generation/__init__.py": "a lazy re-export of `generate_with` (`generation/runner.py` is mutated)",
    "space/tabs/": "Gradio layout and event wiring (widths, labels, `visible=`), seen by a visitor, held by the "
    "browser tests (slow); the handlers and views the tabs call are mutated in their own modules",
}


@dataclass(frozen=True)
class Guard:
    """The functions of `module` (qualified names; a nested function counts as its outer one's) whose
    mutants all run; `area` names them in the report."""

    area: str
    module: str
    functions: tuple[str, ...]


GUARDED: tuple[Guard, ...] = (
    Guard("the unpickler", "negt2ibench/reward_pickle.py", ()),  # () = the whole module
    Guard("the claim", "leaderboard/store/states.py", ("held_by", "transition")),
    Guard("the claim", "leaderboard/checks/verification_run.py", ("new_run", "claim", "claim_for")),
    Guard("the resolver", "leaderboard/store/image_sources.py", ("hub_commit", "keep_revision", "default_resolver")),
    Guard("the resolver", "leaderboard/intake/submissions.py", ("_pinned",)),
    Guard("the regeneration decision", "leaderboard/checks/regeneration_policy.py", ("RegenerationPlan.accepts",)),
    Guard("the regeneration decision", "leaderboard/checks/regeneration_policy.py", ("RegenerationPlan.is_own",)),
    Guard(
        "the regeneration decision",
        "leaderboard/checks/regeneration_policy.py",
        ("own_image", "sign_test", "regeneration_verdict"),
    ),
)


def excluded_by(path: str) -> str | None:
    """The EXCLUDED entry that covers PATH (a repository-relative path), or None."""
    for entry in EXCLUDED:
        if path == entry or entry.endswith("/") and path.startswith(entry):
            return entry
    return None


def product_modules(root: Path = ROOT) -> list[str]:
    """Every module of PACKAGES under ROOT that EXCLUDED does not cover, as sorted relative paths."""
    found = (path.relative_to(root).as_posix() for package in PACKAGES for path in (root / package).rglob("*.py"))
    return sorted(path for path in found if excluded_by(path) is None and "__pycache__" not in path)


def dotted(path: str) -> str:
    """`leaderboard/store/states.py` → `leaderboard.store.states`; a package's `__init__.py` → the package."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


_TARGET = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+)(?::\w+)?$")


def imported_names(source: str, package: str = "", targets: bool = False) -> set[str]:
    """The dotted names a file's imports name, at any depth of the file: `import a.b` gives `a.b`;
    `from a.b import c` gives `a.b` and `a.b.c` (`c` may be a module); a relative import is read
    from PACKAGE (the file's own package). With TARGETS, a string that is a dotted name or a lazy
    ``"module:Name"`` target (the CLI's `COMMAND_MODULES`, a registry's entries) counts as well."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if targets and isinstance(node, ast.Constant) and isinstance(node.value, str) and _TARGET.match(node.value):
            names.add(_TARGET.match(node.value)[1])  # type: ignore[index]
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _imports_of(root: Path, paths: Iterable[str], targets: bool = False) -> dict[str, set[str]]:
    found = {}
    for path in paths:
        package = dotted(path) if path.endswith("__init__.py") else dotted(path).rpartition(".")[0]
        found[path] = imported_names((root / path).read_text(encoding="utf-8"), package, targets)
    return found


def test_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each test file under ROOT/tests (relative path) → the dotted names it imports."""
    tests = (path.relative_to(root).as_posix() for path in sorted((root / "tests").rglob("test_*.py")))
    return _imports_of(root, tests)


def product_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of PACKAGES under ROOT (excluded ones too) → the dotted names it imports, its lazy
    targets included."""
    modules = (path.relative_to(root).as_posix() for package in PACKAGES for path in (root / package).rglob("*.py"))
    return _imports_of(root, sorted(modules), targets=True)


def mirror_test(path: str) -> str:
    """The conventional test file of module PATH: `a/b/c.py` → `tests/a/b/test_c.py`."""
    folder, _, name = path.rpartition("/")
    return f"tests/{folder}/test_{name}"


UP = 3  # levels of product importers searched for the tests of a module no test imports


def importers(path: str, imports: dict[str, set[str]]) -> list[str]:
    """The files of IMPORTS (file → names it imports) that import module PATH."""
    name = dotted(path)
    package = path.endswith("/__init__.py")
    return [
        other
        for other, names in imports.items()
        if other != path and (name in names or package and any(n.startswith(name + ".") for n in names))
    ]


def direct_tests(path: str, tests: dict[str, set[str]], root: Path = ROOT) -> list[str]:
    """Module PATH's mirror test file when it exists, then every test file that imports it."""
    mirror = mirror_test(path)
    return list(dict.fromkeys(([mirror] if (root / mirror).is_file() else []) + importers(path, tests)))


def tests_of(path: str, tests: dict[str, set[str]], product: dict[str, set[str]], root: Path = ROOT) -> tuple[str, ...]:
    """The test files of module PATH (TESTS and PRODUCT: `test_imports` and `product_imports`): its
    own (`direct_tests`), or else those of its importers, the nearest of `UP` levels that has any."""
    level, seen = [path], {path}
    for _ in range(UP + 1):
        found = [test for module in level for test in direct_tests(module, tests, root)]
        if found:
            return tuple(dict.fromkeys(found))
        level = [other for module in level for other in importers(module, product) if other not in seen]
        seen.update(level)
    return ()


def importers_tests(
    path: str, tests: dict[str, set[str]], product: dict[str, set[str]], root: Path = ROOT
) -> tuple[str, ...]:
    """The test files of the modules that import PATH, the nearest of `UP` levels that has any besides
    PATH's own (`tests_of`): a module is often tested through what imports it, so a mutant its own
    tests let live is run against these before it is called a survivor."""
    own = set(tests_of(path, tests, product, root))
    level, seen = [path], {path}
    for _ in range(UP):
        level = [other for module in level for other in importers(module, product) if other not in seen]
        seen.update(level)
        found = [test for module in level for test in direct_tests(module, tests, root) if test not in own]
        if found:
            return tuple(dict.fromkeys(found))
    return ()


def qualified_functions(tree: ast.AST) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function and class of TREE, nested ones too."""
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append((first, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def function_at(spans: Iterable[tuple[int, int, str]], line: int) -> str:
    """The innermost function or class of SPANS around LINE ("" at module level)."""
    around = [(last - first, name) for first, last, name in spans if first <= line <= last]
    return min(around)[1] if around else ""


def guards_of(path: str, function: str) -> str | None:
    """The area of GUARDED that holds FUNCTION of module PATH (or the whole module), or None."""
    for guard in GUARDED:
        if guard.module != path:
            continue
        if not guard.functions or any(function == f or function.startswith(f + ".") for f in guard.functions):
            return guard.area
    return None
