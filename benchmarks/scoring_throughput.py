"""Scoring throughput: images/s with 0, 1, 2 loader workers, CPU seconds per stage, and a GPU mode.

Run by hand (repository root):

    .venv/bin/python benchmarks/scoring_throughput.py                 # CPU: workers 0/1/2, stages
    .venv/bin/python benchmarks/scoring_throughput.py --gpu --device cpu   # the GPU mode, tiny models, on the CPU
    .venv/bin/python benchmarks/scoring_throughput.py --gpu --device cuda --models full   # random full-size models
    .venv/bin/python benchmarks/scoring_throughput.py --gpu --device cuda --real --weights-dir DIR  # real weights

CPU mode (default): the tests' tiny random models (`tests/helpers/perception_helpers.py`) on `--images`
(default 128) 1024² PNGs made from the photographs in `skimage.data`, prompts of all six
categories in turn. 128 images are 16 batches of 8: every run starts by decoding its first batch
with nothing to overlap it, which in a run of 4 batches (32 images) is a fifth of the run and in
a model's split (19,200 images) nothing; `--images 32` shows that start's share.
`score_images` runs with 0, 1 and 2 workers *alternately*, `--repeats` times, each into a fresh
file; it prints each run's images/s and the load average, then the medians, and checks that
every run wrote the same bytes. Then one instrumented sequential pass gives the CPU seconds
per image of each stage, measured in the pipeline's own order: decode (`load_image`),
preprocess (`InputPreparer`: the models' input tensors), forwards (the modules' forward calls),
post-process (the rest of `observe`: detection selection, mask upsampling, crops, SigLIP's
preprocessing), rules (`judge`) and write (`ResultWriter.write`).

GPU mode (`--gpu`): for batch sizes 1, 8 and 32, `score_images` end to end over `--images`
1024² PNGs with the default (or `--num-workers`) workers, `--repeats` (3) runs each: images/s,
the *host-only* CPU ms per image of the scoring process (`benchmarks/device_stages.py`: the
loader's hand-over, `observe` outside its device stages, the rules and the write; the forwards
and the tensor ops that run on the device are timed apart), the share of wall time the device
waits, and peak `torch.cuda.max_memory_allocated`; the run with the median host time is shown.
`--models tiny` (default on the CPU), `full` (the real architectures with random weights: same
compute; default on CUDA) or `real` (`--real`: `ModelPerception` with the weights `negt2ibench
download-models` fetched). `--device cpu` runs the GPU mode on the CPU as it runs on a GPU (the
workers only decode, `observe` makes the inputs), so the host-only budget of a GPU run is
measured without one. `--representative`: prompts from the corpus and one seeded box per prompt
object (the tiny detector's own boxes are few and degenerate), as `benchmarks/gpu.sh` does.

Every run fixes torch's intra-op threads (`--threads`, default 1) for all modes alike: on a
shared 2-core machine more threads make the forwards slower, not faster (OpenMP threads wait
for a core another process holds). Records do not depend on the number of workers; the
figures do depend on the machine's load, which is printed with each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
from PIL import Image  # noqa: E402

# The object pairs the tiny detector is biased to see (tests/helpers/perception_helpers.VISIBLE_CLASSES).
KINDS = [
    ("color", ["cup", "bowl"]),
    ("material", ["bench", "bowl"]),
    ("directional", ["car", "bus"]),
    ("proximity", ["cat", "dog"]),
    ("comparative", ["sheep", "cat"]),
    ("depth", ["cat", "dog"]),
]


def photos() -> list:
    """The colour photographs shipped in scikit-image's wheel (no download)."""
    import skimage.data as data

    return [data.chelsea(), data.coffee(), data.astronaut(), data.rocket(), data.stereo_motorcycle()[0]]


def write_folder(folder: Path, count: int, size: int, prompts: list | None = None) -> list:
    """COUNT PNGs `{prompt_id}_0.png` of SIZE² resized photographs, and their prompt records
    (`prompts` when given, else the categories of KINDS in turn)."""
    from tests.helpers.perception_helpers import make_prompt

    folder.mkdir(parents=True, exist_ok=True)
    pictures = [Image.fromarray(picture).convert("RGB") for picture in photos()]
    if prompts is None:
        prompts = []
        for number in range(count):
            category, objects = KINDS[number % len(KINDS)]
            prompts.append(make_prompt(category, objects, f"{category}_pos1_neg0_{number:03d}"))
    for number, prompt in enumerate(prompts):
        pictures[number % len(pictures)].resize((size, size), Image.BICUBIC).save(folder / f"{prompt.prompt_id}_0.png")
    return prompts


def load_average() -> float:
    return os.getloadavg()[0]


class ForwardClock:
    """Wraps the models' forward entry points; sums wall and CPU time spent inside them."""

    def __init__(self, device: torch.device):
        self.sync = device.type == "cuda"
        self.wall = 0.0
        self.cpu = 0.0

    def wrap(self, owner, attribute: str) -> None:
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            if self.sync:
                torch.cuda.synchronize()
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                if self.sync:
                    torch.cuda.synchronize()
                self.wall += time.perf_counter() - wall
                self.cpu += time.thread_time() - cpu

        setattr(owner, attribute, timed)  # an instance attribute shadows the method

    def attach(self, perception) -> ForwardClock:
        if perception._detector is not None:
            self.wrap(perception._detector.network, "forward")
        if perception._segmenter is not None:
            self.wrap(perception._segmenter.model, "get_image_embeddings")
            self.wrap(perception._segmenter.model, "forward")  # box prompts on cached embeddings
        if perception._attributes is not None:
            self.wrap(perception._attributes.model, "get_image_features")
            self.wrap(perception._attributes.model, "get_text_features")
        if perception._depth is not None:
            self.wrap(perception._depth.model, "forward")
        return self


def build_perception(models: str, device: str, batch_size: int, weights_dir: str | None):
    from evaluator.config import PRESETS
    from evaluator.perception import ModelPerception

    config = PRESETS["current"]
    if models == "tiny":
        from tests.helpers.perception_helpers import tiny_models

        detector, sam, siglip, depth = tiny_models()
    elif models == "full":
        from perception_cpu import full_depth, full_detector, full_sam, full_siglip

        detector, sam, siglip, depth = full_detector(), full_sam(), full_siglip(), full_depth()
    else:
        perception = ModelPerception(config, device=device, batch_size=batch_size, weights_dir=weights_dir)
        perception.load_all()
        return perception
    dtype = torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    return ModelPerception.from_models(
        config,
        detector=detector,
        sam=sam,
        siglip=siglip,
        depth=depth,
        device=device,
        batch_size=batch_size,
        dtype=dtype,
    )


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the loader's workers, once shut down)."""
    import resource

    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def score(
    folder: Path, prompts, perception, out: Path, batch_size: int, workers: int | None, limit: int | None = None
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process, CPU seconds of the scoring thread) of one run."""
    from evaluator.pipeline import score_images

    started, cpu, own = time.perf_counter(), cpu_seconds(), time.thread_time()
    summary = score_images(
        folder,
        prompts,
        perception,
        out_path=out,
        config=perception.config,
        model_key="bench",
        batch_size=batch_size,
        progress=False,
        num_workers=workers,
        limit=limit,
    )
    seconds, cpu, own = time.perf_counter() - started, cpu_seconds() - cpu, time.thread_time() - own
    if summary.errors:
        raise SystemExit(f"unexpected error rows: {summary.error_reasons}")
    return seconds, cpu, own


def stage_seconds(folder: Path, prompts, perception, batch_size: int, out: Path) -> dict[str, float]:
    """CPU seconds per image of each stage, one sequential pass in the pipeline's order."""
    from evaluator.images import load_image
    from evaluator.resultio import ResultWriter
    from evaluator.verdict import decide_statements

    clock = ForwardClock(perception.device).attach(perception)
    preparer = perception.input_preparer({prompt.category for prompt in prompts})
    totals = dict.fromkeys(("decode", "preprocess", "forwards", "post-process", "rules", "write"), 0.0)
    with ResultWriter(out) as writer:
        for start in range(0, len(prompts), batch_size):
            batch = prompts[start : start + batch_size]
            images, prepared = [], []
            for prompt in batch:
                began = time.thread_time()
                image = load_image(folder / f"{prompt.prompt_id}_0.png")
                totals["decode"] += time.thread_time() - began
                began = time.thread_time()
                prepared.append(preparer(image, prompt.category))
                totals["preprocess"] += time.thread_time() - began
                images.append(image)
            forwards, began = clock.cpu, time.thread_time()
            observations = perception.observe(images, batch, prepared=prepared, masks="rules")
            spent = time.thread_time() - began
            totals["forwards"] += clock.cpu - forwards
            totals["post-process"] += spent - (clock.cpu - forwards)
            for prompt, observation in zip(batch, observations, strict=True):
                began = time.thread_time()
                record = decide_statements(
                    prompt, observation, model_key="bench", sample_index=0, config=perception.config
                )
                totals["rules"] += time.thread_time() - began
                began = time.thread_time()
                writer.write(record)
                totals["write"] += time.thread_time() - began
    return {stage: seconds / len(prompts) for stage, seconds in totals.items()}


def records_without_time(path: Path) -> bytes:
    """The records of a results file with their `scored_at` left out: the moment each was scored differs
    from run to run, everything else must not."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record.pop("scored_at", None)
        lines.append(json.dumps(record, sort_keys=True))
    return "\n".join(lines).encode("utf-8")


def cpu_mode(args: argparse.Namespace) -> dict:
    workers = [int(value) for value in args.workers.split(",")]
    perception = build_perception("tiny", "cpu", args.batch_size, None)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "images"
        prompts = write_folder(folder, args.images, args.size)
        score(folder, prompts, perception, Path(scratch) / "warm.jsonl", args.batch_size, 0, limit=2)  # lazy init
        rates: dict[int, list[float]] = {count: [] for count in workers}
        cpus: dict[int, list[float]] = {count: [] for count in workers}
        scoring: dict[int, list[float]] = {count: [] for count in workers}
        loads, contents = [], {}
        for repeat in range(args.repeats):
            line = []
            for count in workers:
                out = Path(scratch) / f"run{repeat}_w{count}.jsonl"
                seconds, cpu, own = score(folder, prompts, perception, out, args.batch_size, count)
                rate = len(prompts) / seconds
                rates[count].append(rate)
                cpus[count].append(cpu / len(prompts))
                scoring[count].append(own / len(prompts))
                contents.setdefault(records_without_time(out), []).append(out.name)
                line.append(f"{count} workers {rate:5.2f} img/s")
            loads.append(load_average())
            print(f"run {repeat + 1}: " + ", ".join(line) + f"  (load average {loads[-1]:.1f})", flush=True)
        stages = stage_seconds(folder, prompts, perception, args.batch_size, Path(scratch) / "stages.jsonl")
    medians = {count: statistics.median(values) for count, values in rates.items()}
    base = medians.get(0)
    print(f"\nmedian of {args.repeats} (load average {min(loads):.1f}–{max(loads):.1f}):")
    for count, rate in medians.items():
        ratio = f", {rate / base:.2f}× sequential" if base and count else ""
        cpu, own = statistics.median(cpus[count]) * 1000, statistics.median(scoring[count]) * 1000
        print(
            f"  {count} workers: {rate:5.2f} img/s{ratio}; CPU per image {cpu:.0f} ms in all processes, "
            f"{own:.0f} ms in the scoring thread"
        )
    # With idle cores a run takes at least its scoring thread's CPU time and its total CPU time
    # shared over the cores: the rate those two bounds allow (a projection, not a measurement).
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    bounds = {
        count: 1000 / max(statistics.median(scoring[count]) * 1000, statistics.median(cpus[count]) * 1000 / cores)
        for count in workers
    }
    if 0 in bounds:
        line = ", ".join(
            f"{count} workers {bound:.2f} img/s ({bound / bounds[0]:.2f}×)" for count, bound in bounds.items()
        )
        print(f"bound on {cores} idle cores (projection from the CPU times above): {line}")
    runs = sum(map(len, contents.values()))
    print(f"records identical across all {runs} runs (their `scored_at` aside): {len(contents) == 1}")
    print("CPU ms per image by stage (sequential):")
    for stage, seconds in stages.items():
        print(f"  {stage:12s} {seconds * 1000:7.1f}")
    return {
        "mode": "cpu",
        "images": len(prompts),
        "size": args.size,
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "rates": {str(count): values for count, values in rates.items()},
        "median_images_per_s": {str(count): rate for count, rate in medians.items()},
        "cpu_s_per_image": {str(count): values for count, values in cpus.items()},
        "scoring_thread_cpu_s_per_image": {str(count): values for count, values in scoring.items()},
        "idle_core_bound_images_per_s": {str(count): bound for count, bound in bounds.items()},
        "load_average": loads,
        "identical": len(contents) == 1,
        "stage_cpu_s_per_image": stages,
    }


def gpu_mode(args: argparse.Namespace) -> dict:
    from device_stages import DEVICE_STAGES, HOST_STAGES, attached, host_ms_per_image
    from representative import corpus_prompts, representative

    device = torch.device(args.device)
    models = "real" if args.real else args.models or ("full" if device.type == "cuda" else "tiny")
    batch_sizes = [int(value) for value in args.batch_sizes.split(",")]
    repeats = args.repeats if args.repeats is not None else 3
    perception = build_perception(models, args.device, max(batch_sizes), args.weights_dir)
    if args.representative:
        representative(perception)
    if device.type == "cpu":  # as on a GPU: the workers only decode, `observe` makes the inputs on the device
        perception.worker_preparer = lambda categories: None
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "images"
        chosen = corpus_prompts(args.images) if args.representative else None
        prompts = write_folder(folder, args.images, args.size, chosen)
        boxes = "one seeded box per prompt object (corpus prompts)" if args.representative else "the detector's boxes"
        print(
            f"{models} models on {perception.device} ({perception.dtype}), {len(prompts)} images of {args.size}², "
            f"{boxes}; host-only and device stages timed apart, {repeats} runs per batch size"
        )
        for batch_size in batch_sizes:
            perception.batch_size = batch_size
            warm = Path(scratch) / f"warm{batch_size}.jsonl"
            score(folder, prompts, perception, warm, batch_size, 0, limit=batch_size)
            runs = []
            for repeat in range(repeats):
                if device.type == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                out = Path(scratch) / f"b{batch_size}_{repeat}.jsonl"
                with attached(perception, sync=device.type == "cuda", end_to_end=True) as clock:
                    seconds, _, _ = score(folder, prompts, perception, out, batch_size, args.num_workers)
                runs.append(
                    {
                        "images_per_s": len(prompts) / seconds,
                        "host_ms_per_image": host_ms_per_image(clock, len(prompts)),
                        "host_ms_by_stage": {
                            stage: 1000 * clock.seconds([stage]) / len(prompts) for stage in HOST_STAGES
                        },
                        "device_ms_per_image": 1000 * clock.seconds(DEVICE_STAGES) / len(prompts),
                        "start_ms": 1000 * clock.seconds(["loader-start"]),
                        "device_waits": max(0.0, 1.0 - clock.seconds(DEVICE_STAGES, "wall") / seconds),
                        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None,
                        "load_average": load_average(),
                    }
                )
            middle = sorted(runs, key=lambda run: run["host_ms_per_image"])[len(runs) // 2]
            row = {
                "batch_size": batch_size,
                **middle,
                "host_ms_per_image_runs": [run["host_ms_per_image"] for run in runs],
                "images_per_s": statistics.median(run["images_per_s"] for run in runs),
            }
            rows.append(row)
            memory = f"{row['peak_gib']:.2f} GiB" if row["peak_gib"] is not None else "n/a (CPU)"
            stages = ", ".join(f"{stage} {ms:.2f}" for stage, ms in row["host_ms_by_stage"].items())
            runs_ms = " / ".join(f"{ms:.2f}" for ms in row["host_ms_per_image_runs"])
            print(
                f"batch {batch_size:3d}: {row['images_per_s']:6.2f} img/s, host-only {row['host_ms_per_image']:.2f} "
                f"ms/img (median of {runs_ms}; {stages}), device stages {row['device_ms_per_image']:.1f} ms/img, "
                f"device waits {row['device_waits']:.0%}, peak memory {memory}  "
                f"(load average {row['load_average']:.1f})",
                flush=True,
            )
    from evaluator.loader import default_num_workers

    workers = args.num_workers if args.num_workers is not None else default_num_workers()
    return {
        "mode": "gpu",
        "device": str(device),
        "models": models,
        "representative": args.representative,
        "num_workers": workers,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, help="images per run (default: 128 CPU mode, 64 GPU mode)")
    parser.add_argument("--size", type=int, default=1024, help="image side in px (default 1024)")
    parser.add_argument("--batch-size", type=int, default=8, help="CPU mode: images per batch (default 8)")
    parser.add_argument(
        "--repeats", type=int, help="CPU mode: alternating runs per worker count (5); GPU mode: runs per batch size (3)"
    )
    parser.add_argument("--workers", default="0,1,2", help="CPU mode: worker counts to compare (default 0,1,2)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads, all modes alike (default 1)")
    parser.add_argument("--gpu", action="store_true", help="the GPU mode (batch sizes, device waits, peak memory)")
    parser.add_argument("--device", default="cuda", help="GPU mode: cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--models", choices=("tiny", "full", "real"), help="GPU mode: which models (see above)")
    parser.add_argument("--real", action="store_true", help="GPU mode: real weights (same as --models real)")
    parser.add_argument("--weights-dir", help="GPU mode, real models: folder of `download-models --dir`")
    parser.add_argument("--batch-sizes", default="1,8,32", help="GPU mode: batch sizes (default 1,8,32)")
    parser.add_argument("--num-workers", type=int, help="GPU mode: loader workers (default: from the CPU count)")
    parser.add_argument(
        "--representative",
        action="store_true",
        help="GPU mode: corpus prompts, one seeded box per prompt object (benchmarks/device_stages.py)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.images is None:
        args.images = 64 if args.gpu else 128
    if args.repeats is None and not args.gpu:
        args.repeats = 5
    python = sys.version.split()[0]
    print(f"torch {torch.__version__}, {args.threads} intra-op thread(s), {os.cpu_count()} CPUs, python {python}")
    result = gpu_mode(args) if args.gpu else cpu_mode(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
