"""VLM judges and the detector-based scorer side by side on the same images: the paper's Table 8 (cost).

Run by hand:
  .venv/bin/python benchmarks/judge_vs_scorer.py [--images 8] [--size 512] [--mode pos]
      tiny random-weight judges (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, InternVL3, InternVL3.5) and the
      tiny scorer of the tests, on CPU: measures the harness, not the real models' speed.
  python benchmarks/judge_vs_scorer.py --real [--judges qwen3_vl_8b,internvl3_5_8b] [--batch-size 1]
      the registry's judges and the real scorer (weights already in the Hugging Face cache:
      `hf download HUB_ID`, `negt2ibench download-models`), on the GPU (--device auto).

One folder of PNGs is made from corpus prompts spread over the six categories and eight
settings; each evaluator runs in its own child process (so its peak memory is its own): one
warm-up image, then the whole folder. Reported per evaluator: model load (s, apart, including
the warm-up's lazy initialisation for the scorer), s/question, s/img, questions per image, and
peak memory (GPU: torch.cuda.max_memory_allocated; CPU: the process's peak RSS). The paper's
setting is one process, batch size 1 (--batch-size 1). The scorer asks no questions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402 - after the path set-up above
from PIL import Image  # noqa: E402

TINY_JUDGES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "internvl3", "internvl3_5")
REAL_JUDGES = ("qwen3_vl_8b", "internvl3_8b", "internvl3_5_8b", "qwen2_5_vl_7b", "qwen3_vl_32b", "internvl3_5_38b")


def spread_prompts(count: int):
    """`count` corpus prompts, cycling through the 48 (category, setting) cells."""
    from dataset_builder.loading import load_prompts

    cells: dict[tuple[str, str], list] = {}
    for prompt in load_prompts():
        cells.setdefault((prompt.category, prompt.setting), []).append(prompt)
    ordered = [cell[i] for i in range(100) for cell in cells.values()]
    return ordered[:count]


def write_images(folder: Path, count: int, size: int) -> list:
    prompts = spread_prompts(count)
    rng = np.random.default_rng(0)
    for prompt in prompts:
        blocks = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)  # smooth blocks: PNGs of a sane size
        Image.fromarray(blocks, "RGB").resize((size, size), Image.NEAREST).save(folder / f"{prompt.prompt_id}_0.png")
    return prompts


def memory(device) -> tuple[float, str]:
    import resource

    import torch

    if getattr(device, "type", "cpu") == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30, "GPU"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "RSS"


def run_judge(name: str, folder: Path, prompts, args) -> dict:
    from judges.registry import JudgeSpec, adapter_class, get_spec
    from judges.runner import judge_images
    from judges.sources import judge_items

    items = judge_items(folder, model_key="bench")
    if args.real:
        spec = get_spec(name)
        adapter = adapter_class(spec)(spec, device=args.device, batch_size=args.batch_size)
        load_seconds = None  # measured by the warm-up's judge_images (loading happens there)
    else:
        from judges.transformers_judge import TransformersJudge
        from tests.helpers.judge_helpers import TINY_BUILDERS

        started = time.perf_counter()
        model, processor = TINY_BUILDERS[name]()
        spec = JudgeSpec(f"tiny_{name}", f"tiny/{name}", "auto", "tiny")
        adapter = TransformersJudge.from_models(model, processor, spec=spec, batch_size=args.batch_size)
        load_seconds = time.perf_counter() - started
    warm = judge_images(
        items[:1], prompts, adapter, out_path=folder / f"warm_{name}.jsonl", mode=args.mode, progress=False
    )
    summary = judge_images(items, prompts, adapter, out_path=folder / f"{name}.jsonl", mode=args.mode, progress=False)
    gib, kind = memory(adapter.device)
    return {
        "evaluator": f"{spec.display_name or name}, {args.mode}",
        "params": spec.params,
        "load_s": load_seconds if load_seconds is not None else warm.load_seconds,
        "s_per_question": summary.seconds_per_question,
        "s_per_image": summary.seconds_per_image,
        "questions_per_image": summary.questions_per_image(args.mode if args.mode != "all" else "pos"),
        "peak_gib": gib,
        "memory": kind,
        "images": summary.images,
    }


def run_scorer(folder: Path, prompts, args) -> dict:
    from evaluator.config import PRESETS
    from evaluator.pipeline import score_images

    config = PRESETS["current"]
    started = time.perf_counter()
    if args.real:
        from evaluator.perception import ModelPerception

        perception = ModelPerception(config, device=args.device, batch_size=args.batch_size)
        perception.load_all(prompts)
        device = perception.device
    else:
        import torch

        from tests.helpers.perception_helpers import tiny_perception

        perception = tiny_perception(config, batch_size=args.batch_size)
        device = torch.device("cpu")
    common = {"config": config, "model_key": "bench", "batch_size": args.batch_size, "progress": False}
    score_images(folder, prompts, perception, out_path=folder / "warm_scorer.jsonl", limit=1, **common)
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    summary = score_images(folder, prompts, perception, out_path=folder / "scorer.jsonl", **common)
    seconds = time.perf_counter() - started
    gib, kind = memory(device)
    return {
        "evaluator": "NegT2IBench scorer" + ("" if args.real else " (tiny)"),
        "params": "0.8B" if args.real else "tiny",
        "load_s": load_seconds,
        "s_per_question": None,
        "s_per_image": seconds / max(summary.scored + summary.errors, 1),
        "questions_per_image": None,
        "peak_gib": gib,
        "memory": kind,
        "images": summary.scored,
    }


def child(args) -> None:
    folder = Path(args.folder)
    from dataset_builder.loading import prompt_index

    index = prompt_index()
    prompts = [index[path.name.rsplit("_", 1)[0]] for path in sorted(folder.glob("*.png"))]
    row = run_scorer(folder, prompts, args) if args.child == "scorer" else run_judge(args.child, folder, prompts, args)
    print("RESULT " + json.dumps(row))


def table(rows: list[dict]) -> str:
    def fmt(value, digits=3):
        return "–" if value is None else f"{value:.{digits}f}"

    lines = [
        "| Evaluator | Params | s/Q | s/img | Q/img | Load (s) | Peak memory (GiB) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['evaluator']} | {row['params']} | {fmt(row['s_per_question'])} | {fmt(row['s_per_image'])} | "
            f"{fmt(row['questions_per_image'], 2)} | {fmt(row['load_s'], 1)} | {row['peak_gib']:.2f} {row['memory']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=8, help="images (one per corpus prompt; default 8)")
    parser.add_argument("--size", type=int, default=512, help="image side in px (default 512)")
    parser.add_argument(
        "--mode", choices=("whole", "pos", "neg", "all"), default="pos", help="judge mode (default pos)"
    )
    parser.add_argument("--batch-size", type=int, default=1, help="pairs (judges) / images (scorer) per batch")
    parser.add_argument("--real", action="store_true", help="real weights from the HF cache (a GPU machine)")
    parser.add_argument("--judges", help="comma-separated judges (default: the five tiny families, or six real keys)")
    parser.add_argument("--device", default="auto", help="--real: where the models run (default auto)")
    parser.add_argument("--no-scorer", action="store_true", help="judges only")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    judges = args.judges.split(",") if args.judges else list(REAL_JUDGES if args.real else TINY_JUDGES)
    names = judges + ([] if args.no_scorer else ["scorer"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="judge-vs-scorer-") as folder:
        write_images(Path(folder), args.images, args.size)
        print(f"{args.images} images of {args.size}², mode {args.mode}, batch {args.batch_size}, {os.cpu_count()} CPUs")
        for name in names:
            command = [sys.executable, __file__, "--child", name, "--folder", folder, "--mode", args.mode]
            command += ["--batch-size", str(args.batch_size), "--device", args.device] + (
                ["--real"] if args.real else []
            )
            output = subprocess.run(command, capture_output=True, text=True)
            line = next((text for text in output.stdout.splitlines() if text.startswith("RESULT ")), None)
            if line is None:
                print(f"{name}: failed\n{output.stderr[-2000:]}", flush=True)
                continue
            rows.append(json.loads(line[len("RESULT ") :]))
            print(f"{name}: done", flush=True)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
