"""Every fenced `python` and `bash` block of README.md and docs/*.md runs, here, offline, as written.

The convention (docs/contributing.md): each block runs in a fresh folder holding `examples/` (what
`negt2ibench examples --out examples` writes), with no weights, HF_HUB_OFFLINE=1 and an empty
store. A bash line runs with `bash -c` and must exit 0, unless its comment carries a marker:

- `[needs weights]`: run all the same; it must exit 2 with one line on stderr, `error: model
  weights for ...`, naming the command that fetches them (`download-models` or `--download`);
- `[needs internet]`: run all the same; it must exit 1 or 2 with one `error: ...` line;
- `[refused here: REASON]`: run all the same (what it needs is not in the examples: a complete run,
  a stored entry, a judge's runs); it must exit 1 with one `error: ...` line, so its flags parse;
- `[not run: REASON]`: not run (it serves until stopped, installs packages, needs several GPUs ...).

A python block runs as a script and must exit 0; its first line `# [needs weights]` makes it
expected to stop with `MissingWeightsError`, `# [not run: REASON]` keeps it from running. A block
whose first line is `# [not run: REASON]` is not run at all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^( *)```(python|bash|console|sh|shell)\n(.*?)^\1```", re.S | re.M)
MARKER = re.compile(r"\[(needs weights|needs internet|refused here: [^\]]+|not run: [^\]]+)\]")
TIMEOUT = 120  # seconds per command: every one here answers in a few


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(pages=PAGES) -> list[Block]:
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text[: match.start()].count("\n") + 1
            code = "\n".join(row[len(match.group(1)) :] for row in match.group(3).splitlines())
            found.append(Block(page, line, match.group(2), code))
    return found


def marker(text: str) -> str | None:
    found = MARKER.search(text)
    return found.group(1) if found else None


def commands(code: str) -> list[str]:
    """The block's command lines, continuation lines joined, comment-only lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def environment(base: Path) -> dict[str, str]:
    """No weights, no network, nothing of this machine's caches or store; `negt2ibench` is this checkout."""
    shims = base / "bin"
    shims.mkdir(exist_ok=True)
    shim = shims / "negt2ibench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m negt2ibench "$@"\n')
    shim.chmod(0o755)
    caches = base / "caches"
    return {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(caches / "hf"),
        "HF_HUB_CACHE": str(caches / "hf" / "hub"),
        "RF_HOME": str(caches / "rf"),
        "TORCH_HOME": str(caches / "torch"),
        "NEGT2I_HOME": str(caches / "home"),
        "MPLBACKEND": "Agg",
    }


def run_line(command: str, cwd: Path, env: dict[str, str]) -> str | None:
    """None when the line did what its marker says, else what went wrong."""
    kind = marker(command)
    if kind is not None and kind.startswith("not run: "):
        return None
    if re.match(r"negt2ibench examples\b", command):  # the block makes the examples itself: start afresh
        shutil.rmtree(cwd / "examples", ignore_errors=True)
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    lines = done.stderr.strip().splitlines()
    said = f"exit {done.returncode}, stderr {done.stderr.strip()[-600:]!r}"
    if kind is None:
        return None if done.returncode == 0 else f"`{command}`: {said}"
    if kind == "needs weights":
        fine = done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: model weights for")
        fine = fine and ("download-models" in lines[0] or "--download" in lines[0])
    elif kind.startswith("refused here: "):
        fine = done.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: ")
    else:  # needs internet
        fine = done.returncode in (1, 2) and len(lines) == 1 and lines[0].startswith("error: ")
    return None if fine else f"`{command}` [{kind}]: {said}"


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> list[str]:
    """What went wrong in BLOCK, run in CWD (empty: all went as written)."""
    first = block.code.strip().splitlines()[0] if block.code.strip() else ""
    kind = marker(first) if first.startswith("#") else None
    if kind is not None and kind.startswith("not run: "):
        return []
    if block.language != "python":
        return [problem for line in commands(block.code) if (problem := run_line(line, cwd, env))]
    done = subprocess.run(
        [sys.executable, "-c", block.code], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if kind == "needs weights":
        fine = done.returncode != 0 and last.startswith("negt2ibench.core.errors.MissingWeightsError: model weights")
    else:
        fine = done.returncode == 0
    return [] if fine else [f"python block: exit {done.returncode}, {done.stderr.strip()[-800:]!r}"]


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """`negt2ibench examples --out examples` once per worker; each block gets a copy."""
    base = tmp_path_factory.mktemp("docs-code")
    env = environment(base)
    subprocess.run(["negt2ibench", "examples", "--out", "examples"], cwd=base, env=env, check=True, timeout=TIMEOUT)
    return base, env


def workspace(examples, tmp_path: Path) -> Path:
    base, _ = examples
    cwd = tmp_path / "work"
    cwd.mkdir()
    shutil.copytree(base / "examples", cwd / "examples")
    return cwd


ALL = blocks()


@pytest.mark.slow  # each block's commands in their own processes (about 1 s each)
@pytest.mark.parametrize("block", ALL, ids=[block.name for block in ALL])
def test_the_block_runs_as_written(block, examples, tmp_path):
    problems = run_block(block, workspace(examples, tmp_path), examples[1])
    assert not problems, f"{block.name}:\n" + "\n".join(problems)


def test_every_block_is_found_and_every_marker_is_known():
    assert len(ALL) >= 20 and {block.language for block in ALL} == {"python", "bash"}
    for block in ALL:
        for line in block.code.splitlines():
            if "[" in line and "#" in line and re.search(r"#.*\[(needs|not run|refused)", line):
                assert marker(line), f"{block.name}: an unknown marker in {line!r}"


@pytest.mark.slow
def test_a_broken_import_planted_in_a_snippet_fails(examples, tmp_path):
    """The check itself: on a temporary copy of a page whose python block imports a name that does not exist."""
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n```python\nfrom negt2ibench.core.table import to_markdown\n```\n\n"
        "```python\nfrom evaluator.report import no_such_name\n```\n\n"
        "```bash\nnegt2ibench report examples/results/no_such_file.jsonl --out r/\n```\n"
        "```bash\nnegt2ibench report examples/results/current.jsonl --out r/   # [needs weights]\n```\n"
        "```bash\nnegt2ibench report examples/results/current.jsonl --out r/   # [refused here: it runs]\n```\n"
        "```bash\nnegt2ibench report examples/results/current.jsonl --out r/ --no-such-flag # [refused here: x]\n```\n",
        encoding="utf-8",
    )
    good, broken, failing, mislabelled, not_refused, misspelt = blocks([page])
    cwd = workspace(examples, tmp_path)
    assert run_block(good, cwd, examples[1]) == []
    [problem] = run_block(broken, cwd, examples[1])
    assert "ImportError" in problem and "no_such_name" in problem
    [problem] = run_block(failing, cwd, examples[1])
    assert "exit 1" in problem
    [problem] = run_block(mislabelled, cwd, examples[1])  # it runs fine: the marker says it should not
    assert "[needs weights]" in problem and "exit 0" in problem
    [problem] = run_block(not_refused, cwd, examples[1])
    assert "[refused here: it runs]" in problem and "exit 0" in problem
    [problem] = run_block(misspelt, cwd, examples[1])  # a documented flag the parser does not know
    assert "exit 2" in problem and "unrecognized arguments" in problem
