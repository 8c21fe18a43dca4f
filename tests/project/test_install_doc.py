"""docs/install.md names only what a clone holds: every file or folder it quotes is in the
repository (or is made there by a command it names: `build/`, `dist/`, the venvs), and nothing
points outside it or at one machine's interpreter."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "docs" / "install.md"
MADE_HERE = (".venv", ".venv310", "build/", "dist/", "/path/to/")  # made by `make` or a command the page names
FILE_SUFFIXES = (".py", ".sh", ".txt", ".md", ".toml", ".cfg", ".yml", ".yaml")


def quoted_paths(text: str) -> list[str]:
    """The file and folder names in the page's inline code (fenced blocks left out)."""
    inline = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    found = []
    for span in re.findall(r"`([^`\n]+)`", inline):
        for token in span.split():
            token = token.strip(":,;()\"'")
            if "://" in token or token.startswith("-") or "=" in token:
                continue
            if "/" in token or token.endswith(FILE_SUFFIXES):
                found.append(token)
    return found


def test_install_names_only_files_of_the_repository():
    text = INSTALL.read_text(encoding="utf-8")
    paths = quoted_paths(text)
    assert "requirements.txt" in paths and "tests/conftest.py" in paths  # it does read the page's names
    missing = [path for path in paths if not path.startswith(MADE_HERE) and not (REPO / path).exists()]
    assert not missing, f"docs/install.md names what the repository lacks: {missing}"


def test_install_points_nowhere_outside_the_clone():
    text = INSTALL.read_text(encoding="utf-8")
    assert "../" not in text
    assert not re.search(r"(?<![\w.])/(root|home|usr|opt|work)/", text)  # no machine's own interpreter or folder
    assert "pyenv" not in text
