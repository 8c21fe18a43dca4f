"""Memory and latency of the Space under a submitter's large or slow images, and over many API calls
(run by hand; nothing is asserted).

    .venv/bin/python benchmarks/entry_bounds.py pages [--pages 20] [--megapixels 40]
    .venv/bin/python benchmarks/entry_bounds.py calls [--calls 6000] [--every 500]
    .venv/bin/python benchmarks/entry_bounds.py slow [--seconds 1.0]
    ... --checkout /path/to/another/checkout   # the same measurement of another version ("before")

The app is `space.app.build_app` with the rectangle double, launched on 127.0.0.1 in this process
and driven through gradio_client, as a visitor's browser would; only its API is used, so any
version of the project can be measured (`--checkout`). RSS is this process's (the server's)
resident memory, read from /proc/self/status.

- `pages`: one verified entry whose images repo (a local parquet folder) holds solid-colour PNGs of
  MEGAPIXELS each (small on disk, large decoded); the RSS after each of PAGES Gallery pages, its
  time, and how many of its thumbnails are images (the others: "still being fetched" placeholders).
- `calls`: CALLS calls of `/hub_status`, each from a new session (as a script or a crawler makes
  them); the RSS before, every EVERY calls, and after.
- `slow`: two verified entries, one whose repo answers SECONDS late per page; another client's page
  of the other (kept) entry alone, and while the slow repo's page is being fetched (medians of 5).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def solid_repo(folder: Path, keys, split: str, megapixels: float) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    side = int((megapixels * 1e6) ** 0.5)
    buffer = io.BytesIO()
    Image.new("RGB", (side, int(megapixels * 1e6) // side), (120, 140, 160)).save(buffer, format="PNG")
    cell = {"bytes": buffer.getvalue(), "path": None}
    table = pa.table(
        {
            "prompt_id": [k[0] for k in keys],
            "sample_index": pa.array([k[1] for k in keys], pa.int32()),
            "image": [cell] * len(keys),
        }
    )
    (folder / "images").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "images" / f"{split}-00000-of-00001.parquet", row_group_size=8)
    return folder


def launched(store, prompts, open_images, **kwargs):
    from gradio_client import Client

    from space.app import build_app
    from tests.helpers.net import launch_local
    from tests.helpers.space_helpers import RectanglePerception

    if open_images is not None:
        kwargs["open_images"] = open_images
    demo = build_app(prompts=prompts, store=store, perception=RectanglePerception(), **kwargs)
    return demo, Client(launch_local(demo), verbose=False, download_files=False)


def pages(args) -> None:
    from dataset_builder.loading import load_prompts
    from leaderboard.store.image_sources import ParquetImages
    from leaderboard.store.sqlite_store import SQLiteStore
    from tests.helpers.gallery_helpers import add_entry, varied_results

    prompts = load_prompts(None)
    root = Path(tempfile.mkdtemp(prefix="bounds_"))
    results = varied_results(prompts[: args.pages * 6], "big")
    store = SQLiteStore(root / "lb.sqlite")
    add_entry(store, "Big", results, images_repo="org/big")
    folder = solid_repo(root / "repo", [(r.prompt_id, r.sample_index) for r in results], "big", args.megapixels)
    demo, client = launched(
        store, prompts, lambda repo, revision, split: ParquetImages.from_folder(folder, split), recheck_every=None
    )
    print(f"| page | RSS (MB) | seconds | images shown |\n|---:|---:|---:|---:|\n| before | {rss_mb():.0f} | | |")
    for number in range(1, args.pages + 1):
        started = time.perf_counter()
        _, thumbnails, *_ = client.predict("Big", "any", "any", "any", "any", "any", number, api_name="/gallery")
        seconds = time.perf_counter() - started
        shown = sum("still being fetched" not in str(thumbnail) for thumbnail in thumbnails)  # not a placeholder
        print(f"| {number} | {rss_mb():.0f} | {seconds:.1f} | {shown} of {len(thumbnails)} |", flush=True)
    client.close()
    demo.close()


def calls(args) -> None:
    from dataset_builder.loading import load_prompts
    from leaderboard.store.sqlite_store import SQLiteStore

    root = Path(tempfile.mkdtemp(prefix="bounds_"))
    demo, client = launched(SQLiteStore(root / "lb.sqlite"), load_prompts(None), None, recheck_every=None)
    client.predict(api_name="/hub_status")
    start = rss_mb()
    print(f"| calls | RSS (MB) |\n|---:|---:|\n| 0 | {start:.0f} |")
    for number in range(1, args.calls + 1):
        client.reset_session()  # a new visitor each call
        client.predict(api_name="/hub_status")
        if number % max(1, args.every) == 0:
            print(f"| {number} | {rss_mb():.0f} |", flush=True)
    print(f"growth over {args.calls} calls: {rss_mb() - start:.0f} MB")
    client.close()
    demo.close()


def slow(args) -> None:
    from dataset_builder.loading import load_prompts
    from leaderboard.store.image_sources import ParquetImages
    from leaderboard.store.sqlite_store import SQLiteStore
    from tests.helpers.gallery_helpers import add_entry, varied_results
    from tests.helpers.space_helpers import write_images_dataset

    prompts = load_prompts(None)[:12]
    root = Path(tempfile.mkdtemp(prefix="bounds_"))
    store = SQLiteStore(root / "lb.sqlite")
    add_entry(store, "Kept", varied_results(prompts, "kept"), images_repo="org/kept")
    add_entry(store, "Slow", varied_results(prompts, "slow"), images_repo="org/slow", submitter="bob")
    write_images_dataset(root / "repo", prompts, "kept")
    write_images_dataset(root / "repo", prompts, "slow")
    started = threading.Event()

    def open_images(repo, revision, split):
        source = ParquetImages.from_folder(root / "repo", split)
        if repo != "org/slow":
            return source

        class Slow:
            def images(self, keys):
                started.set()
                time.sleep(args.seconds * len(keys))  # SECONDS an image: a repo far away or throttled
                return source.images(keys)

        return Slow()

    from gradio_client import Client

    demo, client = launched(store, prompts, open_images, recheck_every=None)
    other = Client(client.src, verbose=False, download_files=False)
    page = ("any", "any", "any", "any", "any", 1)

    def timed() -> float:
        begun = time.perf_counter()
        client.predict("Kept", *page, api_name="/gallery")
        return time.perf_counter() - begun

    timed()
    alone = statistics.median(timed() for _ in range(5))
    job = other.submit("Slow", *page, api_name="/gallery")
    started.wait(60)
    during = statistics.median(timed() for _ in range(5))
    print(f"| another client's kept page | seconds |\n|---|---:|\n| alone | {alone:.2f} |")
    print(f"| while a slow repo's page is fetched | {during:.2f} |\n\nratio {during / alone:.1f}")
    job.result(timeout=600)
    other.close()
    client.close()
    demo.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["pages", "calls", "slow"])
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--megapixels", type=float, default=40.0)
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--every", type=int, default=500, help="calls between two RSS readings")
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    sys.path.insert(0, str(args.checkout.resolve()))
    {"pages": pages, "calls": calls, "slow": slow}[args.what](args)


if __name__ == "__main__":
    main()
