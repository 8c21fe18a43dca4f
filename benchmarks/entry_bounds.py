"""Memory and latency of the Space under a submitter's large or slow images, and over many API calls
(run by hand; nothing is asserted).

    .venv/bin/python benchmarks/entry_bounds.py pages [--pages 20] [--megapixels 40]
    .venv/bin/python benchmarks/entry_bounds.py calls [--calls 6000] [--every 500]
    .venv/bin/python benchmarks/entry_bounds.py slow [--seconds 1.0] [--visitors 8] [--fresh 10] [--every-page 0]
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
- `slow`: two verified entries, one whose repo hands out an image every SECONDS; another visitor's
  fresh Gallery page of the other (kept) entry, FRESH pages alone, then FRESH other pages while
  VISITORS visitors (each its own X-Forwarded-For, which the app trusts from 127.0.0.1, as from the
  Spaces proxy) page the slow repo, each asking for its next page once the last one is answered (as
  a browser's visitor does), or with EVERY_PAGE a new page that often without waiting (their clients
  run in a process of their own, `hostile`, so their work is not the server's); the median and worst
  of each, the pages that failed (a full queue refuses them), and the ratios (target: 2).
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import signal
import statistics
import subprocess
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


class SlowImages:
    """An images factory: the slow repo's images come SECONDS apart (a repo far away or throttled), the
    others' at once; `entered` is set at the slow repo's first read."""

    def __init__(self, folder: Path, seconds: float):
        self.folder, self.seconds, self.entered = folder, seconds, threading.Event()

    def __call__(self, repo, revision, split):
        from leaderboard.store.image_sources import ParquetImages

        source = ParquetImages.from_folder(self.folder, split)
        if repo != "org/slow":
            return source
        outer = self

        class Slow:
            def images(self, keys):
                outer.entered.set()
                for key, image in source.images(keys):
                    time.sleep(outer.seconds)
                    yield key, image

        return Slow()


def page_through(client, first: int, pages: int, every: float, stop: threading.Event, asked: list) -> None:
    """One hostile visitor paging the slow entry: a new page every EVERY seconds without waiting for
    the last one, or (EVERY 0) the next page as soon as the last one is answered, as a browser does."""
    number = first
    while not stop.is_set():
        asked.append(number)
        page = ("Slow", "any", "any", "any", "any", "any", number % pages + 1)
        try:
            if every > 0:
                client.submit(*page, api_name="/gallery")
                stop.wait(every)
            else:
                client.predict(*page, api_name="/gallery")
        except Exception:  # noqa: BLE001 - a refused page (the queue full): the visitor asks again
            stop.wait(1.0)
        number += 1


def slow(args) -> None:
    from dataset_builder.loading import load_prompts
    from leaderboard.store.sqlite_store import SQLiteStore
    from tests.helpers.gallery_helpers import add_entry, varied_results
    from tests.helpers.space_helpers import write_images_dataset

    pages = 2 * args.fresh + 1  # the other visitor's pages: one to warm up, then each one fresh
    prompts = load_prompts(None)[: max(pages, 8 * args.visitors) * 6]  # 24 images (6 prompts) a page
    root = Path(tempfile.mkdtemp(prefix="bounds_"))
    store = SQLiteStore(root / "lb.sqlite")
    add_entry(store, "Kept", varied_results(prompts, "kept"), images_repo="org/kept")
    add_entry(store, "Slow", varied_results(prompts, "slow"), images_repo="org/slow", submitter="bob")
    write_images_dataset(root / "repo", prompts, "kept")
    write_images_dataset(root / "repo", prompts, "slow")
    images = SlowImages(root / "repo", args.seconds)
    demo, first = launched(store, prompts, images, recheck_every=None, forwarded_allow_ips="127.0.0.1")
    url = first.src
    other = visitor_client(url, "203.0.113.1")
    kept = page_times(other, range(1, args.fresh + 2))[1:]  # page 1 warms the entry's records up
    # the visitors' clients run in a process of their own, as they would on their own machines: in this
    # one their gradio_client work (a TLS context and an SSE stream a call) would slow the server too
    command = [sys.executable, __file__, "hostile", "--url", url, "--visitors", str(args.visitors)]
    command += ["--every-page", str(args.every_page), "--checkout", str(args.checkout)]
    command += ["--hostile-nice", str(args.hostile_nice)]
    hostile = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    try:
        images.entered.wait(120)
        time.sleep(5.0)  # every hostile visitor has asked for its first pages
        during = page_times(other, range(args.fresh + 2, pages + 1))
    finally:
        hostile.terminate()
        hostile.wait(60)
    print_slow(args, kept, during)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = used.ru_utime + used.ru_stime
    print(f"the visitors' clients' process (niceness {args.hostile_nice}) used {cpu:.1f} s of CPU")
    demo.close()


def hostile(args) -> None:
    """The VISITORS visitors of `slow`, paging the slow entry from this process until it is stopped."""
    # at the lowest priority: on the visitors' own machines their clients' work takes none of the
    # server's CPU; on this 2-core machine it would, unless it yields (`--hostile-nice 0` to compare)
    os.nice(args.hostile_nice)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    clients = [visitor_client(args.url, f"198.51.100.{k + 1}") for k in range(args.visitors)]
    asked: list[int] = []
    threads = [
        threading.Thread(
            target=page_through, args=(client, 8 * k, 8 * args.visitors, args.every_page, stop, asked), daemon=True
        )
        for k, client in enumerate(clients)
    ]
    for thread in threads:
        thread.start()
    stop.wait()  # then out, pages in flight and all: the server answers them to no one
    print(f"the {args.visitors} visitors asked for {len(asked)} pages", flush=True)


def visitor_client(url: str, address: str):
    """A gradio_client of the app at URL as the visitor at ADDRESS (the app trusts 127.0.0.1's X-Forwarded-For)."""
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False, headers={"X-Forwarded-For": address})


def page_times(client, numbers) -> list[float | str]:
    """Seconds each Gallery page of the kept entry took (each page asked for the first time), or why it failed."""
    times: list[float | str] = []
    for number in numbers:
        begun = time.perf_counter()
        try:
            client.predict("Kept", "any", "any", "any", "any", "any", number, api_name="/gallery")
            times.append(time.perf_counter() - begun)
        except Exception as error:  # noqa: BLE001 - refused (the queue full) or failed: said, not timed
            times.append(f"{type(error).__name__} after {time.perf_counter() - begun:.1f} s")
    return times


def print_slow(args, alone: list, during: list) -> None:
    paging = f"a new page every {args.every_page:g} s" if args.every_page > 0 else "each page once answered"
    print(f"another visitor's fresh Gallery page of a kept entry ({len(alone)} pages each way), seconds;")
    print(f"the slow repo: an image every {args.seconds:g} s, its {args.visitors} visitors asking {paging}\n")
    print("| | median | worst | failed | all |\n|---|---:|---:|---:|---|")
    answered = {}
    for label, times in (("alone", alone), (f"while {args.visitors} visitors page a slow repo", during)):
        answered[label] = [t for t in times if isinstance(t, float)] or [float("nan")]
        shown = ", ".join(f"{t:.2f}" if isinstance(t, float) else t for t in times)
        failed = sum(not isinstance(t, float) for t in times)
        print(
            f"| {label} | {statistics.median(answered[label]):.2f} | {max(answered[label]):.2f} | {failed} | {shown} |"
        )
    first, second = answered.values()
    ratio = statistics.median(second) / statistics.median(first)
    print(f"\nratio of medians {ratio:.2f}, of worst {max(second) / max(first):.2f} (target: at most 2)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["pages", "calls", "slow", "hostile"], help="hostile: `slow`'s visitors")
    parser.add_argument("--url", help="`hostile`: the app `slow` launched")
    parser.add_argument(
        "--hostile-nice", type=int, default=19, help="`slow`: the niceness of the visitors' clients' process"
    )
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--megapixels", type=float, default=40.0)
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--every", type=int, default=500, help="calls between two RSS readings")
    parser.add_argument(
        "--seconds", type=float, default=1.0, help="`slow`: seconds between two of the slow repo's images"
    )
    parser.add_argument("--visitors", type=int, default=8, help="`slow`: visitors paging the slow repo")
    parser.add_argument(
        "--every-page",
        type=float,
        default=0.0,
        help="`slow`: a hostile visitor's pages this often (0: each once answered)",
    )
    parser.add_argument("--fresh", type=int, default=10, help="`slow`: the other visitor's pages timed, each way")
    args = parser.parse_args()
    sys.path.insert(0, str(args.checkout.resolve()))
    {"pages": pages, "calls": calls, "slow": slow, "hostile": hostile}[args.what](args)


if __name__ == "__main__":
    main()
