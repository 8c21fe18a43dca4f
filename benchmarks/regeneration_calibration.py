"""Regeneration calibration: how alike two images of one seed are under the drift real runs see, and how
alike images of other seeds (or another model) are (run by hand, not a test; issue 41).

    .venv/bin/python benchmarks/regeneration_calibration.py [--pairs 32] [--steps 2]        # CPU, tiny models
    .venv/bin/python benchmarks/regeneration_calibration.py --device cuda --model sd_1_5   # gpu.sh's step

The similarity is the regeneration check's own (`leaderboard.checks.image_similarity.image_similarity`: SSIM in
grey at 64 x 64). For each of PAIRS corpus prompts, with the benchmark's seed of its first sample:

- **the same seed** under each perturbation a real run sees: a rerun; the attention kernel (diffusers'
  classic `AttnProcessor` against PyTorch's SDPA); TF32 on against off (float32 weights; CUDA only);
  bfloat16 against float16, float32 against bfloat16; a batch of 4 against one image at a time;
  another device (the CPU against the GPU, float32, `--device-pairs` prompts; CUDA only); and
  injected drift, seeded N(0, σ²) noise added to the latents after every denoising step
  (`tests.helpers.regen_helpers.DriftedGenerator`), standing in for other hardware;
- **impostors**: another seed of the same prompt, and (tiny models) another model's image of the
  same prompt and seed (other random weights).

It prints one row per comparison, then the separating t (the midpoint between the lowest same-seed
similarity, injected drift up to `DRIFT_STAND_IN` included, and the highest impostor similarity),
the error rates observed at it and at the provisional `THRESHOLD`, and the drift bound: the largest
σ whose pairs all stay at or above `THRESHOLD`. `--out FILE` writes the same as JSON.

On the CPU it runs the tests' tiny random StableDiffusionPipeline (`tests.helpers.generation_helpers`).
With `--model KEY` (a registry key) or `--model-id HUB_ID` it loads that model from this machine's
Hugging Face cache; if its weights are not here it says so and uses SD 1.5's architecture at full
size with random weights (`--full-size` asks for that directly), so the kernels' and precisions'
drift is measured through a real-sized UNet and VAE even offline.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_builder.loading import load_prompts  # noqa: E402
from generation.backends import DiffusersGenerator  # noqa: E402
from generation.registry import ModelSpec  # noqa: E402
from generation.work import image_seed  # noqa: E402
from leaderboard.checks.image_similarity import image_similarity  # noqa: E402
from leaderboard.checks.regeneration_policy import THRESHOLD  # noqa: E402
from tests.helpers.generation_helpers import tiny_sd_pipeline, tiny_tokenizer  # noqa: E402
from tests.helpers.regen_helpers import DriftedGenerator  # noqa: E402

DRIFTS = (0.1, 0.3, 0.5, 1.0, 2.0)
DRIFT_STAND_IN = 1.0  # injected drift up to this sigma counts as "what real runs see" for the separating t
Make = Callable[[list[str], list[int]], list[Any]]


def full_size_sd15(seed: int = 0):
    """SD 1.5's architecture at full size (UNet 860M, its VAE, a 12-layer 768-wide CLIP text encoder) with
    random weights, and the tests' character tokenizer: no download."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    tokenizer = tiny_tokenizer()
    unet = UNet2DConditionModel(cross_attention_dim=768, sample_size=64)  # the defaults are SD 1.x's UNet
    vae = AutoencoderKL(
        block_out_channels=[128, 256, 512, 512],
        down_block_types=["DownEncoderBlock2D"] * 4,
        up_block_types=["UpDecoderBlock2D"] * 4,
        latent_channels=4,
        layers_per_block=2,
        sample_size=512,
    )
    text = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer), hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
            num_attention_heads=12, max_position_embeddings=77, bos_token_id=0, eos_token_id=1, pad_token_id=1,
        )
    )  # fmt: skip
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
        set_alpha_to_one=False, steps_offset=1,
    )  # fmt: skip
    return StableDiffusionPipeline(
        unet=unet, vae=vae, text_encoder=text, tokenizer=tokenizer, scheduler=scheduler, safety_checker=None,
        feature_extractor=None, requires_safety_checker=False,
    )  # fmt: skip


def load_model(args) -> tuple[Any, str]:
    """(a pipeline, what it is) for the run."""
    if args.model or args.model_id:
        from generation.backends import load_generator
        from generation.registry import custom_spec, get_spec
        from negt2ibench.core.errors import MissingWeightsError

        spec = get_spec(args.model) if args.model else custom_spec(args.model_id, "calibration")
        try:
            generator = load_generator(spec, args.device)
            return generator.pipeline, f"{spec.hub_id} (its weights)"
        except MissingWeightsError as error:
            print(f"{error.one_line()}: SD 1.5's architecture with random weights instead", file=sys.stderr)
            args.full_size = True
    if args.full_size:
        return full_size_sd15(), "SD 1.5's architecture at full size, random weights"
    return tiny_sd_pipeline(0), "the tests' tiny random StableDiffusionPipeline"


def generator(pipeline, args, *, dtype: str = "float32", device: str | None = None, classic: bool = False):
    """A `DiffusersGenerator` on a copy of PIPELINE in DTYPE on DEVICE (classic attention when asked)."""
    import torch
    from diffusers.models.attention_processor import AttnProcessor

    copied = copy.deepcopy(pipeline).to(device or args.device, getattr(torch, dtype))
    copied.set_progress_bar_config(disable=True)
    if classic:
        copied.unet.set_attn_processor(AttnProcessor())
    spec = ModelSpec(
        key="calibration", hub_id="calibration", pipeline_class="", steps=args.steps, height=args.size,
        width=args.size, dtype=dtype,
    )  # fmt: skip
    return DiffusersGenerator(copied, spec)


def images(make: Make, prompts: list[str], seeds: list[int], batch: int = 1) -> list[Any]:
    made = []
    for start in range(0, len(prompts), batch):
        made += [g.image for g in make(prompts[start : start + batch], seeds[start : start + batch])]
    return made


def tf32(on: bool) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def measure(args) -> dict[str, Any]:
    pipeline, what = load_model(args)
    corpus = load_prompts(None)
    chosen = corpus[:: max(1, len(corpus) // args.pairs)][: args.pairs]
    texts = [p.prompt for p in chosen]
    seeds = [image_seed(p.prompt_id, 0) for p in chosen]
    cuda = args.device.startswith("cuda")
    base_dtype = "float16" if cuda else "float32"
    tf32(False)
    reference = images(generator(pipeline, args, dtype=base_dtype), texts, seeds)
    rows: list[dict[str, Any]] = []

    def compare(kind: str, name: str, first: list[Any], second: list[Any]) -> None:
        started = time.perf_counter()
        values = [image_similarity(a, b) for a, b in zip(first, second, strict=True)]
        seconds = (time.perf_counter() - started) / len(values)
        rows.append({"kind": kind, "name": name, "values": values, "ms_per_pair": 1000 * seconds})
        print(summary_line(rows[-1]), flush=True)

    print(f"model: {what}; device {args.device}; {args.pairs} prompts; {args.steps} steps; {args.size} px", flush=True)
    print(TABLE_HEAD, flush=True)
    compare(
        "same seed",
        f"rerun ({base_dtype})",
        reference,
        images(generator(pipeline, args, dtype=base_dtype), texts, seeds),
    )
    classic = generator(pipeline, args, dtype=base_dtype, classic=True)
    compare("same seed", "attention: classic AttnProcessor vs SDPA", reference, images(classic, texts, seeds))
    float32 = images(generator(pipeline, args), texts, seeds)
    if cuda:
        tf32(True)
        compare("same seed", "TF32 on vs off (float32)", float32, images(generator(pipeline, args), texts, seeds))
        tf32(False)
    bfloat16 = images(generator(pipeline, args, dtype="bfloat16"), texts, seeds)
    float16 = reference if cuda else images(generator(pipeline, args, dtype="float16"), texts, seeds)
    compare("same seed", "bfloat16 vs float16", float16, bfloat16)
    compare("same seed", "float32 vs bfloat16", float32, bfloat16)
    batched = images(generator(pipeline, args, dtype=base_dtype), texts, seeds, batch=4)
    compare("same seed", "batch of 4 vs 1", reference, batched)
    if cuda:  # a full-size model on the CPU is slow: the first few prompts only
        few = args.device_pairs
        on_cpu = images(generator(pipeline, args, device="cpu"), texts[:few], seeds[:few])
        compare("same seed", "another device: CPU vs GPU (float32)", float32[:few], on_cpu)
    for sigma in DRIFTS:
        drifted = DriftedGenerator(generator(pipeline, args, dtype=base_dtype), sigma)
        compare("drift", f"injected drift σ={sigma:g}", reference, images(drifted, texts, seeds))
    others = [image_seed(p.prompt_id, 0) ^ 0x5A5A5A5 for p in chosen]
    compare(
        "impostor",
        "another seed, same prompt",
        reference,
        images(generator(pipeline, args, dtype=base_dtype), texts, others),
    )
    if not (args.model or args.model_id or args.full_size):
        other = generator(tiny_sd_pipeline(1), args, dtype=base_dtype)
        compare("impostor", "another model (other weights), same seed", reference, images(other, texts, seeds))
    return {"model": what, "device": args.device, "pairs": args.pairs, "steps": args.steps, "rows": rows}


TABLE_HEAD = (
    "| pairs | comparison | n | min | 1st pct | median | max | ms/pair |\n|---|---|---:|---:|---:|---:|---:|---:|"
)


def summary_line(row: dict[str, Any]) -> str:
    values = np.asarray(row["values"])
    stats = (values.min(), np.percentile(values, 1), np.median(values), values.max())
    shown = " | ".join(f"{value:.3f}" for value in stats)
    return f"| {row['kind']} | {row['name']} | {len(values)} | {shown} | {row['ms_per_pair']:.1f} |"


def honest_values(rows: list[dict[str, Any]]) -> np.ndarray:
    kept = [
        r["values"] for r in rows if r["kind"] == "same seed" or (r["kind"] == "drift" and sigma(r) <= DRIFT_STAND_IN)
    ]
    return np.concatenate(kept)


def sigma(row: dict[str, Any]) -> float:
    return float(row["name"].split("σ=")[1])


def verdicts(result: dict[str, Any]) -> list[str]:
    rows = result["rows"]
    honest = honest_values(rows)
    impostors = np.concatenate([r["values"] for r in rows if r["kind"] == "impostor"])
    separating = (honest.min() + impostors.max()) / 2
    lines = [
        f"separating t: {separating:.3f} (midpoint of the lowest same-seed similarity, {honest.min():.3f}, drift up to "
        f"σ={DRIFT_STAND_IN:g} included, and the highest impostor similarity, {impostors.max():.3f})"
    ]
    for name, t in (("separating t", separating), ("provisional t", THRESHOLD)):
        below = int((honest < t).sum())
        above = int((impostors >= t).sum())
        lines.append(
            f"at the {name} {t:.3f}: same seed below t {below}/{honest.size} ({100 * below / honest.size:.1f}%), "
            f"impostors at or above t {above}/{impostors.size} ({100 * above / impostors.size:.1f}%)"
        )
    bound = max((sigma(r) for r in rows if r["kind"] == "drift" and min(r["values"]) >= THRESHOLD), default=0.0)
    past = [r for r in rows if r["kind"] == "drift" and sigma(r) > bound]
    after = (
        f"; at σ={sigma(past[0]):g} {sum(v < THRESHOLD for v in past[0]['values'])}/{len(past[0]['values'])} fall below"
        if past
        else ""
    )
    lines.append(f"drift bound at t={THRESHOLD:g}: every same-seed pair stays at or above t up to σ={bound:g}{after}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=32, help="prompts, one pair each per comparison (default 32)")
    parser.add_argument("--steps", type=int, default=2, help="denoising steps (default 2; a real model: its own)")
    parser.add_argument("--size", type=int, default=32, help="image side in pixels (default 32: the tiny models')")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--model", default=None, help="a registry key to load from this machine's cache")
    parser.add_argument("--model-id", default=None, help="a diffusers pipeline's hub id to load from the cache")
    parser.add_argument("--full-size", action="store_true", help="SD 1.5's architecture with random weights")
    parser.add_argument("--device-pairs", type=int, default=2, help="with cuda: prompts also made on the CPU (2)")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows and verdicts as JSON")
    args = parser.parse_args()
    import torch

    torch.manual_seed(0)
    result = measure(args)
    lines = verdicts(result)
    print("\n".join(lines))
    if args.out is not None:
        args.out.write_text(json.dumps({**result, "verdicts": lines}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
