"""The GPU benchmark (`benchmarks/gpu.sh`, `benchmarks/device_stages.py`): its stage
clock against FLOPs counted by hand, its seeded boxes, its table of peaks, and the whole run on
the CPU with the tiny models, whose SigLIP FLOPs are counted by hand from the tiny config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from device_stages import StageClock, peak_tflops  # noqa: E402
from representative import ellipses, seeded_boxes  # noqa: E402

# The tests' tiny SigLIP image tower (tests/helpers/perception_helpers.tiny_siglip): 32² input, 8 px
# patches (16 tokens), width 32, MLP 37, 2 layers, 4 heads of 8. torch's counter counts 2 FLOPs
# per multiply-add of matmuls and convolutions (bias, norms and softmax not counted):
PATCHES = 2 * 16 * 32 * (3 * 8 * 8)  # patch embedding: 16 outputs × 32 channels × 192 inputs = 196,608
LAYER = (
    4 * 2 * 16 * 32 * 32  # q, k, v and output projections: 131,072
    + 2 * (2 * 4 * 16 * 16 * 8)  # QKᵀ and attention × V over 4 heads: 32,768
    + 2 * (2 * 16 * 32 * 37)  # MLP 32 → 37 → 32: 75,776
)  # 239,616 per layer
HEAD = (  # the attention-pooling head: one probe token over the 16
    2 * 1 * 32 * 32  # probe query projection: 2,048
    + 2 * 16 * 32 * 64  # key and value projections: 65,536
    + 2 * (2 * 4 * 1 * 16 * 8)  # attention: 2,048
    + 2 * 1 * 32 * 32  # output projection: 2,048
    + 2 * (2 * 1 * 32 * 37)  # its MLP: 4,736
)  # 76,416
SIGLIP_CROP_FLOPS = PATCHES + 2 * LAYER + HEAD  # 752,256 per crop


def test_the_stage_clock_counts_the_hand_counted_flops_of_the_tiny_siglip_tower_on_one_crop():
    from tests.helpers.perception_helpers import tiny_siglip

    model, _ = tiny_siglip()
    vision = model.config.vision_config
    # The sizes the hand count above is made of, as the model was built with them.
    sizes = (vision.image_size, vision.patch_size, vision.hidden_size, vision.intermediate_size)
    assert sizes + (vision.num_hidden_layers, vision.num_attention_heads) == (32, 8, 32, 37, 2, 4)
    clock = StageClock()
    with torch.inference_mode(), clock.counting():
        clock.call("siglip", model.get_image_features, pixel_values=torch.rand(1, 3, 32, 32))
    assert clock.totals["siglip"]["flops"] == SIGLIP_CROP_FLOPS  # attention included (the CPU kernel's formula)


def test_the_stage_clock_counts_each_stages_own_flops_as_counted_by_hand():
    torch.manual_seed(0)
    conv, linear = torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(144, 5)
    clock = StageClock()
    clock.wrap(conv, "forward", "inner")

    def outer(x):
        return linear(conv(x).flatten(1))

    with torch.inference_mode(), clock.counting():
        clock.call("outer", outer, torch.rand(2, 3, 8, 8))
    # conv: 2 images × (4 × 6 × 6 outputs) × (3 × 3 × 3 inputs) × 2 = 15,552; linear: 2 × 144 × 5 × 2 = 2,880
    assert clock.totals["inner"]["flops"] == 15_552
    assert clock.totals["outer"]["flops"] == 2_880  # the inner stage's FLOPs are not the outer one's
    assert clock.totals["inner"]["calls"] == clock.totals["outer"]["calls"] == 1
    clock.restore()
    assert "forward" not in conv.__dict__  # the module's own method again


def test_seeded_boxes_lie_inside_the_image_and_repeat_for_the_same_image_and_names():
    from tests.helpers.perception_helpers import random_image

    image = random_image(3, (300, 200))
    boxes = seeded_boxes(image, ["cup", "dog", "cat"], 300, 200)
    assert boxes == seeded_boxes(image, ["cup", "dog", "cat"], 300, 200)
    assert boxes != seeded_boxes(random_image(4, (300, 200)), ["cup", "dog", "cat"], 300, 200)
    for x0, y0, x1, y1, confidence in boxes:
        assert 0 <= x0 < x1 <= 300 and 0 <= y0 < y1 <= 200 and 0.5 <= confidence <= 0.95
        assert 0.15 * 300 <= x1 - x0 <= 0.6 * 300
    masks = ellipses([box[:4] for box in boxes], 200, 300, torch.device("cpu"))
    assert masks.shape == (3, 200, 300) and all(
        0 < int(mask.sum()) < (x1 - x0) * (y1 - y0) for mask, (x0, y0, x1, y1, _) in zip(masks, boxes, strict=True)
    )


def test_peaks_are_looked_up_by_the_devices_name():
    assert peak_tflops("NVIDIA H200") == 989.4
    assert peak_tflops("NVIDIA H200 NVL") == 835.0
    assert peak_tflops("NVIDIA H100 PCIe") == 756.0
    assert peak_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert peak_tflops("Some Other Accelerator") is None


@pytest.mark.slow
def test_gpu_sh_runs_on_the_cpu_and_its_json_holds_the_hand_counted_flops(tmp_path):
    out = tmp_path / "gpu-results.json"
    command = ["bash", str(ROOT / "benchmarks" / "gpu.sh"), "--device", "cpu", "--images", "8", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert [row["batch_size"] for row in results["rows"]] == [1, 8, 32, 64]
    assert [row["batch_size"] for row in results["end_to_end"]] == [1, 8, 32, 64] and not results["skipped"]
    assert results["meta"]["models"] == "tiny" and results["mix"]["crops"] > 0
    for row in results["rows"]:
        flops = row["flops_per_image"]
        assert set(flops) >= {"detector", "sam", "sam_decoder", "siglip", "depth", "total"}
        assert flops["total"] == pytest.approx(sum(value for stage, value in flops.items() if stage != "total"))
        # Every prompt object gets a box, so every object of an attribute prompt is one SigLIP crop.
        assert row["flop_crops"] > 0
        assert flops["siglip"] == row["flop_crops"] * SIGLIP_CROP_FLOPS / row["flop_images"]
        assert flops["detector"] > 0 and flops["sam"] > 0 and flops["sam_decoder"] > 0 and flops["depth"] > 0
        assert row["images_per_s"] > 0 and row["host_ms_per_image"] > 0 and 0 <= row["gpu_waits"] <= 1
        assert "mfu" in row and "peak_gib" in row  # None on the CPU: no peak, no CUDA memory
    for row in results["end_to_end"]:
        assert row["images_per_s"] > 0 and row["host_ms_per_image"] > 0 and "peak_gib" in row
    assert "GFLOP/img" in done.stdout and "end to end, batch  32" in done.stdout
