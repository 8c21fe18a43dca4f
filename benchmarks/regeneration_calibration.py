"""Regeneration calibration: how far an image of one seed moves under the drift real runs see, against
what a cheat changes (run by hand, not a test; issues 41 and 51).

    .venv/bin/python benchmarks/regeneration_calibration.py [--pairs 32] [--steps 2]        # CPU, tiny models
    .venv/bin/python benchmarks/regeneration_calibration.py --device cuda --model sd_1_5   # gpu.sh's step

The measure is the regeneration check's own (`leaderboard.checks.regeneration_policy.own_image`: the worst
2% region's mean CIEDE2000 at 256 px); beside it, grey SSIM at 64 px, the measure before issue 51, on
the same pairs. Two sources of pairs:

**Real photographs** (scikit-image's data, no download): the honest side is a stand-in for hardware
drift (Gaussian noise of 1 and 2 /255, a Gaussian blur of 0.5 px, a lossless WebP round trip); the
impostor side is what a cheater does (`tests.helpers.image_cheats`): recolour the most colourful region
at equal lightness (any area: 0.5% to 10%), paste a region of another photograph and erase the busiest
region (flat or blur fill) at 1%, 2%, 5% and 10% of the area, another photograph nudged toward the own
one's 64 x 64 brightness layout, and the other view of a stereo pair.

**A text-to-image model** (the tests' tiny random StableDiffusionPipeline on the CPU; with `--model` a
real one), PAIRS corpus prompts with the benchmark's seed of their first sample: the same seed under
each perturbation a real run sees (a rerun; the attention kernel; TF32 on against off, CUDA only;
bfloat16 against float16, float32 against bfloat16; a batch of 4 against 1; the CPU against the GPU,
CUDA only) and injected drift (seeded N(0, sigma^2) noise on the latents after every denoising step,
`tests.helpers.regen_helpers.DriftedGenerator`, standing in for other hardware); impostors: another
seed, another model (tiny models), best-of-n over guidance and a negative prompt at the same seed, and
the cheats above applied to the model's own images (recolour, paste, erase at 2%, 5%, 10%; another
seed's image nudged toward the own layout).

It prints one row per comparison, then: the separating t (the midpoint between the largest honest
difference, injected drift up to `DRIFT_STAND_IN` included, and the smallest difference of an edit of
at least 2% of the area or another picture; best-of-n at the same seed is reported apart: how many are
beyond t), the error rates at it and at the provisional `THRESHOLD`, the smallest edit detected at
`THRESHOLD` (per cheat, the smallest area at which every edited image is beyond t), and the drift bound:
the largest sigma whose pairs miss t at most `HONEST_MISS_RATE` of the time, with the entry's drift
there (the median of the images' median-region differences: `DRIFT_BOUND`'s figure). `--out FILE`
writes the same as JSON.

With `--model KEY` (a registry key) or `--model-id HUB_ID` it loads that model from this machine's
Hugging Face cache; if its weights are not here it says so and uses SD 1.5's architecture at full
size with random weights (`--full-size` asks for that directly).
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
from leaderboard.checks.regeneration_policy import HONEST_MISS_RATE, THRESHOLD, own_image  # noqa: E402
from tests.helpers import image_cheats as cheats  # noqa: E402
from tests.helpers.generation_helpers import tiny_sd_pipeline, tiny_tokenizer  # noqa: E402
from tests.helpers.regen_helpers import DriftedGenerator  # noqa: E402

DRIFTS = (0.1, 0.3, 0.5, 1.0, 2.0)
DRIFT_STAND_IN = 0.1  # injected drift up to this sigma counts as "what real runs see" for the separating t
AREAS = (0.01, 0.02, 0.05, 0.1)  # the paste's and erase's shares of the area
RECOLOUR_AREAS = (0.005, 0.01, 0.02, 0.05, 0.1)
SMALLEST_COUNTED = 0.02  # edits of at least this share count for the separating t (issue 51's agreed size)
Make = Callable[[list[str], list[int]], list[Any]]
Pairs = list[tuple[Any, Any]]


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


def generator(pipeline, args, *, dtype: str = "float32", device: str | None = None, classic: bool = False,
              guidance: float | None = None):  # fmt: skip
    """A `DiffusersGenerator` on a copy of PIPELINE in DTYPE on DEVICE (classic attention, a guidance when asked)."""
    import torch
    from diffusers.models.attention_processor import AttnProcessor

    copied = copy.deepcopy(pipeline).to(device or args.device, getattr(torch, dtype))
    copied.set_progress_bar_config(disable=True)
    if classic:
        copied.unet.set_attn_processor(AttnProcessor())
    spec = ModelSpec(
        key="calibration", hub_id="calibration", pipeline_class="", steps=args.steps, height=args.size,
        width=args.size, dtype=dtype, guidance=guidance,
    )  # fmt: skip
    return DiffusersGenerator(copied, spec)


def with_negative(made: DiffusersGenerator, negative: str) -> Make:
    """MADE's images with a negative prompt (a cheat's other lever at the same seed)."""

    def make(prompts: list[str], seeds: list[int]) -> list[Any]:
        import torch

        from generation.backends import GeneratedImage

        generators = [torch.Generator("cpu").manual_seed(seed) for seed in seeds]
        output = made.pipeline(
            prompt=list(prompts), negative_prompt=[negative] * len(prompts), generator=generators,
            output_type="pil", **made.call_kwargs(),
        )  # fmt: skip
        return [GeneratedImage(image=image) for image in output.images]

    return make


def images(make: Make, prompts: list[str], seeds: list[int], batch: int = 1) -> list[Any]:
    made = []
    for start in range(0, len(prompts), batch):
        made += [g.image for g in make(prompts[start : start + batch], seeds[start : start + batch])]
    return made


def tf32(on: bool) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def grey_ssim(first: Any, second: Any) -> float:
    """The measure before issue 51, for comparison: SSIM of the two in grey at 64 x 64."""
    from PIL import Image
    from skimage.metrics import structural_similarity

    def grey(image: Any) -> np.ndarray:
        return np.asarray(image.convert("L").resize((64, 64), Image.Resampling.BOX), dtype=np.float64) / 255.0

    return float(
        structural_similarity(
            grey(first), grey(second), data_range=1.0, gaussian_weights=True, sigma=1.5, use_sample_covariance=False
        )
    )


def compare(rows: list[dict[str, Any]], kind: str, name: str, pairs: Pairs, area: float | None = None) -> None:
    """One row: the measure of each (submitted, regenerated) pair, and grey SSIM beside it."""
    started = time.perf_counter()
    measured = [own_image(submitted, regenerated) for submitted, regenerated in pairs]
    seconds = (time.perf_counter() - started) / len(pairs)
    rows.append(
        {
            "kind": kind, "name": name, "area": area, "values": [m.difference for m in measured],
            "medians": [m.median for m in measured], "ssim": [grey_ssim(a, b) for a, b in pairs],
            "ms_per_pair": 1000 * seconds,
        }
    )  # fmt: skip
    print(summary_line(rows[-1]), flush=True)


def edit_rows(rows: list[dict[str, Any]], where: str, own: list[Any], others: list[Any], areas=AREAS) -> None:
    """The cheats on OWN images (OTHERS: another picture each, pasted from and nudged toward OWN)."""
    for share in RECOLOUR_AREAS if where == "photo" else areas:
        compare(
            rows,
            "edit",
            f"{where}: recolour at equal lightness {share:.1%}",
            [(cheats.recolour(o, share), o) for o in own],
            share,
        )  # noqa: E501
    for share in areas:
        pasted = [(cheats.paste(o, x, share, seed=i), o) for i, (o, x) in enumerate(zip(own, others, strict=True))]
        compare(rows, "edit", f"{where}: paste another picture's region {share:.0%}", pasted, share)
        compare(
            rows, "edit", f"{where}: erase, flat fill {share:.0%}", [(cheats.erase(o, share), o) for o in own], share
        )
        blurred = [(cheats.erase(o, share, "blur"), o) for o in own]
        compare(rows, "edit", f"{where}: erase, blur fill {share:.0%}", blurred, share)
    nudged = [(cheats.nudge(x, o), o) for o, x in zip(own, others, strict=True)]
    compare(rows, "impostor", f"{where}: another picture nudged to the own 64 px layout", nudged)


def photo_rows(rows: list[dict[str, Any]]) -> None:
    photos = cheats.photographs()
    right = photos.pop("motorcycle_right")
    own = list(photos.values())
    others = own[1:] + own[:1]
    for name, drifted in (
        ("noise 1/255", [cheats.noisy(o, 1.0) for o in own]),
        ("noise 2/255", [cheats.noisy(o, 2.0) for o in own]),
        ("blur 0.5 px", [cheats.blurred(o, 0.5) for o in own]),
        ("lossless WebP round trip", [cheats.reencoded(o) for o in own]),
    ):
        compare(rows, "honest", f"photo: {name}", list(zip(drifted, own, strict=True)))
    edit_rows(rows, "photo", own, others)
    compare(rows, "impostor", "photo: the other view of a stereo pair", [(right, photos["motorcycle_left"])])


def model_rows(rows: list[dict[str, Any]], args, pipeline) -> None:
    corpus = load_prompts(None)
    chosen = corpus[:: max(1, len(corpus) // args.pairs)][: args.pairs]
    texts, seeds = [p.prompt for p in chosen], [image_seed(p.prompt_id, 0) for p in chosen]
    cuda = args.device.startswith("cuda")
    base = "float16" if cuda else "float32"
    tf32(False)
    reference = images(generator(pipeline, args, dtype=base), texts, seeds)

    def same(name: str, first: list[Any], second: list[Any], kind: str = "honest") -> None:
        compare(rows, kind, f"model: {name}", list(zip(second, first, strict=True)))

    same(f"rerun ({base})", reference, images(generator(pipeline, args, dtype=base), texts, seeds))
    classic = generator(pipeline, args, dtype=base, classic=True)
    same("attention: classic AttnProcessor vs SDPA", reference, images(classic, texts, seeds))
    float32 = images(generator(pipeline, args), texts, seeds)
    if cuda:
        tf32(True)
        same("TF32 on vs off (float32)", float32, images(generator(pipeline, args), texts, seeds))
        tf32(False)
    bfloat16 = images(generator(pipeline, args, dtype="bfloat16"), texts, seeds)
    same(
        "bfloat16 vs float16",
        reference if cuda else images(generator(pipeline, args, dtype="float16"), texts, seeds),
        bfloat16,
    )  # noqa: E501
    same("float32 vs bfloat16", float32, bfloat16)
    same("batch of 4 vs 1", reference, images(generator(pipeline, args, dtype=base), texts, seeds, batch=4))
    if cuda:  # a full-size model on the CPU is slow: the first few prompts only
        few = args.device_pairs
        same(
            "another device: CPU vs GPU (float32)",
            float32[:few],
            images(generator(pipeline, args, device="cpu"), texts[:few], seeds[:few]),
        )  # noqa: E501
    for sigma in DRIFTS:
        drifted = DriftedGenerator(generator(pipeline, args, dtype=base), sigma)
        same(f"injected drift σ={sigma:g}", reference, images(drifted, texts, seeds), kind="drift")
    other_seeds = [seed ^ 0x5A5A5A5 for seed in seeds]
    another = images(generator(pipeline, args, dtype=base), texts, other_seeds)
    same("another seed, same prompt", reference, another, kind="impostor")
    if not (args.model or args.model_id or args.full_size):
        other = generator(tiny_sd_pipeline(1), args, dtype=base)
        same("another model (other weights), same seed", reference, images(other, texts, seeds), kind="impostor")
    for guidance in (3.0, 5.0, 10.0):
        made = images(generator(pipeline, args, dtype=base, guidance=guidance), texts, seeds)
        same(f"best-of-n: guidance {guidance:g} (default 7.5), same seed", reference, made, kind="impostor")
    negative = with_negative(generator(pipeline, args, dtype=base), "blurry, low quality, extra objects")
    same("best-of-n: a negative prompt, same seed", reference, images(negative, texts, seeds), kind="impostor")
    edit_rows(rows, "model", reference, another, areas=AREAS[1:])


TABLE_HEAD = (
    "| pairs | comparison | n | min | median | max | grey SSIM 64 px: min | median | max | ms/pair |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def summary_line(row: dict[str, Any]) -> str:
    values, ssim = np.asarray(row["values"]), np.asarray(row["ssim"])
    shown = " | ".join(f"{v:.2f}" for v in (values.min(), np.median(values), values.max()))
    before = " | ".join(f"{v:.3f}" for v in (ssim.min(), np.median(ssim), ssim.max()))
    return f"| {row['kind']} | {row['name']} | {len(values)} | {shown} | {before} | {row['ms_per_pair']:.1f} |"


def sigma(row: dict[str, Any]) -> float:
    return float(row["name"].split("σ=")[1])


def best_of_n(row: dict[str, Any]) -> bool:
    return "best-of-n" in row["name"]


def sides(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(honest values: drift up to DRIFT_STAND_IN included; impostor values: other pictures and edits of at
    least SMALLEST_COUNTED; best-of-n at the same seed is reported apart, `verdicts`)."""
    honest = [
        r["values"] for r in rows if r["kind"] == "honest" or (r["kind"] == "drift" and sigma(r) <= DRIFT_STAND_IN)
    ]
    impostors = [
        r["values"]
        for r in rows
        if (r["kind"] == "impostor" and not best_of_n(r)) or (r["kind"] == "edit" and r["area"] >= SMALLEST_COUNTED)
    ]
    return np.concatenate(honest), np.concatenate(impostors)


def smallest_edits(rows: list[dict[str, Any]], t: float) -> list[str]:
    """Per cheat, the smallest area at which every edited image is beyond t."""
    found: dict[str, list[tuple[float, bool]]] = {}
    for row in rows:
        if row["kind"] == "edit":
            family = row["name"].rsplit(" ", 1)[0]
            found.setdefault(family, []).append((row["area"], min(row["values"]) > t))
    lines = []
    for family, areas in found.items():
        caught = [area for area, every in sorted(areas) if every]
        lines.append(f"{family}: {'from ' + format(caught[0], '.1%') if caught else 'not every image at any area'}")
    return lines


def verdicts(result: dict[str, Any]) -> list[str]:
    rows = result["rows"]
    honest, impostors = sides(rows)
    separating = (honest.max() + impostors.min()) / 2
    lines = [
        f"separating t: {separating:.2f} (midpoint of the largest honest difference, {honest.max():.2f}, drift up to "
        f"σ={DRIFT_STAND_IN:g} included, and the smallest impostor's, edits of {SMALLEST_COUNTED:.0%} or more, "
        f"{impostors.min():.2f})"
    ]
    for name, t in (("separating t", separating), ("provisional t", THRESHOLD)):
        above, within = int((honest > t).sum()), int((impostors <= t).sum())
        lines.append(
            f"at the {name} {t:.2f}: honest beyond t {above}/{honest.size} ({100 * above / honest.size:.1f}%), "
            f"impostors within t {within}/{impostors.size} ({100 * within / impostors.size:.1f}%)"
        )
    lines += [f"smallest edit detected at t={THRESHOLD:g}: {line}" for line in smallest_edits(rows, THRESHOLD)]
    for row in (r for r in rows if best_of_n(r)):
        beyond = int((np.asarray(row["values"]) > THRESHOLD).sum())
        lines.append(
            f"{row['name']}: {beyond}/{len(row['values'])} beyond t={THRESHOLD:g} (the verdict test is for the rest)"
        )
    drift = [r for r in rows if r["kind"] == "drift"]
    kept = [r for r in drift if np.mean(np.asarray(r["values"]) > THRESHOLD) <= HONEST_MISS_RATE]
    if kept:
        bound = max(kept, key=sigma)
        lines.append(
            f"drift bound at t={THRESHOLD:g}: at most {HONEST_MISS_RATE:.0%} of pairs beyond t up to "
            f"σ={sigma(bound):g} (largest worst-region difference {max(bound['values']):.2f}); there the entry's "
            f"drift, the median of the images' median-region differences, is {np.median(bound['medians']):.2f}"
        )
    honest_medians = np.concatenate([r["medians"] for r in rows if r["kind"] == "honest"])
    lines.append(f"median-region difference of the honest pairs: at most {honest_medians.max():.2f}")
    ssim_t = 0.5
    fooled = sum(int((np.asarray(r["ssim"]) >= ssim_t).sum()) for r in rows if r["kind"] in ("edit", "impostor"))
    total = sum(len(r["ssim"]) for r in rows if r["kind"] in ("edit", "impostor"))
    lines.append(f"grey SSIM 64 px, before: {fooled}/{total} edits and impostors at or above its t = {ssim_t:g}")
    return lines


def measure(args) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    print(TABLE_HEAD, flush=True)
    if not args.no_photos:
        photo_rows(rows)
    pipeline, what = load_model(args)
    print(f"model: {what}; device {args.device}; {args.pairs} prompts; {args.steps} steps; {args.size} px", flush=True)
    model_rows(rows, args, pipeline)
    return {"model": what, "device": args.device, "pairs": args.pairs, "steps": args.steps, "rows": rows}


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
    parser.add_argument("--no-photos", action="store_true", help="leave out the real photographs")
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
