"""Speed of the Table 14 relation rules on one pair of masks (run by hand, not a test).

    .venv/bin/python benchmarks/rules_speed.py [--repeats 50] [--baseline GIT_REV]

For each scene and image size it reports the median time of
- ``all``: `all_relation_predicates` (directional, proximity, comparative and depth on one pair,
  sharing geometry and gap), the figure the ≤ 5 ms goal at 1024×1024 refers to;
- ``4 calls``: the four `relation_predicates` calls a verdict would make one by one.
Scenes are drawn in a 1024-pixel frame and scaled with the image, so objects keep their share.

With ``--baseline REV`` it also loads `evaluator.rules` as it was at that git revision (with that
revision's `evaluator` package underneath), times
its `all_relation_predicates` on the same inputs in alternation with the current one (so load
on the machine hits both alike), reports the ratio, and checks both give identical results.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType

import numpy as np

from evaluator.rules import all_relation_predicates, relation_predicates


def _disc(size: int, cy: float, cx: float, radius: float) -> np.ndarray:
    s = size / 1024
    yy, xx = np.ogrid[:size, :size]
    return (yy - cy * s) ** 2 + (xx - cx * s) ** 2 <= (radius * s) ** 2


def _rect(size: int, y0: int, x0: int, y1: int, x1: int) -> np.ndarray:
    s = size / 1024
    mask = np.zeros((size, size), bool)
    mask[int(y0 * s) : int(y1 * s), int(x0 * s) : int(x1 * s)] = True
    return mask


SCENES: dict[str, Callable[[int], tuple[np.ndarray, np.ndarray]]] = {
    # two mid-sized objects side by side, ~50 px apart (the common case)
    "apart": lambda n: (_disc(n, 400, 300, 150), _disc(n, 450, 700, 200)),
    # a cup standing on a table: touching, the small box inside the large one
    "touching": lambda n: (_rect(n, 300, 420, 460, 560), _rect(n, 460, 100, 900, 950)),
    # small objects in opposite corners
    "far": lambda n: (_disc(n, 150, 150, 80), _disc(n, 850, 850, 100)),
    # overlapping large objects (a dog on a couch)
    "overlapping": lambda n: (_disc(n, 500, 450, 220), _rect(n, 350, 150, 950, 900)),
}


def _median_ms(function: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time of this process, in ms (CPU time is the steadier
    figure on a shared, loaded machine)."""
    function()  # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def _load_baseline(revision: str) -> ModuleType:
    """`evaluator.rules` as of a git revision, loaded with the other top-level modules of that
    revision's `evaluator` package as a separate package (the rules import `.config` and, since
    the split, `.geometry`), so the baseline never mixes in the working tree's geometry."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout

    folder = Path(tempfile.mkdtemp()) / "evaluator_baseline"
    folder.mkdir()
    for path in git("ls-tree", "--name-only", f"{revision}:evaluator").split():
        if path.endswith(".py"):
            (folder / path).write_text(git("show", f"{revision}:evaluator/{path}"))
    name = "_evaluator_baseline"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package  # relative imports and dataclasses look their modules up there
    spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.rules")


def _same(left: dict, right: dict) -> bool:
    """Identical predicates and measurements (NaN equal to NaN, floats compared exactly)."""
    if left.keys() != right.keys():
        return False
    for category in left:
        if left[category].predicates != right[category].predicates:
            return False
        a, b = left[category].measurements, right[category].measurements
        if a.keys() != b.keys():
            return False
        for key in a:
            x, y = a[key], b[key]
            both_nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
            if not (both_nan or (x == y and type(x) is type(y))):
                return False
    return True


def _alternating_cpu_ms(first: Callable[[], object], second: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median CPU ms of two functions timed in alternation."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for function, spent in ((first, times[0]), (second, times[1])):
            start = time.process_time()
            function()
            spent.append(time.process_time() - start)
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000


def compare(revision: str, sizes: list[int], repeats: int) -> None:
    baseline = _load_baseline(revision)
    rng = np.random.default_rng(0)
    print(f"\nall_relation_predicates, {revision} vs working tree: median CPU ms of {repeats} alternating runs")
    print(f"{'scene':<12} {'size':>5} {'baseline':>9} {'current':>8} {'speed-up':>9}  identical")
    for name, scene in SCENES.items():
        for size in sizes:
            mask_a, mask_b = scene(size)
            disparity = rng.random((size, size), dtype=np.float32)
            disparity[mask_a] += 0.5
            old, new = _alternating_cpu_ms(
                partial(baseline.all_relation_predicates, mask_a, mask_b, disparity),
                partial(all_relation_predicates, mask_a, mask_b, disparity),
                repeats,
            )
            same = _same(
                baseline.all_relation_predicates(mask_a, mask_b, disparity),
                all_relation_predicates(mask_a, mask_b, disparity),
            )
            print(f"{name:<12} {size:>5} {old:>9.2f} {new:>8.2f} {old / new:>8.2f}×  {'yes' if same else 'NO'}")


def _each_category(mask_a, mask_b, disparity) -> list:
    return [
        relation_predicates(category, mask_a, mask_b, disparity)
        for category in ("directional", "proximity", "comparative", "depth")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=50, help="timed runs per figure (median reported)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048], help="image sides in px")
    parser.add_argument(
        "--baseline",
        metavar="GIT_REV",
        help="also time evaluator.rules at this git revision (e.g. HEAD) against the working "
        "tree, alternating runs, and check the results are identical",
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; medians of {args.repeats} runs, ms")
    print(
        f"{'scene':<12} {'size':>5} {'all wall':>9} {'all cpu':>8} {'4 calls wall':>13} {'4 calls cpu':>12}  predicates"
    )
    for name, scene in SCENES.items():
        for size in args.sizes:
            mask_a, mask_b = scene(size)
            disparity = rng.random((size, size), dtype=np.float32)
            disparity[mask_a] += 0.5
            together = _median_ms(partial(all_relation_predicates, mask_a, mask_b, disparity), args.repeats)
            separately = _median_ms(partial(_each_category, mask_a, mask_b, disparity), args.repeats)
            found = sorted(p for r in all_relation_predicates(mask_a, mask_b, disparity).values() for p in r.predicates)
            print(
                f"{name:<12} {size:>5} {together[0]:>9.2f} {together[1]:>8.2f} {separately[0]:>13.2f} "
                f"{separately[1]:>12.2f}  {', '.join(found)}"
            )
    if args.baseline:
        compare(args.baseline, args.sizes, args.repeats)


if __name__ == "__main__":
    main()
