"""Test comments and docstrings say what a test checks and why, never the project's history: no issue
numbers, no commit hashes of this repository, no words that tell how the code changed (`HISTORY`
below). A test's words outlive the story of how it came to be; what stays true is the behaviour, the
rule and the source cited.

Comments are read with `tokenize`, docstrings (module, class, function) with `ast`. The patterns are
narrow enough to leave legitimate text alone (`test_legitimate_text_is_left_alone`): `previous` is a
preset of the evaluator, a bound may be "no longer than" a length, a passive "is used to" do
something, `#999` is a colour, UTS #39 a Unicode standard, `owner/repo@af4902f` a citation of
another repository's source, a logistic regression statistics.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

HISTORY = [
    ("an issue number", re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)),
    # `#NN` as an issue reference: not a colour (#RGB, #RRGGBB) nor a numbered standard (UTS #39).
    ("an issue reference", re.compile(r"(?<![\w&#])(?<!UTS )(?<!UAX )(?<!UTR )(?<!TR)#(?!\d{3}\b|\d{6}\b)\d{2,}\b")),
    ("'used to'", re.compile(r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bbeing )\bused to\b", re.IGNORECASE)),
    ("'previously'", re.compile(r"\bpreviously\b", re.IGNORECASE)),
    ("'no longer'", re.compile(r"\bno longer\b(?! than\b)", re.IGNORECASE)),
    ("'before/after the fix'", re.compile(r"\b(?:before|after) the fix\b", re.IGNORECASE)),
    (
        "'regression'",
        re.compile(r"(?<!linear )(?<!logistic )(?<!isotonic )(?<!ridge )\bregressions?\b", re.IGNORECASE),
    ),
    # A commit hash in prose (letters and digits both); `owner/repo@hash` and URL paths cite a source.
    ("a commit hash", re.compile(r"(?<![@/\w.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),
]


def history_phrases(text: str) -> list[str]:
    """What in TEXT narrates history, as "kind: 'match'" (empty when nothing does)."""
    return [f"{kind}: {found.group(0)!r}" for kind, pattern in HISTORY for found in pattern.finditer(text)]


def comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and of every docstring's lines in the Python file PATH."""
    source = path.read_text(encoding="utf-8")
    texts = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                first = node.body[0].lineno
                texts += [(first + offset, line) for offset, line in enumerate(docstring.splitlines())]
    return texts


def history_in(root: Path) -> list[str]:
    """Every "file:line: kind: 'match'" under ROOT's Python files."""
    return [
        f"{path.relative_to(root.parent)}:{line}: {phrase}"
        for path in sorted(root.rglob("*.py"))
        for line, text in comments_and_docstrings(path)
        for phrase in history_phrases(text)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "The report's reader after issue 33 gives the same records",
        "Issue 34: the report exits 1",
        "the fingerprints of #33's reader",
        "`report` used to exit 0 here",
        "the merge previously kept the first file",
        "a documented flag that no longer parses",
        "the records written before the fix",
        "a regression of the cache bound",
        "the records that commit 9c4c83f wrote",
        "as in 0f80acf",
    ],
)
def test_history_is_found(text):
    assert history_phrases(text), text


@pytest.mark.parametrize(
    "text",
    [
        "What makes the grouping right: previous and current constants see the same things.",
        "the previous report whole or the new one",
        "a name no longer than 100 characters",
        "the key is used to sign the sample",
        "(153, 153, 153)  # #999 outside the mask, and #1a2b3c a colour too",
        "UTS #39 data and rules",
        "GenEval's code (djghosh13/geneval@af4902f, evaluation/evaluate_images.py)",
        "a logistic regression of the verdicts",
        "sha256 e7a76e9126ca427e8f06094362b885b48fde0907cb7fc230d48bffbcc2982c1d of the file",
        "2026-01-01T00:00:00Z, 1767225600 seconds, 3.3e-8 away, U+202E",
        "the issue's file, an issue of the Hub",
    ],
)
def test_legitimate_text_is_left_alone(text):
    assert history_phrases(text) == [], text


def test_no_test_comment_or_docstring_narrates_history():
    found = history_in(TESTS)
    assert not found, "test comments narrate history (say what is checked and why):\n" + "\n".join(found)
