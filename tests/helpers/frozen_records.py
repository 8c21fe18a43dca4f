"""A seeded scoring run on the tiny models whose records are frozen as a reference.

`tests/data/frozen_records/{preset}.jsonl` hold the records the per-image scoring path (no batched
device path) wrote for `scene()` through `score_images` (batch 4, no workers);
`tests/evaluator/test_device_path.py` checks that the code writes the same bytes, on the CPU path and
on the device path. `fingerprint()` hashes the tiny models' raw outputs on one
input: the frozen bytes are only expected where the CPU's kernels give those same floats.

Regenerate (only for a deliberate change of the records):  .venv/bin/python -m tests.helpers.frozen_records
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
FROZEN = REPO / "tests" / "data" / "frozen_records"
PRESETS_FROZEN = ("current", "no_sam", "c2")
BATCH_SIZE = 4
TESTS_MOMENT = "1767225600"  # 2026-01-01T00:00:00Z: SOURCE_DATE_EPOCH as tests/conftest.py sets it
# (category, objects, polarity, image side): the tiny detector sees every class but the zebra.
PLAN = [
    ("color", ["cup", "bowl"], "positive", (200, 150)),
    ("material", ["bench", "bowl"], "negated", (160, 160)),
    ("directional", ["car", "bus"], "positive", (144, 108)),
    ("proximity", ["cat", "dog"], "negated", (200, 150)),
    ("comparative", ["sheep", "cat"], "positive", (160, 160)),
    ("depth", ["cat", "dog"], "positive", (200, 150)),
    ("color", ["tv remote", "zebra"], "negated", (144, 108)),
    ("depth", ["dog", "sheep"], "negated", (160, 160)),
    ("material", ["bowl", "cup"], "positive", (200, 150)),
    ("directional", ["cat", "zebra"], "negated", (160, 160)),
    ("color", ["bus", "car"], "positive", (160, 160)),
    ("proximity", ["bench", "sheep"], "positive", (144, 108)),
]


def photos() -> list[np.ndarray]:
    """The colour photographs in scikit-image's wheel (no download)."""
    import skimage.data as data

    return [data.chelsea(), data.coffee(), data.astronaut(), data.rocket(), data.stereo_motorcycle()[0]]


def scene() -> tuple[list, list[Image.Image]]:
    """The run's prompt records and images, one image per prompt (`PLAN`, photographs in turn)."""
    from tests.helpers.perception_helpers import make_prompt

    pictures = [Image.fromarray(picture).convert("RGB") for picture in photos()]
    prompts, images = [], []
    for number, (category, objects, polarity, size) in enumerate(PLAN):
        pos, neg = (1, 0) if polarity == "positive" else (0, 1)
        prompts.append(make_prompt(category, objects, f"{category}_pos{pos}_neg{neg}_{number:03d}", polarity))
        images.append(pictures[number % len(pictures)].resize(size, Image.BICUBIC))
    return prompts, images


def write_folder(folder: Path) -> list:
    """The scene's images as `{prompt_id}_0.png` in `folder`; returns the prompt records."""
    prompts, images = scene()
    folder.mkdir(parents=True, exist_ok=True)
    for prompt, image in zip(prompts, images, strict=True):
        image.save(folder / f"{prompt.prompt_id}_0.png")
    return prompts


def fingerprint() -> str:
    """sha256 over the tiny models' raw forward outputs on one fixed input (code the device path does not touch)."""
    from tests.helpers.perception_helpers import tiny_maskrcnn, tiny_models

    detector, (sam, _), (siglip, _), (depth, _) = tiny_models()
    generator = torch.Generator().manual_seed(25)
    digest = hashlib.sha256()
    with torch.inference_mode():
        outputs = detector.model.model.eval()(torch.rand(1, 3, 96, 96, generator=generator))
        parts = [outputs["pred_logits"], outputs["pred_boxes"]]
        parts += list(sam.get_image_embeddings(torch.rand(1, 3, 128, 128, generator=generator)))
        features = siglip.get_image_features(pixel_values=torch.rand(1, 3, 32, 32, generator=generator))
        parts.append(features.pooler_output if hasattr(features, "pooler_output") else features)
        parts.append(depth(pixel_values=torch.rand(1, 3, 32, 32, generator=generator)).predicted_depth)
        parts.append(tiny_maskrcnn().backbone(torch.rand(1, 3, 32, 32, generator=generator))["0"])
    for part in parts:
        digest.update(part.float().contiguous().numpy().tobytes())
    return digest.hexdigest()


def score(preset: str, folder: Path, out: Path, num_workers: int = 0, perception=None) -> bytes:
    """The records of the scene's folder under `preset` (batch 4), as bytes."""
    from evaluator.config import PRESETS
    from evaluator.pipeline import score_images
    from tests.helpers.perception_helpers import tiny_perception

    config = PRESETS[preset]
    prompts, _ = scene()
    score_images(
        folder,
        prompts,
        perception or tiny_perception(config, batch_size=BATCH_SIZE),
        out_path=out,
        config=config,
        model_key="frozen",
        batch_size=BATCH_SIZE,
        progress=False,
        num_workers=num_workers,
    )
    return out.read_bytes()


def freeze() -> None:
    import os
    import tempfile

    os.environ["SOURCE_DATE_EPOCH"] = TESTS_MOMENT  # the records' `scored_at`, as the tests fix it
    torch.set_num_threads(1)
    FROZEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "images"
        write_folder(folder)
        for preset in PRESETS_FROZEN:
            (FROZEN / f"{preset}.jsonl").write_bytes(score(preset, folder, Path(scratch) / f"{preset}.jsonl"))
    (FROZEN / "fingerprint.txt").write_text(fingerprint() + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # run as a script: `tests.helpers` from the checkout
    freeze()
