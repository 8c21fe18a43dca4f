"""Time `negt2ibench report` end to end on a full-size synthetic sweep (run by hand).

    .venv/bin/python benchmarks/report_speed.py [--models 11] [--bootstrap 1000] [--repeats 3]
    .venv/bin/python benchmarks/report_speed.py --baseline 38de041   # the same files through that revision too

Writes `--models` complete result files (4,800 prompts × 4 images each, one statement result per
statement of the prompt, the prompt's objects detected with seeded boxes so the order-to-space
diagnostic has pairs to judge; random verdicts with a fixed seed), then times the whole command in
a fresh process, reading included: `python -m negt2ibench report FILES --out DIR`, median of
`--repeats`. With `--baseline REV` the tree of that git revision (`git archive`) runs the same
command on the same files, alternating with this tree, and every report file of the two is
compared byte for byte (the benchmark fails if one differs).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_builder.loading import prompt_index  # noqa: E402
from dataset_builder.vocabulary import RELATION_CATEGORIES, SAMPLES_PER_PROMPT  # noqa: E402
from evaluator.results import ObjectResult, ResultRecord, StatementResult  # noqa: E402


def synthetic_run(model: str, rng: random.Random, prompts) -> list[ResultRecord]:
    """One complete run of MODEL: every prompt × 4 samples, random verdicts, seeded boxes."""
    records = []
    for prompt in prompts:
        prompt_id = prompt.prompt_id
        for sample in range(SAMPLES_PER_PROMPT):
            objects = []
            for name in dict.fromkeys(prompt.objects):
                present = rng.random() < 0.9
                x0, y0 = rng.uniform(0, 800), rng.uniform(0, 800)
                box = [x0, y0, x0 + rng.uniform(20, 224), y0 + rng.uniform(20, 224)] if present else None
                objects.append(ObjectResult(name=name, present=present, confidence=rng.random(), box=box))
            statements = []
            for statement in prompt.statements:
                ok = rng.random() < 0.7
                cause = None
                if not ok:
                    negated = statement.polarity == "negated"
                    cause = "forbidden_rendered" if negated else rng.choice(("wrong_value", "subject_missing"))
                dead = ok and statement.polarity == "negated" and prompt.category in RELATION_CATEGORIES
                statements.append(
                    StatementResult(
                        index=statement.index,
                        polarity=statement.polarity,
                        satisfied=ok,
                        cause=cause,
                        dead_zone_pass=dead and rng.random() < 0.2,
                    )
                )
            records.append(
                ResultRecord(
                    prompt_id=prompt_id,
                    model_key=model,
                    sample_index=sample,
                    passed=all(s.satisfied for s in statements),
                    objects=objects,
                    statements=statements,
                    evaluator_version="1.0.0",
                    config_hash="bench",
                )
            )
    return records


def write_inputs(folder: Path, models: int) -> list[Path]:
    rng = random.Random(0)
    prompts = prompt_index(None)
    paths = []
    for m in range(models):
        path = folder / f"model_{m}.jsonl"
        path.write_text("".join(r.model_dump_json() + "\n" for r in synthetic_run(f"model_{m}", rng, prompts)))
        paths.append(path)
    return paths


def timed_report(tree: Path, files: list[Path], out: Path, bootstrap: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `negt2ibench report` process run from TREE (its code on
    PYTHONPATH). On a shared machine the CPU time (user + system, the process and its children) is
    what the wall time would be on an idle one, for this mostly single-threaded command."""
    command = [sys.executable, "-m", "negt2ibench", "report", *map(str, files), "--out", str(out)]
    command += ["--bootstrap", str(bootstrap)]
    env = {**os.environ, "PYTHONPATH": str(tree), "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"report from {tree} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def same_files(a: Path, b: Path) -> list[str]:
    """Names of the report files that differ between two report folders."""
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    return [n for n in names if not ((a / n).is_file() and (b / n).is_file() and filecmp.cmp(a / n, b / n, False))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=11, help="complete runs (19,200 results each; default 11)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="the report's --bootstrap (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each tree (default 3; the median)")
    parser.add_argument("--baseline", metavar="REV", help="also time the tree of this git revision, alternately")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch_path = Path(scratch)
        started = time.perf_counter()
        files = write_inputs(scratch_path, args.models)
        size = sum(p.stat().st_size for p in files) / 2**20
        print(
            f"{args.models * 19_200:,} results in {args.models} files ({size:.0f} MiB), made in "
            f"{time.perf_counter() - started:.0f} s; --bootstrap {args.bootstrap}"
        )
        trees = {"this tree": ROOT}
        if args.baseline:
            baseline = scratch_path / "baseline"
            baseline.mkdir()
            archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive.stdout, check=True)
            trees[args.baseline] = baseline
        times: dict[str, list[float]] = {name: [] for name in trees}
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        for repeat in range(args.repeats):
            for name, tree in trees.items():
                out = scratch_path / f"out_{len(times[name])}_{name[:4]}"
                seconds, cpu_seconds = timed_report(tree, files, out, args.bootstrap)
                times[name].append(seconds)
                cpu[name].append(cpu_seconds)
                print(f"run {repeat + 1}, {name}: {seconds:.2f} s wall, {cpu_seconds:.2f} s CPU", flush=True)
        print(f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
        for name, values in times.items():
            runs = ", ".join(f"{v:.2f}" for v in values)
            median_cpu = statistics.median(cpu[name])
            print(f"{name}: median {statistics.median(values):.2f} s wall (runs {runs}), {median_cpu:.2f} s CPU")
        if args.baseline:
            differ = same_files(scratch_path / "out_0_this", scratch_path / f"out_0_{args.baseline[:4]}")
            if differ:
                raise SystemExit(f"the report files differ from {args.baseline}'s: {', '.join(differ)}")
            print(f"every report file is byte-identical to {args.baseline}'s")
            print(f"speed-up: {statistics.median(times[args.baseline]) / statistics.median(times['this tree']):.1f}×")


if __name__ == "__main__":
    main()
