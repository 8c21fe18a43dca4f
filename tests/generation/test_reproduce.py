"""Reading a model back from an image's record (`generation.reproduce`): the registry's models by key and
hub id, any diffusers pipeline pinned to a commit, and every record that cannot be regenerated, in words;
the commit a run records (`load_generator` from the Hugging Face cache), and the cost per image."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from generation.registry import REGISTRY, custom_spec, image_seconds
from generation.reproduce import NotReproducible, recorded_commit, recorded_spec, regeneration_spec, seed_problem
from generation.work import SEED_RULE, image_seed
from tests.helpers.regen_helpers import COMMIT_A, load_tiny, put_tiny_model, tiny_spec

SD15 = REGISTRY["sd_1_5"]
DIFFUSERS = {"backend": "diffusers", "pipeline": "StableDiffusionPipeline", "seed_rule": SEED_RULE}
CUSTOM = {**custom_spec("lab/x", "k").settings(), **DIFFUSERS}
JANUS = {**DIFFUSERS, "pipeline_class": "transformers.JanusForConditionalGeneration", "backend": "transformers"}


def test_a_registry_model_is_its_entry_at_the_recorded_commit():
    params = {**SD15.settings(), **DIFFUSERS, "commit": COMMIT_A}
    assert recorded_spec(SD15.hub_id, "sd_1_5", params) == replace(SD15, revision=COMMIT_A)
    assert recorded_spec(SD15.hub_id, "sd_1_5", {**SD15.settings(), **DIFFUSERS}) == SD15  # the registry's own


def test_any_diffusers_pipeline_pinned_to_a_commit_is_rebuilt_from_its_settings():
    spec = custom_spec("lab/t2i", "lab_t2i", steps=30, guidance=4.5, height=768, width=768, revision=COMMIT_A)
    params = {**spec.settings(), **DIFFUSERS}
    assert recorded_spec("lab/t2i", "lab_t2i", params) == spec
    assert recorded_spec("lab/t2i", "lab_t2i", {**params, "revision": "main", "commit": COMMIT_A}).revision == COMMIT_A


@pytest.mark.parametrize(
    "model_id, params, why",
    [
        ("x", {"source": "import-images", "seed": "unknown (-1)"}, "imported from a folder of PNGs"),
        ("tiny_model", {"backend": "callable", "callable": "lab.api_model"}, "made by a function (`generate_with`)"),
        ("/home/me/ckpt", {**CUSTOM, "commit": COMMIT_A}, "local folder"),
        ("BLIP3o/BLIP3o-NEXT-SFT-3B", {}, "a registry model that no backend here loads"),
    ],
)  # fmt: skip
def test_a_record_whose_model_id_names_nothing_on_the_hub_cannot_be_regenerated(model_id, params, why):
    with pytest.raises(NotReproducible, match=why.replace("(", r"\(").replace(")", r"\)")):
        recorded_spec(model_id, "k", params)


@pytest.mark.parametrize(
    "params, unusable",
    [
        ({"source": "import-images", "seed": "unknown (-1)"}, "imported from a folder of PNGs"),
        ({"backend": "callable", "callable": "lab.api_model"}, "made by a function (`generate_with`)"),
        ({}, "its record names no model this project can load"),
        (JANUS, "not a diffusers pipeline of the registry"),
        ({**CUSTOM, "commit": COMMIT_A, "quantization": "bnb_4bit"}, "swapped components or quantisation"),
        ({**CUSTOM, "commit": COMMIT_A, "steps": "many"}, "its recorded settings are not usable"),
        ({**CUSTOM, "commit": COMMIT_A, "steps": 10**6}, "steps 1000000 is not a whole number from 1 to 1000"),
        ({**CUSTOM, "commit": COMMIT_A, "height": 65536}, "height 65536 is not a whole number"),
        ({**CUSTOM, "commit": COMMIT_A, "pipeline_class": "diffusers.utils.os"}, "not a diffusers pipeline"),
        ({**CUSTOM, "commit": COMMIT_A, "dtype": "int8"}, "its recorded dtype is not one the Space loads"),
    ],
)  # fmt: skip
def test_unusable_settings_do_not_opt_out_a_hub_repo_it_is_regenerated_with_diffusers_defaults(params, unusable):
    """Whether an image is regenerated is decided by its model's id, not by what else was recorded."""
    found = regeneration_spec("lab/x", "k", params)
    assert found.spec == custom_spec("lab/x", "k", revision=recorded_commit(params))  # the pipeline's defaults
    assert unusable in found.fallback and found.fallback.endswith("regenerated with diffusers' defaults for that repo")


def test_unusable_settings_of_a_registry_model_fall_back_to_the_registrys():
    found = regeneration_spec(SD15.hub_id, "sd_1_5", {**SD15.settings(), "backend": "callable", "commit": COMMIT_A})
    assert found.spec == replace(SD15, revision=COMMIT_A) and "the registry's settings" in found.fallback
    # another split key of the same repo: the registry's first entry of that hub id
    assert regeneration_spec(SD15.hub_id, "my_key", {"source": "import-images"}).spec == SD15


def test_an_unpinned_repo_keeps_its_settings_and_leaves_the_commit_to_the_job():
    assert recorded_spec("lab/x", "k", CUSTOM) == custom_spec("lab/x", "k")  # revision None: the job resolves it
    assert recorded_spec("lab/x", "k", {**CUSTOM, "revision": "main"}).revision is None


def test_a_seed_other_than_the_benchmarks_is_not_the_models_own():
    params = {"seed_rule": SEED_RULE}
    assert seed_problem("color_pos1_neg0_000", 2, image_seed("color_pos1_neg0_000", 2), params) == ""
    assert "is not the benchmark's seed" in seed_problem("color_pos1_neg0_000", 2, 7, params)
    assert seed_problem("color_pos1_neg0_000", 2, 7, {}) == "its record names another seed rule"
    assert recorded_commit({"commit": "abc", "revision": COMMIT_A}) == COMMIT_A  # only full commits count


@pytest.mark.slow
def test_a_run_records_the_commit_it_loaded_and_a_pinned_revision_loads_that_commit(tmp_path):
    cache = Path(os.environ["HF_HUB_CACHE"])
    put_tiny_model(cache, "test-reproduce/tiny", commit=COMMIT_A)
    assert load_tiny(tiny_spec("test-reproduce/tiny", None)).params["commit"] == COMMIT_A  # main's commit
    assert load_tiny(tiny_spec("test-reproduce/tiny", COMMIT_A)).params["commit"] == COMMIT_A
    from negt2ibench.core.errors import MissingWeightsError

    with pytest.raises(MissingWeightsError):
        load_tiny(tiny_spec("test-reproduce/tiny", "b" * 40))  # a commit not on this machine
    assert json.loads(json.dumps(tiny_spec("test-reproduce/tiny", COMMIT_A).settings()))["revision"] == COMMIT_A


def test_the_cost_per_image_is_the_registrys_estimate_else_steps_times_megapixels():
    assert image_seconds(SD15) == 1.7 and image_seconds(REGISTRY["sd_3_5_large"]) == 83.0
    # 3 s per step per megapixel: 30 steps at 1024² = 90 s; 4 steps at 512² = 3 s; the pipeline's default steps: 50
    assert image_seconds(custom_spec("a/b", "k", steps=30, height=1024, width=1024)) == 90.0
    assert image_seconds(custom_spec("a/b", "k", steps=4, height=512, width=512)) == 3.0
    assert image_seconds(custom_spec("a/b", "k")) == 150.0
    assert all(spec.seconds_per_image for spec in REGISTRY.values() if spec.backend != "unsupported")
