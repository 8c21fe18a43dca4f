"""The pictures of the README and the manual (docs/img/), and their data as CSV beside them.

`make screenshots` regenerates them all: the browser tests write the Space's screenshots, and
`tests/project/test_doc_pictures.py` the figures below, into NEGT2I_DOC_IMAGES (docs/img). A PNG
that would be over `MAX_BYTES` is reduced to a palette of 256 colours (and shrunk if need be):
screenshots and plots are flat colour, so little visible is lost.

- `figure5.png`, `figure6.png`: the corpus figures, by `dataset_builder.figures` (as
  `negt2ibench validate DIR --out FIGDIR` writes them), for the published corpus;
- `table3_paper.png`: the paper's Table 3 rows (`leaderboard.store.ranking.PAPER_ROWS`), copied
  from the paper, not scored here;
- `verdict_synthetic.png`: how a verdict is drawn, on a synthetic scene of the rectangle double
  (`tests.helpers.synthetic_scenes`), labelled as such in the picture itself.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from PIL import Image

MAX_BYTES = 200_000
IMAGES_ENV = "NEGT2I_DOC_IMAGES"  # where `make screenshots` writes the pictures (docs/img)
DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
VERDICT_PROMPT, VERDICT_SAMPLE = "directional_pos1_neg1_000", 2  # the positive holds, the negated fails


def doc_images_dir() -> Path | None:
    """Where pictures are to be written, when `make screenshots` asked for them (else None)."""
    folder = os.environ.get(IMAGES_ENV)
    return Path(folder) if folder else None


def small_png(image: Image.Image | str | Path, path: Path, max_bytes: int = MAX_BYTES) -> Path:
    """Save `image` as a PNG of at most `max_bytes`: its own colours when that fits, else a palette
    of 256 (median cut, no dithering), shrunk by steps if even that does not fit."""
    picture = (Image.open(image) if isinstance(image, (str, Path)) else image).convert("RGB")
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", optimize=True)
    while buffer.tell() > max_bytes:
        quantised = picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        buffer = io.BytesIO()
        quantised.save(buffer, format="PNG", optimize=True)
        if buffer.tell() <= max_bytes or min(picture.size) < 200:
            break
        picture = picture.resize((round(picture.width * 0.85), round(picture.height * 0.85)), Image.Resampling.LANCZOS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path


def _figure_png(figure, dpi: int = 100) -> Image.Image:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return Image.open(io.BytesIO(buffer.getvalue()))


def corpus_figures() -> dict[str, bytes | str | Image.Image]:
    """Figures 5 and 6 of the published corpus, and their CSVs."""
    import tempfile

    from dataset_builder.figures import write_figures
    from dataset_builder.loading import load_prompts

    with tempfile.TemporaryDirectory() as folder:
        write_figures(load_prompts(None), folder)
        found = Path(folder)
        return {
            "figure5.png": Image.open(io.BytesIO((found / "figure5.png").read_bytes())),
            "figure6.png": Image.open(io.BytesIO((found / "figure6.png").read_bytes())),
            "figure5.csv": (found / "figure5.csv").read_text(encoding="utf-8"),
            "figure6.csv": (found / "figure6.csv").read_text(encoding="utf-8"),
        }


def table3_figure() -> dict[str, bytes | str | Image.Image]:
    """The paper's Table 3 rows as a plot, and its data."""
    from leaderboard.store.ranking import PAPER_ROWS
    from space.tabs.leaderboard.detail_figures import accuracy_figure, accuracy_frame, figure_csv

    frame = accuracy_frame([(row["model"], row) for row in PAPER_ROWS])
    title = "Table 3 of the paper (reported there, on the paper's corpus draw; not scored here)"
    return {"table3_paper.png": _figure_png(accuracy_figure(frame, title)), "table3_paper.csv": figure_csv(frame)}


def verdict_figure() -> dict[str, bytes | str | Image.Image]:
    """A verdict drawn on a synthetic scene: the scene, the same scene as the Space draws the
    record, and the per-statement table; its data is that table."""
    from matplotlib.figure import Figure

    from dataset_builder.loading import load_prompts
    from dataset_builder.records import PromptIndex
    from space.tabs.leaderboard.detail_figures import figure_csv
    from space.verdict_views import verdict_frame
    from space.verified_images.verified_views import drawn
    from tests.helpers.synthetic_scenes import SYNTHETIC_LABEL, scored_scenes

    prompt = PromptIndex(load_prompts(None))[VERDICT_PROMPT]
    record, image = scored_scenes([prompt])[VERDICT_SAMPLE]
    table = verdict_frame(prompt, record)
    figure = Figure(figsize=(10, 5.2), layout="constrained")
    top, bottom = figure.subfigures(2, 1, height_ratios=[3, 1.3])
    left, right = top.subplots(1, 2)
    for axis, picture, title in (
        (left, image, "the scene (synthetic: rectangles where the double 'detects' each object)"),
        (right, drawn(image, record), "as the Space draws the record: boxes, labels, verdict"),
    ):
        axis.imshow(picture)
        axis.set_title(title, fontsize=9)
        axis.set_axis_off()
    cells = table[["item", "text", "polarity", "verdict", "cause", "observed"]].astype(str).values.tolist()
    axis = bottom.subplots()
    axis.set_axis_off()
    shown = axis.table(
        cellText=cells,
        colLabels=["item", "text", "polarity", "verdict", "cause", "observed"],
        loc="center",
        cellLoc="left",
    )
    shown.auto_set_font_size(False)
    shown.set_fontsize(8)
    figure.suptitle(f"{SYNTHETIC_LABEL}\n“{prompt.prompt}”", fontsize=10, parse_math=False)
    return {"verdict_synthetic.png": _figure_png(figure), "verdict_synthetic.csv": figure_csv(table)}


def figures() -> dict[str, bytes | str | Image.Image]:
    """Every picture of the manual that is not a screenshot, with its data, by file name."""
    return {**corpus_figures(), **table3_figure(), **verdict_figure()}


def write(files: dict[str, bytes | str | Image.Image], out: Path) -> list[Path]:
    """Write the pictures (as small PNGs) and their CSVs into `out`."""
    written = []
    for name, content in files.items():
        if isinstance(content, Image.Image):
            written.append(small_png(content, out / name))
        else:
            data = content.encode("utf-8") if isinstance(content, str) else content
            out.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
            written.append(out / name)
    return written
