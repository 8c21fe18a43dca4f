"""The pictures of the README and the manual (docs/img/): small, shown, honest, and current.

`make screenshots` runs this module with NEGT2I_DOC_IMAGES=docs/img: the figures are then written
there (the browser tests write the screenshots); otherwise they are made in memory and their
data compared with the committed CSVs, so a picture whose numbers changed fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import doc_pictures

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "docs" / "img"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
IMAGE_LINK = re.compile(r"!\[([^\]]*)\]\(([^)\s]+\.png)\)")
SCREENSHOTS = ("explore", "score", "leaderboard", "gallery", "compare", "submit", "annotate")


def _shown() -> dict[Path, list[tuple[Path, str]]]:
    """Each page's images: (file, alt text)."""
    shown = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        shown[page] = [((page.parent / link).resolve(), alt) for alt, link in IMAGE_LINK.findall(text)]
    return shown


def test_every_picture_is_small_and_shown_and_every_shown_picture_exists():
    pictures = sorted(IMAGES.glob("*.png"))
    assert {f"space_{tab}.png" for tab in SCREENSHOTS} <= {p.name for p in pictures}  # each tab of the Space
    assert all(p.stat().st_size <= doc_pictures.MAX_BYTES for p in pictures), [p.name for p in pictures]
    shown = _shown()
    used = {file for images in shown.values() for file, _ in images}
    assert not [p.name for p in pictures if p.resolve() not in used]  # none committed but unused
    assert not [str(f) for f in used if not f.is_file()]  # none shown but missing
    assert all(alt.strip() for images in shown.values() for _, alt in images)  # every one described


def test_the_readme_shows_two_screenshots():
    readme = [file.name for file, _ in _shown()[REPO / "README.md"]]
    assert len(readme) == 2 and all(name.startswith("space_") for name in readme)


def test_every_figure_has_its_data_beside_it_linked_from_its_page():
    for page, images in _shown().items():
        text = page.read_text(encoding="utf-8")
        for file, _ in images:
            if file.name.startswith("space_"):
                continue  # a screenshot, not a figure
            data = file.with_suffix(".csv")
            assert data.is_file(), data
            assert f"img/{data.name}" in text, f"{page.name} shows {file.name} without a link to {data.name}"


def test_pictures_of_synthetic_scenes_say_so_where_they_are_shown():
    for page, images in _shown().items():
        for file, alt in images:
            if file.name in ("verdict_synthetic.png", "space_gallery.png", "space_compare.png"):
                assert "synthetic" in alt.lower(), f"{page.name}: {file.name}'s description must say it is synthetic"


@pytest.mark.slow
def test_the_figures_are_current():
    files = doc_pictures.figures()
    out = doc_pictures.doc_images_dir()
    if out is not None:  # `make screenshots`
        doc_pictures.write(files, out)
    for name, content in files.items():
        if name.endswith(".csv"):
            assert (IMAGES / name).read_text(encoding="utf-8") == content, f"docs/img/{name} is stale: make screenshots"
        else:
            assert (IMAGES / name).is_file()
