"""The GPU benchmark in one run (issue 25): FLOPs, speed, MFU and memory of the scorer, per stage.

Run on a lent GPU (one command, under 8 minutes on an H100/H200 with the model builds):

    bash benchmarks/gpu.sh                           # writes benchmarks/gpu-results.json
    bash benchmarks/gpu.sh --device cpu --images 8   # the same run on the CPU, tiny models (the test suite's)
    .venv/bin/python benchmarks/gpu_bench.py --device cpu --models full --flops-only --images 12 --batch-sizes 6
                                                     # the FLOP table of the full-size models on a CPU

Models: `full` (default on CUDA) are the real architectures with random weights (RF-DETR Seg XL at
624², SAM 2.1 Hiera-S at 1024², SigLIP 2 so400m/14 at 384², Depth-Anything V2 Large at 518²;
`benchmarks/perception_cpu.py` builds them from their configs: no download), so FLOPs and speed
are the real models'; `tiny` (default on the CPU) the tests' tiny ones. bf16 on CUDA (SigLIP 2 in
float32, as the scorer runs it), float32 on the CPU.

The representative benchmark (`benchmarks/device_stages.py`): prompts drawn from the corpus with its
mix of categories; the detector's real forward runs, then its output is replaced by one seeded box
per prompt object inside the image, so SAM, the SigLIP crops and Depth-Anything do the work a real
image gives them (SAM's masks are then replaced by the ellipse in each box, for the rules' sake).
Images are 1024² photographs from `skimage.data`. For each batch size (1/8/32/64):

- FLOPs per image, per stage and in total (torch's `FlopCounterMode`, over `--flop-images`
  images; this pass is also the warm-up);
- images/s of `ModelPerception.observe` over all `--images`, the achieved TFLOP/s and the MFU
  against the device's dense bf16 peak (`device_stages.PEAK_TFLOPS`, or `--peak-tflops`), peak
  `torch.cuda.max_memory_allocated`;
- per stage: ms/img (a pass with a CUDA synchronise at each stage's ends), its TFLOP/s and MFU;
  the host-only CPU ms/img (everything in `observe` outside its device stages), and the share of
  time the GPU waits (from the profiler's kernel timeline without synchronisation; from the
  synchronised pass as well);
- end to end: `score_images` on a folder of PNGs with loader workers (decode, models, verdicts,
  JSONL): images/s, peak memory, host-only ms/img (the loader's hand-over, `observe` outside the
  device stages, the rules and the write).

On CUDA it also measures how far TF32 matmuls would move SigLIP's value scores (β is 0.005 in
cosine, 0.5 in these 100 × cosine scores). The JSON is rewritten after every step, so a run cut
short keeps what it measured; `--budget-s` skips the steps that would start too late.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import torch  # noqa: E402
from device_stages import DEVICE_STAGES, HOST_STAGES, attached, host_ms_per_image, no_grad_parameters, peak_tflops  # noqa: E402
from representative import (  # noqa: E402
    corpus_expectation,
    corpus_mix,
    corpus_prompts,
    frames,
    per_unit,
    representative,
    seeded_boxes,
)


class Run:
    """The results document and its file, with the run's clock against the budget."""

    def __init__(self, out: Path, budget_s: float):
        self.out, self.budget_s, self.started = out, budget_s, time.perf_counter()
        self.doc: dict = {"rows": [], "end_to_end": [], "skipped": []}

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def allows(self, step: str) -> bool:
        if self.elapsed() < self.budget_s:
            return True
        self.doc["skipped"].append(step)
        print(f"skipped (budget of {self.budget_s:.0f} s spent): {step}", flush=True)
        return False

    def save(self) -> None:
        self.doc["elapsed_s"] = self.elapsed()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(self.doc, indent=2) + "\n", encoding="utf-8")


def build(models: str, device: str, dtype: torch.dtype):
    """The perception on `device` (SAM preset `current`) and the seconds its models took to build."""
    from evaluator.config import PRESETS
    from evaluator.perception import ModelPerception

    started = time.perf_counter()
    if models == "tiny":
        from tests.helpers.perception_helpers import tiny_models

        detector, sam, siglip, depth = tiny_models()
    else:
        from perception_cpu import full_depth, full_detector, full_sam, full_siglip

        detector = full_detector()
        try:  # the transformers models initialise their random weights where they will run: faster
            with torch.device(device):
                sam, siglip, depth = full_sam(), full_siglip(), full_depth()
        except (RuntimeError, TypeError, ValueError) as error:
            print(f"building on {device} failed ({type(error).__name__}: {error}); building on the CPU", flush=True)
            sam, siglip, depth = full_sam(), full_siglip(), full_depth()
    perception = ModelPerception.from_models(
        PRESETS["current"], detector=detector, sam=sam, siglip=siglip, depth=depth, device=device, dtype=dtype
    )
    return perception, time.perf_counter() - started


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def gpu_busy_share(device: torch.device, observe, images, prompts) -> float | None:
    """The share of `run`'s wall time in which some kernel or copy ran (the profiler's CUDA timeline)."""
    if device.type != "cuda":
        return None
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            synchronize(device)
            started = time.perf_counter()
            observe(images, prompts, masks="rules")
            synchronize(device)
            wall = time.perf_counter() - started
        spans = sorted(
            (event.start_ns(), event.start_ns() + event.duration_ns())
            for event in prof.profiler.kineto_results.events()
            if event.device_type() == torch.autograd.DeviceType.CUDA
        )
    except Exception as error:  # noqa: BLE001 - the profiler is optional: report why, go on
        print(f"no GPU timeline ({type(error).__name__}: {error})", flush=True)
        return None
    busy, end = 0, None
    for start, stop in spans:  # the union of the intervals
        if end is None or start > end:
            busy, end = busy + stop - start, stop
        elif stop > end:
            busy, end = busy + stop - end, stop
    return min(1.0, busy / 1e9 / wall) if spans else None


def observe_rows(run: Run, perception, prompts, images, args, peak: float | None) -> None:
    device = perception.device
    for batch_size in [int(value) for value in args.batch_sizes.split(",")]:
        if not run.allows(f"batch {batch_size}"):
            continue
        perception.batch_size = batch_size
        counted = min(args.flop_images, len(images))
        with attached(perception) as clock, clock.counting():
            perception.observe(images[:counted], prompts[:counted], masks="rules")
        flops = {stage: value / counted for stage, value in clock.flops().items()}
        flops["total"] = sum(flops.values())
        crops = sum(len(dict.fromkeys(p.objects)) for p in prompts[:counted] if p.kind == "attribute")
        row: dict = {"batch_size": batch_size, "flops_per_image": flops, "flop_images": counted, "flop_crops": crops}
        row["flops_per_unit"] = per_unit(clock.flops(), counted, crops, prompts[:counted])
        row["corpus_flops_per_image"] = corpus_expectation(row["flops_per_unit"], run.doc["corpus"])
        if not args.flops_only:
            synchronize(device)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            started = time.perf_counter()
            perception.observe(images, prompts, masks="rules")
            synchronize(device)
            seconds = time.perf_counter() - started
            row["images_per_s"] = len(images) / seconds
            row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
            row["tflops_per_s"] = flops["total"] * row["images_per_s"] / 1e12
            row["mfu"] = row["tflops_per_s"] / peak if peak else None
            staged = images[: min(args.stage_images, len(images))]
            with attached(perception, sync=device.type == "cuda") as clock:
                started = time.perf_counter()
                perception.observe(staged, prompts[: len(staged)], masks="rules")
                wall = time.perf_counter() - started
            stage_ms = {stage: 1000 * clock.seconds([stage], "wall") / len(staged) for stage in DEVICE_STAGES}
            row["stage_ms_per_image"] = stage_ms
            row["stage_tflops_per_s"] = {
                stage: flops.get(stage, 0) / (ms / 1000) / 1e12 if ms else None for stage, ms in stage_ms.items()
            }
            row["stage_mfu"] = {
                stage: value / peak if value is not None and peak else None
                for stage, value in row["stage_tflops_per_s"].items()
            }
            row["host_ms_per_image"] = host_ms_per_image(clock, len(staged))
            row["gpu_waits_synchronised"] = max(0.0, 1 - clock.seconds(DEVICE_STAGES, "wall") / wall)
            busy = gpu_busy_share(device, perception.observe, staged, prompts[: len(staged)])
            row["gpu_waits"] = 1 - busy if busy is not None else row["gpu_waits_synchronised"]
        run.doc["rows"].append(row)
        run.save()
        print(row_line(row), flush=True)


def row_line(row: dict) -> str:
    flops = ", ".join(f"{stage} {value / 1e9:.4g}" for stage, value in row["flops_per_image"].items())
    line = f"batch {row['batch_size']:3d}: GFLOP/img {flops}"
    if "images_per_s" in row:
        mfu = f"{row['mfu']:.1%}" if row["mfu"] is not None else "n/a"
        peak = f"{row['peak_gib']:.2f} GiB" if row["peak_gib"] is not None else "n/a"
        stages = ", ".join(f"{stage} {ms:.1f}" for stage, ms in row["stage_ms_per_image"].items())
        line += (
            f"\n           {row['images_per_s']:7.2f} img/s, {row['tflops_per_s']:.2f} TFLOP/s, MFU {mfu}, "
            f"peak {peak}, "
            f"host-only {row['host_ms_per_image']:.2f} ms/img, GPU waits {row['gpu_waits']:.0%}; "
            f"stage ms/img: {stages}"
        )
    return line


def end_to_end_rows(run: Run, perception, prompts, images, args) -> None:
    from evaluator.loader import default_num_workers
    from evaluator.pipeline import score_images

    device = perception.device
    if device.type == "cpu":  # as on a GPU: the workers only decode, `observe` makes the inputs on the device
        perception.worker_preparer = lambda categories: None
    workers = args.num_workers if args.num_workers is not None else default_num_workers()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "images"
        folder.mkdir()
        encoded = {}
        for prompt, image in zip(prompts, images, strict=True):
            if id(image) not in encoded:  # each distinct frame is encoded once (zlib level 1: fast)
                path = Path(scratch) / f"{len(encoded)}.png"
                image.save(path, compress_level=1)
                encoded[id(image)] = path.read_bytes()
            (folder / f"{prompt.prompt_id}_0.png").write_bytes(encoded[id(image)])
        for batch_size in [int(value) for value in args.batch_sizes.split(",")]:
            if not run.allows(f"end to end, batch {batch_size}"):
                continue
            perception.batch_size = batch_size
            options = dict(config=perception.config, model_key="bench", batch_size=batch_size, progress=False)
            score_images(
                folder,
                prompts,
                perception,
                out_path=Path(scratch) / f"w{batch_size}.jsonl",
                limit=batch_size,
                num_workers=0,
                **options,
            )
            synchronize(device)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            with attached(perception, end_to_end=True) as clock:
                started = time.perf_counter()
                summary = score_images(
                    folder,
                    prompts,
                    perception,
                    out_path=Path(scratch) / f"b{batch_size}.jsonl",
                    num_workers=workers,
                    **options,
                )
                seconds = time.perf_counter() - started
            if summary.errors:
                raise SystemExit(f"unexpected error rows: {summary.error_reasons}")
            row = {
                "batch_size": batch_size,
                "num_workers": workers,
                "images_per_s": len(prompts) / seconds,
                "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None,
                "host_ms_per_image": host_ms_per_image(clock, len(prompts)),
                "host_ms_by_stage": {stage: 1000 * clock.seconds([stage]) / len(prompts) for stage in HOST_STAGES},
                "start_ms": 1000 * clock.seconds(["loader-start"]),
            }
            run.doc["end_to_end"].append(row)
            run.save()
            stages = ", ".join(f"{stage} {ms:.2f}" for stage, ms in row["host_ms_by_stage"].items())
            peak = f"{row['peak_gib']:.2f} GiB" if row["peak_gib"] is not None else "n/a"
            print(
                f"end to end, batch {batch_size:3d}, {workers} workers: {row['images_per_s']:7.2f} img/s, peak {peak}, "
                f"host-only {row['host_ms_per_image']:.2f} ms/img ({stages})",
                flush=True,
            )


def tf32_check(run: Run, perception, images, prompts) -> None:
    """How far TF32 matmuls (and convolutions) move SigLIP's value scores and its speed, on crops
    of the photographs (the representative boxes of attribute prompts)."""
    crops, requests = [], []
    for image, prompt in zip(images, prompts, strict=True):
        if prompt.kind == "attribute":
            for x0, y0, x1, y1, _ in seeded_boxes(image, prompt.objects, *image.size):
                crops.append(image.crop((int(x0), int(y0), int(x1), int(y1))))
                requests.append((prompt.category, prompt.objects[0]))
    crops, requests = crops[:64], requests[:64]
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    settings = {"ieee": (False, False), "default": (matmul.allow_tf32, cudnn.allow_tf32), "tf32": (True, True)}
    before = settings["default"]
    scores, speed = {}, {}
    try:
        for name, (matmuls, convolutions) in settings.items():
            matmul.allow_tf32, cudnn.allow_tf32 = matmuls, convolutions
            perception.attributes.score(crops[:2], requests[:2], perception.config)  # warm-up
            synchronize(perception.device)
            started = time.perf_counter()
            scores[name] = perception.attributes.score(crops, requests, perception.config)
            synchronize(perception.device)
            speed[name] = len(crops) / (time.perf_counter() - started)
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = before

    def largest(a: str) -> float:
        return max(abs(x[v] - y[v]) for x, y in zip(scores[a], scores["ieee"], strict=True) for v in x)

    run.doc["siglip_tf32"] = {
        "crops": len(crops),
        "default_settings": {"matmul_tf32": before[0], "cudnn_tf32": before[1]},
        "max_abs_score_change_default": largest("default"),
        "max_abs_score_change_tf32": largest("tf32"),
        "crops_per_s": speed,
        "note": "random weights; scores are 100 × cosine, the margin β is 0.5 on this scale",
    }
    run.save()
    print(f"SigLIP under TF32: {run.doc['siglip_tf32']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--models", choices=("full", "tiny"), help="default: full on CUDA, tiny on the CPU")
    parser.add_argument("--images", type=int, default=256, help="images per measurement (default 256)")
    parser.add_argument("--size", type=int, default=1024, help="image side in px (default 1024)")
    parser.add_argument("--batch-sizes", default="1,8,32,64", help="default 1,8,32,64")
    parser.add_argument("--flop-images", type=int, default=48, help="images whose FLOPs are counted (default 48)")
    parser.add_argument("--stage-images", type=int, default=64, help="images of the per-stage pass (default 64)")
    parser.add_argument("--peak-tflops", type=float, help="the device's peak for the MFU (default: by its name)")
    parser.add_argument("--num-workers", type=int, help="end to end: loader workers (default: from the CPU count)")
    parser.add_argument("--no-end-to-end", action="store_true", help="skip the score_images runs")
    parser.add_argument("--flops-only", action="store_true", help="count FLOPs only (e.g. full-size models on a CPU)")
    parser.add_argument("--masks", choices=("ellipses", "sam"), default="ellipses", help="the masks the rules get")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: 1 on the CPU, torch's on CUDA)")
    parser.add_argument("--budget-s", type=float, default=420, help="start no step after this many seconds (420)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "gpu-results.json"), help="the JSON file")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU visible: run with --device cpu for the CPU run")
    if args.threads or device.type == "cpu":
        torch.set_num_threads(args.threads or 1)
    models = args.models or ("full" if device.type == "cuda" else "tiny")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    run = Run(Path(args.out), args.budget_s)
    import transformers

    run.doc["meta"] = {
        "device": str(device),
        "device_name": name,
        "peak_tflops": peak,
        "models": models,
        "dtype": str(dtype),
        "images": args.images,
        "size": args.size,
        "masks": args.masks,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
    }
    print(f"{models} models on {name} ({dtype}), peak {peak} TFLOP/s, {args.images} images of {args.size}²", flush=True)
    perception, build_s = build(models, args.device, dtype)
    representative(perception, masks=args.masks)
    no_grad_parameters(perception)
    run.doc["meta"]["build_s"] = build_s
    prompts = corpus_prompts(args.images)
    images = frames(args.images, args.size)
    for prompt in prompts:  # the text embeddings are computed once per run, not per image: not in the counts
        if prompt.kind == "attribute":
            for obj in dict.fromkeys(prompt.objects):
                perception.attributes.request_texts(prompt.category, obj, perception.config)
    attribute = [prompt for prompt in prompts if prompt.kind == "attribute"]
    run.doc["corpus"] = corpus_mix()
    run.doc["mix"] = {
        "categories": {
            category: sum(p.category == category for p in prompts) for category in sorted({p.category for p in prompts})
        },
        "crops": sum(len(dict.fromkeys(p.objects)) for p in attribute),
        "objects_per_prompt": statistics.mean(len(dict.fromkeys(p.objects)) for p in prompts),
    }
    print(f"models built in {build_s:.1f} s; mix {run.doc['mix']}", flush=True)
    run.save()
    observe_rows(run, perception, prompts, images, args, peak)
    if not args.flops_only and not args.no_end_to_end:
        end_to_end_rows(run, perception, prompts, images, args)
    if device.type == "cuda" and not args.flops_only and run.allows("SigLIP TF32 check"):
        tf32_check(run, perception, images, prompts)
    run.save()
    print(f"wrote {run.out} after {run.elapsed():.0f} s", flush=True)


if __name__ == "__main__":
    main()
