"""Which model made an image, read back from its record: the spec that makes it again, or why none can.

Every image `negt2ibench generate` writes records its model's hub id, its split key and `params`
(`generation.runner.run_params`: the registry's settings, the pipeline class, the commit of the
weights loaded, the seed rule, library versions). `recorded_spec` turns that record back into a
`ModelSpec` that `generation.backends.load_generator` loads, so the leaderboard can regenerate a
sample of a submission's images and compare them with the submitted ones:

- a **registry model** (its key and hub id as the registry has them, with the registry's settings):
  that entry, at the recorded commit when there is one;
- **any other diffusers pipeline** named by a Hub repo id: a spec built from the recorded settings,
  at the recorded commit (none recorded: the verification job resolves the repo's commit on the Hub).

Whether an image can be regenerated is decided by **the model's id, not by the rest of the record**
(issue 51): a record whose settings cannot be used (another backend or pipeline class, a function's
or an import's marks, settings out of range, a dtype or quantisation not rebuilt here) but whose id
names a registry model or a Hub repo is regenerated anyway, with the registry's settings or
diffusers' defaults for that repo (`RecordedModel.fallback` says why). A submitter therefore cannot
opt out by recording odd parameters: settings other than the model's own make the regenerated images
differ, and the entry is rejected. Only an id that names nothing on the Hub raises `NotReproducible`
(a local folder's model, a name that is no repo id, a registry model no backend here loads); whether a
repo is public and loadable is the job's question (`leaderboard.checks.model_source`).

Pure: no torch, no file, no network.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, NamedTuple

from negt2ibench.core.errors import UserError
from negt2ibench.core.options import REPO_ID

from .registry import REGISTRY, ModelSpec, custom_spec, validate_key
from .work import SEED_RULE, image_seed

COMMIT = re.compile(r"^[0-9a-f]{40}$")
PIPELINE_CLASS = re.compile(r"^diffusers\.[A-Z][A-Za-z0-9]*Pipeline$")  # a diffusers pipeline class, nothing else
MAX_STEPS, MAX_SIDE = 1000, 4096  # recorded settings beyond these are not regenerated
# The recorded settings a spec is rebuilt from (`ModelSpec.settings`), with their types.
_REBUILT = ("steps", "height", "width", "guidance", "guidance_argument", "dtype", "pipeline_class")


class NotReproducible(UserError):
    """The image's record names no model the leaderboard can load again; the message says why."""


def recorded_commit(params: dict[str, Any]) -> str | None:
    """The commit of the weights that made the image: the one loaded (`commit`), else a pinned `revision`."""
    for name in ("commit", "revision"):
        value = params.get(name)
        if isinstance(value, str) and COMMIT.match(value):
            return value
    return None


def _registry_spec(model_id: str, model_key: str, params: dict[str, Any]) -> ModelSpec | None:
    """The registry's entry when the record names it with its own hub id and settings."""
    spec = REGISTRY.get(model_key)
    if spec is None or spec.hub_id != model_id or spec.backend not in ("diffusers", "janus"):
        return None
    settings = {name: value for name, value in spec.settings().items() if name != "revision"}
    if any(params.get(name, "(absent)") != value for name, value in settings.items()):
        return None
    return spec


class RecordedModel(NamedTuple):
    """The spec that regenerates a record's images, and why it is not the record's own settings ("" when it is)."""

    spec: ModelSpec
    fallback: str


def recorded_spec(model_id: str, model_key: str, params: dict[str, Any]) -> ModelSpec:
    """The spec that makes the recorded image again (`regeneration_spec`'s), or `NotReproducible`."""
    return regeneration_spec(model_id, model_key, params).spec


def regeneration_spec(model_id: str, model_key: str, params: dict[str, Any]) -> RecordedModel:
    """The spec from the record's settings; when they cannot be used, the spec the model's id names
    (`id_spec`) with the reason; `NotReproducible` only when the id names no model on the Hub."""
    try:
        return RecordedModel(_settings_spec(model_id, model_key, params), "")
    except NotReproducible as unusable:
        spec = id_spec(model_id, model_key, recorded_commit(params))
        if spec is None:
            raise
        how = "the registry's settings" if spec.key in REGISTRY and REGISTRY[spec.key].hub_id == model_id else (
            "diffusers' defaults for that repo"
        )  # fmt: skip
        return RecordedModel(
            spec, f"its recorded settings cannot be used ({unusable.one_line()}): regenerated with {how}"
        )


def id_spec(model_id: str, model_key: str, commit: str | None = None) -> ModelSpec | None:
    """The spec a model's id alone names, at COMMIT: the registry's entry of that hub id (the one of
    MODEL_KEY first), else diffusers' defaults for a Hub repo id; None for a local folder or a name that
    is no repo id. A registry model that no backend here loads raises `NotReproducible`."""
    named = [spec for spec in REGISTRY.values() if spec.hub_id == model_id]
    named.sort(key=lambda spec: spec.key != model_key)
    if named:
        if named[0].backend not in ("diffusers", "janus"):
            raise NotReproducible(f"{model_id[:100]} is a registry model that no backend here loads")
        return replace(named[0], revision=commit)
    if not REPO_ID.match(model_id):
        return None
    try:
        key = validate_key(model_key)
    except ValueError:
        key = "regenerated"
    return custom_spec(model_id, key, revision=commit)


def _settings_spec(model_id: str, model_key: str, params: dict[str, Any]) -> ModelSpec:
    """The spec rebuilt from the recorded settings (unpinned: `revision` None), or `NotReproducible`."""
    if params.get("source") == "import-images":
        raise NotReproducible("imported from a folder of PNGs (`import-images`): no model or seed was recorded")
    backend = params.get("backend")
    if backend == "callable":
        raise NotReproducible("made by a function (`generate_with`), which only its author can run")
    if backend not in ("diffusers", "transformers"):
        raise NotReproducible("its record names no model this project can load")
    commit = recorded_commit(params)
    registered = _registry_spec(model_id, model_key, params)
    if registered is not None:
        return replace(registered, revision=commit) if commit else registered
    if backend != "diffusers" or not PIPELINE_CLASS.match(str(params.get("pipeline_class", ""))):
        raise NotReproducible(f"{model_id[:100]} is not a diffusers pipeline of the registry")
    if not REPO_ID.match(model_id):
        raise NotReproducible("made with a model from a local folder, which is not on the Hub")
    if params.get("quantization") or params.get("component_overrides"):
        raise NotReproducible(f"{model_id} was loaded with swapped components or quantisation (not rebuilt here)")
    if str(params.get("dtype") or "bfloat16") not in ("bfloat16", "float16", "float32"):
        raise NotReproducible("its recorded dtype is not one the Space loads")
    try:
        validate_key(model_key)
        rebuilt = {name: params.get(name) for name in _REBUILT}
        _within(rebuilt)
        return ModelSpec(
            key=model_key,
            hub_id=model_id,
            pipeline_class=str(rebuilt["pipeline_class"]),
            steps=_optional(rebuilt["steps"], int),
            height=_optional(rebuilt["height"], int),
            width=_optional(rebuilt["width"], int),
            guidance=_optional(rebuilt["guidance"], float),
            guidance_argument=str(rebuilt["guidance_argument"] or "guidance_scale"),
            dtype=str(rebuilt["dtype"] or "bfloat16"),
            display_name=model_id,
            revision=commit,
        )
    except (TypeError, ValueError) as error:
        raise NotReproducible(f"its recorded settings are not usable ({error})") from None


def _within(settings: dict[str, Any]) -> None:
    """Recorded settings a regeneration can afford: at most MAX_STEPS steps, sides of at most MAX_SIDE."""
    for name, most in (("steps", MAX_STEPS), ("height", MAX_SIDE), ("width", MAX_SIDE)):
        value = settings[name]
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and 0 < value <= most):
            raise ValueError(f"{name} {str(value)[:20]} is not a whole number from 1 to {most}")
    guidance = settings["guidance"]
    if guidance is not None and not (isinstance(guidance, (int, float)) and 0 <= guidance <= 100):
        raise ValueError("its guidance is not a number from 0 to 100")


def _optional(value: Any, kind: type) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    return kind(value)


def seed_problem(prompt_id: str, sample_index: int, seed: int, params: dict[str, Any]) -> str:
    """Why an image's seed is not the benchmark's ("" when it is): each image's seed is fixed by its
    prompt and sample (`generation.work.image_seed`), so an image from any other seed is not the
    recorded model's image of that sample, whatever it looks like."""
    if params.get("seed_rule") != SEED_RULE:
        return "its record names another seed rule"
    expected = image_seed(prompt_id, sample_index)
    if seed != expected:
        return f"its seed {seed} is not the benchmark's seed {expected} for this sample"
    return ""
