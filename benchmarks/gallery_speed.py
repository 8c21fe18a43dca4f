"""Cost of the Space's Gallery on a full entry, without gradio (run by hand).

    .venv/bin/python benchmarks/gallery_speed.py [--side 1024] [--repeats 3]

A stored entry of 19,200 records (4,800 prompts × 4 samples, every verdict and cause) and an
images repo (a local parquet folder, as the Hub's layout) of its first page's images at
SIDE × SIDE pixels (PNG of noise, so decoding costs what a photograph's would). Measured:
reading the records from SQLite and keeping them compact (`space.verified_images.verified_source.EntryRecords`),
the memory that keeps, filtering all rows, the first page (fetch 24 images in one read, keep each,
draw and keep its thumbnail), the same page again (all kept: nothing fetched), and one full view.
Prints a Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _median(function, repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from dataset_builder.loading import load_prompts
    from leaderboard.store.image_sources import ParquetImages
    from leaderboard.store.sqlite_store import SQLiteStore
    from space.tabs.gallery import gallery_views
    from space.verified_images.verified_source import EntryRecords, GalleryImages
    from tests.helpers.gallery_helpers import add_entry, varied_results

    prompts = load_prompts(None)
    root = Path(tempfile.mkdtemp(prefix="gallery_bench_"))
    results = varied_results(prompts, "bench")
    store = SQLiteStore(root / "lb.sqlite")
    entry = add_entry(store, "Bench", results)
    rng = np.random.default_rng(0)
    page_keys = [(r.prompt_id, r.sample_index) for r in results[: gallery_views.PAGE_SIZE]]
    cells = []
    for _ in page_keys:
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (args.side, args.side, 3), dtype=np.uint8)).save(buffer, format="PNG")
        cells.append({"bytes": buffer.getvalue(), "path": None})
    (root / "repo" / "images").mkdir(parents=True)
    table = pa.table(
        {
            "prompt_id": [k[0] for k in page_keys],
            "sample_index": pa.array([k[1] for k in page_keys], pa.int32()),
            "image": cells,
        }
    )
    pq.write_table(table, root / "repo" / "images" / "bench-00000-of-00001.parquet")

    rows: list[tuple[str, str]] = []
    tracemalloc.start()
    started = time.perf_counter()
    records = EntryRecords(store, [p.prompt_id for p in prompts])
    indexed = records.of(entry)
    rows.append(
        (
            "read 19,200 records from SQLite, keep them compact (once per entry)",
            f"{time.perf_counter() - started:.2f} s",
        )
    )
    kept = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rows.append(("memory kept for the entry (rows + JSON lines)", f"{kept / 2**20:.1f} MB"))
    index = {p.prompt_id: p for p in prompts}
    wanted = gallery_views.GalleryFilter(cause="forbidden_rendered")
    rows.append(
        (
            "filter all 19,200 rows (cause)",
            f"{_median(lambda: gallery_views.matching_rows(indexed.rows, index, wanted), args.repeats) * 1e3:.0f} ms",
        )
    )
    page = [indexed.record(key) for key in page_keys]
    started = time.perf_counter()
    import evaluator.pipeline  # noqa: F401  (what reading an image cell imports; the Space has it loaded)

    rows.append(("once per process: import evaluator.pipeline (torch)", f"{time.perf_counter() - started:.2f} s"))
    images = GalleryImages(
        lambda repo, revision, split: ParquetImages.from_folder(root / "repo", split), lambda: root / "work"
    )
    started = time.perf_counter()
    shown = images.thumbnails(entry, "bench", page)
    assert not any(s.reason for s in shown), [s.reason for s in shown]
    rows.append(
        (
            f"first page: fetch 24 images ({args.side} px) in one read, keep, draw 24 thumbnails",
            f"{time.perf_counter() - started:.2f} s",
        )
    )
    rows.append(
        (
            "the same page again (all kept)",
            f"{_median(lambda: images.thumbnails(entry, 'bench', page), args.repeats) * 1e3:.0f} ms",
        )
    )
    full = lambda: images.full(entry, "bench", page[0])  # noqa: E731
    rows.append(("full view of one image (kept; drawn at full size)", f"{_median(full, args.repeats) * 1e3:.0f} ms"))
    disk = sum(p.stat().st_size for p in (root / "work").rglob("*.png"))
    rows.append(("kept on disk for the page (24 images + 24 thumbnails)", f"{disk / 2**20:.1f} MB"))

    print("| Step | Cost |\n|---|---:|")
    for step, cost in rows:
        print(f"| {step} | {cost} |")


if __name__ == "__main__":
    main()
