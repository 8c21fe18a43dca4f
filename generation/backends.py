"""The models behind generation: a small `ImageGenerator` interface and its adapters.

An `ImageGenerator` takes prompts and per-image seeds and returns one `GeneratedImage` per prompt.
Diffusers pipelines and transformers' Janus are the two real ones (`load_generator` builds them from
a registry entry); `CallableGenerator` wraps any function `(prompts, seeds) -> PIL images`, so a
model no library supports still fills a split (`generation.generate_with`). Tests pass a tiny
pipeline through the same diffusers adapter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from negt2ibench.core.errors import MissingWeightsError, UserError, brief
from negt2ibench.core.launch import select_dtype
from negt2ibench.core.local_files import cached_snapshot, local_model
from negt2ibench.core.registry import import_target

from .registry import ModelSpec


@dataclass(frozen=True)
class GeneratedImage:
    image: Any  # PIL.Image.Image
    nsfw_flagged: bool = False


class ImageGenerator(Protocol):
    """A loaded model: prompts and per-image seeds in, one image per prompt out."""

    params: dict[str, Any]

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]: ...


def is_black(image) -> bool:
    """Safety checkers replace flagged images with black ones."""
    return not np.asarray(image).any()


class DiffusersGenerator:
    """Any diffusers text-to-image pipeline; one CPU `torch.Generator` per image for the seed."""

    def __init__(self, pipeline, spec: ModelSpec):
        self.pipeline = pipeline
        self.spec = spec
        self.params = {"backend": "diffusers", "pipeline": type(pipeline).__name__}

    def call_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.spec.steps is not None:
            kwargs["num_inference_steps"] = self.spec.steps
        if self.spec.height is not None and self.spec.width is not None:
            kwargs["height"], kwargs["width"] = self.spec.height, self.spec.width
        if self.spec.guidance is not None:
            kwargs[self.spec.guidance_argument] = self.spec.guidance
        return kwargs

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]:
        import torch

        # CPU generators: the initial noise is the same on every device type and batch size.
        generators = [torch.Generator("cpu").manual_seed(seed) for seed in seeds]
        output = self.pipeline(prompt=list(prompts), generator=generators, output_type="pil", **self.call_kwargs())
        flags = getattr(output, "nsfw_content_detected", None) or [False] * len(output.images)
        return [
            GeneratedImage(image=image, nsfw_flagged=bool(flag) or is_black(image))
            for image, flag in zip(output.images, flags, strict=False)
        ]


def janus_chat_text(processor, prompt: str) -> str:
    """The text Janus-Pro gets for PROMPT: the user turn of its chat format, then the assistant's cue.

    Janus-Pro was trained to draw from `<|User|>: {prompt}\n\n<|Assistant|>:` (DeepSeek's SFT
    format; the Hub processor carries it as its chat template, and the transformers docs build image
    prompts with `apply_chat_template(..., add_generation_prompt=True)`). The processor then appends
    the begin-of-image token in image mode. A processor without a template (a test's tiny one) gets
    the raw prompt.
    """
    if getattr(processor, "chat_template", None) is None:
        return prompt
    messages = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    return processor.apply_chat_template(messages, add_generation_prompt=True)


class JanusGenerator:
    """transformers' Janus-Pro in image mode; one image per call so each has its own seed."""

    def __init__(self, model, processor, device: str):
        self.model = model
        self.processor = processor
        self.device = device
        self.params = {
            "backend": "transformers",
            "model": type(model).__name__,
            "generation_mode": "image",
            "prompt_format": "raw" if getattr(processor, "chat_template", None) is None else "chat_template",
        }

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]:
        import torch
        from PIL import Image

        results = []
        for prompt, seed in zip(prompts, seeds, strict=False):
            torch.manual_seed(seed)
            text = janus_chat_text(self.processor, prompt)
            inputs = self.processor(text=[text], generation_mode="image", return_tensors="pt").to(self.device)
            tokens = self.model.generate(**inputs, generation_mode="image", do_sample=True, use_cache=True)
            decoded = self.model.decode_image_tokens(tokens)  # (1, H, W, C), normalized
            # transformers 5.24's post_process_multimodal_output(generation_mode="image") fails on its own
            # return_tensors="PIL.Image.Image"; un-normalize to uint8 tensors and convert here instead.
            pixels = self.processor.image_processor.postprocess(list(decoded.float().cpu()), return_tensors="pt")
            array = pixels["pixel_values"][0].permute(1, 2, 0).numpy()
            image = Image.fromarray(array)
            results.append(GeneratedImage(image=image, nsfw_flagged=is_black(image)))
        return results


class CallableGenerator:
    """Any function `(prompts, seeds) -> images` as an `ImageGenerator`.

    The function gets the prompt texts and one seed per image, and returns one PIL image per prompt
    (or a `GeneratedImage` to flag an image as NSFW). An all-black image is flagged, as a safety
    checker's blank would be.
    """

    def __init__(self, function: Callable[[list[str], list[int]], Sequence[Any]], params: dict[str, Any] | None = None):
        if not callable(function):
            raise UserError(f"generate_with needs a callable (prompts, seeds) -> images, got {type(function).__name__}")
        self.function = function
        name = getattr(function, "__qualname__", type(function).__qualname__)
        self.params = {"backend": "callable", "callable": f"{getattr(function, '__module__', '?')}.{name}"}
        self.params.update(params or {})

    def __call__(self, prompts: list[str], seeds: list[int]) -> list[GeneratedImage]:
        from PIL import Image

        results = []
        for index, made in enumerate(self.function(list(prompts), list(seeds))):
            if isinstance(made, GeneratedImage):
                results.append(made)
            elif isinstance(made, Image.Image):
                results.append(GeneratedImage(image=made, nsfw_flagged=is_black(made)))
            else:
                raise UserError(
                    f"the generating function returned a {type(made).__name__} as image {index}; "
                    f"return one PIL image per prompt"
                )
        return results


HOW_TO_GET = (
    "Run the same command with --download on a machine with internet access (gated models need "
    "`hf auth login` and accepting the licence on the Hub), or pass a local folder with --model-id."
)


def _missing_weights(spec: ModelSpec, detail: str) -> MissingWeightsError:
    return MissingWeightsError(f"{spec.key} ({spec.hub_id})", detail, how_to_get=HOW_TO_GET)


def require_weights(spec: ModelSpec, *, download: bool = False) -> None:
    """`MissingWeightsError` at once when SPEC's model (or a component swapped into it) is not on this
    machine: a look at the disk, no torch, no network; nothing to look for when DOWNLOAD lets the
    libraries fetch it, or for a model this project cannot run (`unsupported`)."""
    if download or spec.backend == "unsupported":
        return
    marker = "config.json" if spec.backend == "janus" else "model_index.json"
    if local_model(spec.hub_id, config_file=marker, revision=spec.revision) is None:
        raise _missing_weights(spec, "not in the Hugging Face cache")
    for _, repo, _ in spec.component_overrides.values():
        if not Path(repo).is_dir() and cached_snapshot(repo) is None:
            raise _missing_weights(spec, f"its component {repo} is not in the Hugging Face cache")


def _loading_errors() -> tuple[type[BaseException], ...]:
    from huggingface_hub.errors import HfHubHTTPError

    return (OSError, HfHubHTTPError)


def load_generator(spec: ModelSpec, device: str, *, download: bool = False) -> ImageGenerator:
    """Load the model of SPEC onto DEVICE from this machine's files (from the Hub too with DOWNLOAD);
    weights not here -> MissingWeightsError (exit 2)."""
    if spec.backend == "unsupported":
        raise UserError(
            f"{spec.key} ({spec.display_name or spec.hub_id}) is not supported by diffusers or transformers: "
            f"generate its images with the authors' code as {{prompt_id}}_{{sample_index}}.png, then run "
            f"`negt2ibench import-images --key {spec.key} --dir FOLDER --out DIR --model-id {spec.hub_id}`"
        )
    require_weights(spec, download=download)
    dtype = select_dtype(device, preferred=spec.dtype)  # float32 on the CPU
    local: dict[str, Any] = {"local_files_only": not download}
    if spec.revision is not None:
        local["revision"] = spec.revision
    try:
        if spec.backend == "janus":
            from transformers import JanusForConditionalGeneration, JanusProcessor

            model = JanusForConditionalGeneration.from_pretrained(spec.hub_id, dtype=dtype, **local)
            # transformers declares `to` through functools.wraps, which mypy does not bind as a method.
            model = model.to(device)  # type: ignore[arg-type]
            processor = JanusProcessor.from_pretrained(spec.hub_id, **local)
            generator: ImageGenerator = JanusGenerator(model, processor, device)
            generator.params["torch_dtype"] = str(dtype).removeprefix("torch.")
            _record_commit(generator, spec)
            return generator
        pipeline_class = import_target(spec.pipeline_class)
        kwargs: dict[str, Any] = {"dtype": dtype, **local}  # diffusers 0.42 and transformers 5 both take `dtype`
        for name, (class_path, repo, subfolder) in spec.component_overrides.items():
            component_kwargs: dict[str, Any] = {"dtype": dtype, "local_files_only": not download}
            if subfolder:
                component_kwargs["subfolder"] = subfolder
            kwargs[name] = import_target(class_path).from_pretrained(repo, **component_kwargs)
        if spec.quantization == "bnb_4bit":
            kwargs["quantization_config"] = _bnb_4bit_config(spec, dtype)
        pipeline = pipeline_class.from_pretrained(spec.hub_id, **kwargs)
    except _loading_errors() as error:  # a file of the model is missing (an interrupted download), or the Hub said no
        raise _missing_weights(spec, brief(error)) from None
    _check_text_encoder_fits(pipeline, spec)
    pipeline.to(device)
    pipeline.set_progress_bar_config(disable=True)
    generator = DiffusersGenerator(pipeline, spec)
    generator.params["torch_dtype"] = str(dtype).removeprefix("torch.")
    _record_commit(generator, spec)
    return generator


COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _record_commit(generator: ImageGenerator, spec: ModelSpec) -> None:
    """The commit of the model repo the weights were loaded from, in the images' params (`commit`):
    what the leaderboard regenerates them with. A local folder has none."""
    if Path(spec.hub_id).is_dir():
        return
    snapshot = cached_snapshot(spec.hub_id, revision=spec.revision)
    if snapshot is not None and COMMIT.match(snapshot.name):
        generator.params["commit"] = snapshot.name


def _check_text_encoder_fits(pipeline, spec: ModelSpec) -> None:
    """A swapped-in text encoder must give the width the UNet attends to (SD 1.5: ViT-L/14's 768)."""
    if "text_encoder" not in spec.component_overrides:
        return
    width = getattr(getattr(getattr(pipeline, "text_encoder", None), "config", None), "hidden_size", None)
    expected = getattr(getattr(getattr(pipeline, "unet", None), "config", None), "cross_attention_dim", None)
    if width is not None and expected is not None and width != expected:
        _, repo, _ = spec.component_overrides["text_encoder"]
        raise UserError(
            f"{spec.key}: the text encoder from {repo} has hidden size {width}, but the UNet of {spec.hub_id} "
            f"attends to {expected}: wrong CLIP size (SD 1.5 needs ViT-L/14)"
        )


def _bnb_4bit_config(spec: ModelSpec, dtype):
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise UserError(f"{spec.key} is loaded in 4 bit: `pip install bitsandbytes` (needs a CUDA GPU)") from None
    from diffusers import PipelineQuantizationConfig

    return PipelineQuantizationConfig(
        quant_backend="bitsandbytes_4bit",
        quant_kwargs={"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": dtype},
        components_to_quantize=list(spec.quantized_components),
    )
