"""Presets (Table 17's C1–C8 and the named ones) and what the config hash covers."""

from __future__ import annotations

import dataclasses

import pytest

from evaluator.config import (
    CURRENT,
    PRESET_HELP,
    PRESETS,
    EvaluatorConfig,
    UnknownPresetError,
    get_preset,
    hashed_fields,
    rule_fields,
    table17_config,
)
from negt2ibench.core.errors import UsageError

# Pinned: a hash that moves makes every stored result incomparable. They cover `attribute_dtype`
# (SigLIP 2 in float32 or bf16, which can change a colour verdict).
PINNED_HASHES = {
    "current": "bbc03f064ef3ab0c",
    "previous": "a2eb28e03da0f89b",
    "no_sam": "161efc9f4450f2df",
    "c1": "e42af2b1a96d0883",
    "c2": "691c7e9548d27aa5",
    "c3": "ce2c9f16294f6e62",
    "c4": "4864f563609d5a84",
    "c5": "a2eb28e03da0f89b",
    "c6": "bbc03f064ef3ab0c",
    "c7": "99b4ddd4787441b8",
    "c8": "161efc9f4450f2df",
}


def test_every_preset_hash_is_pinned():
    assert {name: config.config_hash for name, config in PRESETS.items()} == PINNED_HASHES


def test_table17_configurations_are_distinct_and_the_named_presets_are_three_of_them():
    hashes = [PRESETS[f"c{n}"].config_hash for n in range(1, 9)]
    assert len(set(hashes)) == 8
    assert PRESETS["current"] == PRESETS["c6"].replace(name="current")
    assert PRESETS["previous"] == PRESETS["c5"].replace(name="previous")
    assert PRESETS["no_sam"] == PRESETS["c8"].replace(name="no_sam")


@pytest.mark.parametrize("number", range(1, 9))
def test_table17_axes(number):
    config = PRESETS[f"c{number}"]
    assert config.name == f"c{number}"
    assert config.detector_label == ("Mask R-CNN" if number <= 4 else "RF-DETR-XL")
    assert config.use_sam is (number in (1, 2, 5, 6))
    assert config.constants_label == ("Previous" if number % 2 else "Current")
    if number <= 4:
        assert (config.detector, config.detector_weights, config.detector_resolution) == (
            "maskrcnn_resnet50_fpn_v2",
            "MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1",
            800,
        )
    # attribute scoring and everything but the relation constants are Table 15's
    same = ("presence_threshold", "per_class_cap", "color_margin", "material_margin", "attribute_model_id")
    assert all(getattr(config, name) == getattr(CURRENT, name) for name in same)
    assert f"C{number}" in PRESET_HELP[f"c{number}"]


def test_previous_constants_are_table16():
    previous = PRESETS["c7"]
    assert (previous.directional_shrink, previous.directional_axis_threshold) == (0.10, 0.50)
    assert (previous.proximity_gap_factor, previous.size_ratio) == (0.50, 1.15)
    assert (previous.depth_rule, previous.depth_band_px) == ("contact_band", 12)


def test_the_hash_covers_verdict_fields_only():
    assert "name" not in hashed_fields() and "counting_threshold" not in hashed_fields()
    assert set(hashed_fields()) == {f.name for f in dataclasses.fields(EvaluatorConfig)} - {
        "name",
        "counting_threshold",
    }
    assert CURRENT.replace(counting_threshold=0.9, name="x").config_hash == CURRENT.config_hash
    for changed in (
        {"presence_threshold": 0.05},
        {"per_class_cap": 8},
        {"use_sam": False},
        {"color_margin": 1.0},
        {"depth_base": 0.06},
        {"color_templates": ("a {value} {object}",)},
    ):
        assert CURRENT.replace(**changed).config_hash != CURRENT.config_hash, changed
    for retired in ("overlap_suppression_iou", "sam_input_size", "attribute_input_size", "depth_input_size"):
        assert not hasattr(CURRENT, retired)


def test_perception_key_ignores_the_rules_constants():
    assert set(rule_fields()) == {
        "color_margin",
        "material_margin",
        "directional_shrink",
        "directional_axis_threshold",
        "proximity_gap_factor",
        "size_ratio",
        "depth_rule",
        "depth_band_px",
        "depth_base",
        "depth_gap_slope",
    }
    keys = {n: PRESETS[f"c{n}"].perception_key for n in range(1, 9)}
    assert [keys[1] == keys[2], keys[3] == keys[4], keys[5] == keys[6], keys[7] == keys[8]] == [True] * 4
    assert len(set(keys.values())) == 4  # one per detector × SAM pair
    assert CURRENT.replace(size_ratio=2.0).perception_key == CURRENT.perception_key
    assert CURRENT.replace(presence_threshold=0.1).perception_key != CURRENT.perception_key
    assert CURRENT.replace(size_ratio=2.0).constants_label == "custom"


def test_unknown_presets_and_configurations():
    with pytest.raises(UnknownPresetError, match="choose one of current, previous, no_sam, c1, c2") as caught:
        get_preset("c9")
    assert isinstance(caught.value, UsageError) and caught.value.exit_code == 2
    with pytest.raises(ValueError, match="C1–C8, not C9"):
        table17_config(9)
