"""The text-to-image models of the benchmark sweep (paper Table 18), by split key.

Each entry names the hub id, the class that loads it (an import path), and the settings the
paper used. Resolutions are the pipeline defaults the paper reports (1024², SD 1.5: 512²,
Janus-Pro: its fixed 384²). Guidance is left to the pipeline default unless the model card
requires a value (Z-Image-Turbo: 0; the distilled FLUX.2-klein ignores guidance above 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from negt2ibench.core.names import check_split_name
from negt2ibench.core.registry import Registry

Backend = Literal["diffusers", "janus", "unsupported", "callable"]
# Table 3 groups the models by architecture, in this order; "" (a model outside the registry) is "Other".
Family = Literal["unet", "transformer", "autoregressive", ""]
FAMILY_TITLES: dict[str, str] = {
    "unet": "U-Net diffusion",
    "transformer": "Diffusion / flow transformers",
    "autoregressive": "Autoregressive",
    "": "Other",
}


@dataclass(frozen=True)
class ModelSpec:
    """How to load one model and the settings every image of its split is made with."""

    key: str
    hub_id: str
    # The class path, e.g. "diffusers.StableDiffusionPipeline" (`negt2ibench.core.registry.import_target`
    # reads it); recorded in every image's params, so resuming with another class is refused.
    pipeline_class: str
    backend: Backend = "diffusers"
    steps: int | None = None  # None: the pipeline default (or not applicable)
    height: int | None = None  # None: the pipeline default
    width: int | None = None
    guidance: float | None = None  # None: the pipeline default
    guidance_argument: str = "guidance_scale"  # the call argument that carries `guidance`
    dtype: str = "bfloat16"
    quantization: str | None = None  # "bnb_4bit": bitsandbytes NF4 for the listed components
    quantized_components: tuple[str, ...] = ()
    # Components loaded from another repository and swapped in: name -> (class path, hub id, subfolder).
    component_overrides: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)
    display_name: str = ""
    family: Family = ""  # Table 3's group (not a generation setting: not in `settings()`)
    note: str = ""
    # Settings of a model outside the registry (`generate_with(settings=...)`), recorded and checked on resume.
    extra_settings: dict[str, Any] = field(default_factory=dict)
    revision: str | None = None  # the model repo's branch, tag or commit (None: its default branch)
    # GPU-seconds per image on the verification jobs' default flavour (one L4), estimated (`image_seconds`).
    seconds_per_image: float | None = None
    # Parameters of the whole pipeline in billions (denoiser, text encoders, VAE), from the model cards:
    # what its weights take in GPU memory (`weight_gigabytes`). Estimated; None: unknown.
    parameters_b: float | None = None
    cost_measured: bool = False  # `seconds_per_image` was measured (benchmarks/gpu.sh), not estimated

    def settings(self) -> dict[str, Any]:
        """The settings recorded in every image's `params` (JSON-ready)."""
        recorded = {
            "steps": self.steps,
            "height": self.height,
            "width": self.width,
            "guidance": self.guidance,
            "guidance_argument": self.guidance_argument,
            "dtype": self.dtype,
            "quantization": self.quantization,
            "pipeline_class": self.pipeline_class,
            "component_overrides": {name: list(value) for name, value in self.component_overrides.items()},
        }
        if self.extra_settings:
            recorded["settings"] = dict(self.extra_settings)
        if self.revision is not None:
            recorded["revision"] = self.revision
        return recorded

    @property
    def resolution(self) -> str:
        if self.height is None or self.width is None:
            return "default"
        return f"{self.width}x{self.height}"


REGISTRY: Registry[ModelSpec] = Registry(
    "model key",
    {
        spec.key: spec
        for spec in (
            ModelSpec(
                key="sd_1_5",
                hub_id="stable-diffusion-v1-5/stable-diffusion-v1-5",
                pipeline_class="diffusers.StableDiffusionPipeline",
                steps=50,
                height=512,
                width=512,
                guidance=7.5,
                dtype="float16",
                display_name="SD 1.5",
                family="unet",
                seconds_per_image=1.7,
                parameters_b=1.07,  # UNet 0.86 + CLIP ViT-L 0.12 + VAE 0.08
            ),
            ModelSpec(
                key="sd_1_5_negationclip",
                hub_id="stable-diffusion-v1-5/stable-diffusion-v1-5",
                pipeline_class="diffusers.StableDiffusionPipeline",
                steps=50,
                height=512,
                width=512,
                guidance=7.5,
                dtype="float16",
                # jerryray/negationclip holds OpenAI-`clip` state dicts: the ViT-L/14 one is converted once
                # to a transformers CLIPTextModel (generation/negationclip.py) and replaces SD's text encoder.
                component_overrides={
                    "text_encoder": ("generation.negationclip.NegationCLIPTextEncoder", "jerryray/negationclip", None)
                },
                display_name="SD 1.5 + NegationCLIP",
                family="unet",
                seconds_per_image=1.7,
                parameters_b=1.07,  # as SD 1.5
                note="text encoder: NegationCLIP ViT-L/14 (OpenAI checkpoint converted to CLIPTextModel)",
            ),
            ModelSpec(
                key="sd_3_5_large",
                hub_id="stabilityai/stable-diffusion-3.5-large",
                pipeline_class="diffusers.StableDiffusion3Pipeline",
                steps=28,
                height=1024,
                width=1024,
                display_name="SD 3.5 Large",
                family="transformer",
                seconds_per_image=83.0,
                parameters_b=13.8,  # MMDiT 8.1 + T5-XXL 4.8 + CLIP-L and CLIP-G 0.8 + VAE
            ),
            ModelSpec(
                key="flux_2_dev",
                hub_id="black-forest-labs/FLUX.2-dev",
                pipeline_class="diffusers.Flux2Pipeline",
                steps=28,
                height=1024,
                width=1024,
                quantization="bnb_4bit",
                quantized_components=("transformer", "text_encoder"),
                display_name="FLUX.2-dev (4-bit)",
                family="transformer",
                seconds_per_image=171.0,
                parameters_b=56.0,  # transformer 32 + Mistral Small 3.1 text encoder 24 (4-bit)
                note="needs `pip install bitsandbytes` (CUDA)",
            ),
            ModelSpec(
                key="flux_2_klein_9b",
                hub_id="black-forest-labs/FLUX.2-klein-9B",
                pipeline_class="diffusers.Flux2KleinPipeline",
                steps=4,
                height=1024,
                width=1024,
                guidance=1.0,
                display_name="FLUX.2-klein-9B",
                family="transformer",
                seconds_per_image=6.9,
                parameters_b=17.0,  # transformer 9 + Qwen3-8B text encoder
                note="step-distilled; guidance above 1 is ignored",
            ),
            ModelSpec(
                key="z_image_turbo",
                hub_id="Tongyi-MAI/Z-Image-Turbo",
                pipeline_class="diffusers.ZImagePipeline",
                steps=9,
                height=1024,
                width=1024,
                guidance=0.0,
                display_name="Z-Image-Turbo",
                family="transformer",
                seconds_per_image=9.6,
                parameters_b=10.0,  # transformer 6 + Qwen3-4B text encoder
            ),
            ModelSpec(
                key="hunyuanimage_2_1",
                hub_id="hunyuanvideo-community/HunyuanImage-2.1-Distilled-Diffusers",
                pipeline_class="diffusers.HunyuanImagePipeline",
                steps=8,
                height=1024,
                width=1024,
                guidance_argument="distilled_guidance_scale",
                display_name="HunyuanImage-2.1 (distilled)",
                family="transformer",
                seconds_per_image=11.0,
                parameters_b=25.5,  # DiT 17 + Qwen2.5-VL-7B 8.3 + byT5
            ),
            ModelSpec(
                key="janus_pro_7b",
                hub_id="deepseek-community/Janus-Pro-7B",
                pipeline_class="transformers.JanusForConditionalGeneration",
                backend="janus",
                height=384,
                width=384,
                display_name="Janus-Pro-7B",
                family="autoregressive",
                seconds_per_image=27.0,
                parameters_b=7.4,  # one 7B transformer and its image tokenizer
                note="autoregressive: no diffusion steps; transformers generation_mode='image'",
            ),
            ModelSpec(
                key="blip3o_next",
                hub_id="BLIP3o/BLIP3o-NEXT-SFT-3B",
                pipeline_class="",
                backend="unsupported",
                steps=30,
                height=1024,
                width=1024,
                display_name="BLIP3-o NEXT SFT 3B",
                family="autoregressive",
                note="no diffusers/transformers support: generate with the authors' code, "
                "then `negt2ibench import-images`",
            ),
        )
    },
    hint=" For any other diffusers pipeline pass --model-id HUB_ID --key NAME.",
    exit_code=2,  # a wrong --model value: a usage error
)


# Unknown models' cost per image: an SD 3.5 Large-sized transformer step with guidance (about 144
# TFLOP at 1024²) on one L4 at 40% of its 121 TFLOP/s bf16 peak, scaled by pixels and steps.
SECONDS_PER_STEP_PER_MEGAPIXEL = 3.0
DEFAULT_STEPS = 50  # a pipeline default's usual number, when the spec leaves steps to the pipeline
DEFAULT_PIXELS = 1024 * 1024


def image_seconds(spec: ModelSpec) -> float:
    """GPU-seconds per image on one L4 (the verification jobs' default flavour): the registry's
    estimate, else `SECONDS_PER_STEP_PER_MEGAPIXEL` x steps x megapixels (conservative for small models).

    The registry's figures are estimates, not measurements: FLOPs per image (2 x transformer
    parameters x tokens per forward, x2 with classifier-free guidance, x steps; SD 1.5's UNet 0.8
    TFLOP per forward at 512²; the VAE's decode) over an L4's dense bf16 peak at 40% utilisation, as
    docs/hub-jobs.md estimates scoring; Janus-Pro decodes 576 tokens, each reading its 14 GB of
    weights at the L4's 300 GB/s. A measured figure replaces an estimate (benchmarks/gpu.sh)."""
    if spec.seconds_per_image is not None:
        return spec.seconds_per_image
    steps = spec.steps if spec.steps is not None else DEFAULT_STEPS
    pixels = spec.height * spec.width if spec.height is not None and spec.width is not None else DEFAULT_PIXELS
    return SECONDS_PER_STEP_PER_MEGAPIXEL * steps * pixels / DEFAULT_PIXELS


BYTES_PER_PARAMETER = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0}
QUANTIZED_BYTES = 0.55  # bitsandbytes NF4: 4 bits a parameter and its block scales


def weight_gigabytes(spec: ModelSpec) -> float | None:
    """GPU memory the pipeline's weights take, in GB (1e9 bytes): parameters x bytes per parameter of its
    dtype (or of its quantisation); None when the registry does not know its parameters. Estimated."""
    if spec.parameters_b is None:
        return None
    per = QUANTIZED_BYTES if spec.quantization else BYTES_PER_PARAMETER.get(spec.dtype, 2.0)
    return spec.parameters_b * per


def validate_key(key: str) -> str:
    """A split name must match [a-z0-9_]+ (the Hub's split rule, and the shard file prefix)."""
    return check_split_name(key, what="model key")


def get_spec(key: str) -> ModelSpec:
    """The registry entry for KEY, or a one-line error with near matches and the known keys (exit 2)."""
    return REGISTRY[key]


def custom_spec(
    model_id: str,
    key: str,
    steps: int | None = None,
    guidance: float | None = None,
    height: int | None = None,
    width: int | None = None,
    dtype: str = "bfloat16",
    revision: str | None = None,
) -> ModelSpec:
    """An entry for any diffusers pipeline (loaded with DiffusionPipeline, its defaults unless given),
    at REVISION of its repo (a commit pins it: the leaderboard can then regenerate its images)."""
    validate_key(key)
    return ModelSpec(
        key=key,
        hub_id=model_id,
        pipeline_class="diffusers.DiffusionPipeline",
        steps=steps,
        height=height,
        width=width,
        guidance=guidance,
        dtype=dtype,
        display_name=model_id,
        revision=revision,
    )


def registry_lines() -> list[str]:
    """`generate --list`: one line per model (key, hub id, steps, resolution, notes)."""
    lines = [f"{'key':<22}{'hub id':<62}{'steps':>6}  {'resolution':<11}note"]
    for spec in REGISTRY.values():
        steps = "n/a" if spec.backend == "janus" else (str(spec.steps) if spec.steps is not None else "default")
        note = ("UNSUPPORTED: " if spec.backend == "unsupported" else "") + spec.note
        lines.append(f"{spec.key:<22}{spec.hub_id:<62}{steps:>6}  {spec.resolution:<11}{note}")
    return lines


def table3_models() -> dict[str, tuple[str, str]]:
    """{model key: (family title, display name)} of every registry model, in the registry's order:
    Table 3's groups and row names (`negt2ibench report` passes it to the report's tables)."""
    return {spec.key: (FAMILY_TITLES[spec.family], spec.display_name or spec.key) for spec in REGISTRY.values()}
