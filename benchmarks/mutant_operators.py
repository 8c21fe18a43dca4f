"""The mutations `benchmarks/mutants.py --generated` makes of a module: one small change of its code each.

Classic mutation operators (those of mutmut and cosmic-ray), applied with the standard library's `ast`
to the module's own text (only the changed expression is rewritten, so a mutant is the source with
one edit):

- ``compare``: ``==`` ↔ ``!=``, ``<`` → ``<=``, ``<=`` → ``<``, ``>`` → ``>=``, ``>=`` → ``>``,
  ``is`` ↔ ``is not``, ``in`` ↔ ``not in``;
- ``boolean``: ``and`` ↔ ``or``; ``not x`` → ``x``; ``True`` ↔ ``False``;
- ``arithmetic``: ``+`` ↔ ``-``, ``*`` ↔ ``/``, ``//`` → ``*``, and ``+=`` ↔ ``-=``;
- ``number``: an integer n → n + 1, a float x → 2x (0.0 → 1.0);
- ``condition``: the test of an ``if``, ``elif``, ``while`` or conditional expression negated; a
  comprehension's ``if`` filter dropped (replaced by ``True``);
- ``builtin``: ``min`` ↔ ``max``, ``any`` ↔ ``all``.

Strings, docstrings, annotations and the inside of f-strings are left alone (a changed message is
seen by a reader, not by a rule). A mutant that does not compile is not made.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
BINARY_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
}
BUILTIN_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, column) to (end line, end column) — 1-based lines, UTF-8 byte
    columns as `ast` gives them — by `text`; `what` says what changed, for the report."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str
    operator: str
    what: str


def apply(source: str, edit: Edit) -> str:
    """SOURCE with EDIT made."""
    data = source.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    begin = starts[edit.line - 1] + edit.column
    end = starts[edit.end_line - 1] + edit.end_column
    return (data[:begin] + edit.text.encode("utf-8") + data[end:]).decode("utf-8")


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node)
    assert text is not None
    return text


def _spans(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _skipped(tree: ast.AST) -> set[int]:
    """Ids of the nodes no mutation touches: docstrings, annotations, f-strings and what is inside them."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(inner) for inner in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip(first)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip(node.returns)
            for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                skip(argument.annotation)
            skip(node.args.vararg and node.args.vararg.annotation)
            skip(node.args.kwarg and node.args.kwarg.annotation)
        if isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        if isinstance(node, ast.JoinedStr):
            skip(node)
    return skipped


def _edits(source: str, tree: ast.AST) -> Iterator[Edit]:
    skipped = _skipped(tree)
    for node in ast.walk(tree):
        if id(node) in skipped or not hasattr(node, "lineno") and not isinstance(node, ast.comprehension):
            continue  # a comprehension has no place of its own; its filters have
        yield from _node_edits(source, node)


def _replace(node: ast.AST, text: str, operator: str, what: str) -> Edit:
    return Edit(*_spans(node), text=text, operator=operator, what=what)


def _node_edits(source: str, node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            if type(op) in COMPARE_SWAPS:
                changed = ast.Compare(node.left, list(node.ops), node.comparators)
                changed.ops[k] = COMPARE_SWAPS[type(op)]()
                yield _replace(node, f"({ast.unparse(changed)})", "compare", f"{_name(op)} → {_name(changed.ops[k])}")
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        text = f"({ast.unparse(ast.BoolOp(other, node.values))})"
        yield _replace(node, text, "boolean", f"{_name(node.op)} → {_name(other)}")
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield _replace(node, f"({_segment(source, node.operand)})", "boolean", "not x → x")
    elif isinstance(node, ast.BinOp) and type(node.op) in BINARY_SWAPS:
        other = BINARY_SWAPS[type(node.op)]()
        text = f"({ast.unparse(ast.BinOp(node.left, other, node.right))})"
        yield _replace(node, text, "arithmetic", f"{_name(node.op)} → {_name(other)}")
    elif isinstance(node, ast.AugAssign) and type(node.op) in (ast.Add, ast.Sub):
        other = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        text = ast.unparse(ast.AugAssign(node.target, other, node.value))
        yield _replace(node, text, "arithmetic", f"{_name(node.op)}= → {_name(other)}=")
    elif isinstance(node, ast.Constant):
        yield from _constant_edits(node)
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
        test = node.test
        yield _replace(test, f"not ({_segment(source, test)})", "condition", "condition negated")
    elif isinstance(node, ast.comprehension):
        for condition in node.ifs:
            yield _replace(condition, "True", "condition", "comprehension filter dropped")
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BUILTIN_SWAPS:
        other = BUILTIN_SWAPS[node.func.id]
        yield _replace(node.func, other, "builtin", f"{node.func.id} → {other}")


def _constant_edits(node: ast.Constant) -> Iterator[Edit]:
    value = node.value
    if isinstance(value, bool):
        yield _replace(node, str(not value), "boolean", f"{value} → {not value}")
    elif isinstance(value, int):
        yield _replace(node, str(value + 1), "number", f"{value} → {value + 1}")
    elif isinstance(value, float):
        changed = value * 2 if value else 1.0
        yield _replace(node, repr(changed), "number", f"{value!r} → {changed!r}")


_SYMBOLS = {
    "Eq": "==",
    "NotEq": "!=",
    "Lt": "<",
    "LtE": "<=",
    "Gt": ">",
    "GtE": ">=",
    "Is": "is",
    "IsNot": "is not",
    "In": "in",
    "NotIn": "not in",
    "And": "and",
    "Or": "or",
    "Add": "+",
    "Sub": "-",
    "Mult": "*",
    "Div": "/",
    "FloorDiv": "//",
}


def _name(op: ast.AST) -> str:
    return _SYMBOLS[type(op).__name__]


def edits(source: str) -> list[Edit]:
    """Every edit of SOURCE, in the order of their places (a mutant is `apply(source, edit)`; one
    that does not compile is dropped by `compiles`)."""
    return sorted(_edits(source, ast.parse(source)), key=lambda e: (e.line, e.column, e.operator, e.what))


def compiles(mutated: str) -> bool:
    try:
        compile(mutated, "<mutant>", "exec")
    except SyntaxError:
        return False
    return True


def mutants(source: str) -> Iterator[tuple[Edit, str]]:
    """Every (edit, mutated source) of SOURCE that compiles, in the order of the edits' places."""
    for edit in edits(source):
        mutated = apply(source, edit)
        if compiles(mutated):
            yield edit, mutated
