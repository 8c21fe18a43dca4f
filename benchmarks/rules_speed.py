"""Speed of the Table 14 relation rules on one pair of masks (run by hand, not a test).

    .venv/bin/python benchmarks/rules_speed.py [--repeats 50]

For each scene and image size it reports the median time of
- ``all``: `all_relation_predicates` (directional, proximity, comparative and depth on one pair,
  sharing geometry and gap), the figure the ≤ 5 ms goal at 1024×1024 refers to;
- ``4 calls``: the four `relation_predicates` calls a verdict would make one by one.
Scenes are drawn in a 1024-pixel frame and scaled with the image, so objects keep their share.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=50, help="timed runs per figure (median reported)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048], help="image sides in px")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; medians of {args.repeats} runs, ms")
    print(f"{'scene':<12} {'size':>5} {'all wall':>9} {'all cpu':>8} {'4 calls wall':>13} {'4 calls cpu':>12}  predicates")
    for name, scene in SCENES.items():
        for size in args.sizes:
            mask_a, mask_b = scene(size)
            disparity = rng.random((size, size), dtype=np.float32)
            disparity[mask_a] += 0.5
            together = _median_ms(lambda: all_relation_predicates(mask_a, mask_b, disparity), args.repeats)
            separately = _median_ms(
                lambda: [relation_predicates(c, mask_a, mask_b, disparity)
                         for c in ("directional", "proximity", "comparative", "depth")],
                args.repeats,
            )
            found = sorted(p for r in all_relation_predicates(mask_a, mask_b, disparity).values() for p in r.predicates)
            print(f"{name:<12} {size:>5} {together[0]:>9.2f} {together[1]:>8.2f} {separately[0]:>13.2f} "
                  f"{separately[1]:>12.2f}  {', '.join(found)}")


if __name__ == "__main__":
    main()
