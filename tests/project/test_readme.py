"""The README stays a short front page (at most 12 KB, the manual is docs/) whose links all
resolve; the docs' own links are checked by `mkdocs build --strict` in `make lint`."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_short():
    assert len(README.read_bytes()) <= 12 * 1024


def test_every_relative_link_of_the_readme_resolves():
    links = [link for link in LINK.findall(README.read_text(encoding="utf-8")) if "://" not in link]
    assert "docs/index.md" in links and "LICENSE" in links
    for link in links:
        path = link.split("#")[0]
        assert path and (REPO / path).exists(), link
