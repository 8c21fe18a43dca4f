"""Synthetic scenes scored for real: the pictures of the browser test and the manual.

A scene is a grey canvas with one labelled, coloured rectangle per object, drawn exactly where
the rectangle double (`RectanglePerception`) reports the object; the records come from the real
rules and verdict (`Evaluator(perception=double)`), so the boxes, verdicts and causes drawn on a
scene are what this project's scorer decides for those detections. No model runs: nothing here is
any text-to-image model's output or any detector's, and every picture made from it says so
(`SYNTHETIC_LABEL`, the entry's model name `SYNTHETIC_MODEL`).

Four samples per prompt, each with another double, so a gallery has every kind of outcome:
0, the objects left to right with the value the prompt's first statement names; 1, the first
object missing; 2, the objects right to left; 3, every attribute another value.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import CATEGORY_VOCABULARY
from evaluator.results import ResultRecord
from space.demo_scenes import COLOR_FILLS, FILLS  # the demo draws its scenes in the same colours
from tests.helpers.space_helpers import RectanglePerception

SYNTHETIC_MODEL = "Synthetic scenes (rectangle double)"
SYNTHETIC_KEY = "synthetic_scenes"
SYNTHETIC_LABEL = "SYNTHETIC SCENE - test double, not a model's output"
SIZE = (384, 256)


def _other_value(prompt: PromptRecord) -> str:
    values = CATEGORY_VOCABULARY[prompt.category]
    named = {s.predicate for s in prompt.statements}
    return next(v for v in values if v not in named)


def double_for(prompt: PromptRecord, sample: int, size: tuple[int, int] = SIZE) -> RectanglePerception:
    """The rectangle double of one sample (see the module's docstring)."""
    probe = RectanglePerception()
    count = len(prompt.objects)
    if sample == 1:
        return RectanglePerception(absent=[prompt.objects[0]])
    if sample == 2:
        boxes = {name: probe._box(count - 1 - i, count, *size) for i, name in enumerate(prompt.objects)}
        return RectanglePerception(boxes=boxes)
    if sample == 3 and prompt.kind == "attribute":
        return RectanglePerception(values=dict.fromkeys(prompt.objects, _other_value(prompt)))
    return RectanglePerception()


def scene(prompt: PromptRecord, double: RectanglePerception, size: tuple[int, int] = SIZE) -> Image.Image:
    """The canvas with each object the double finds as a labelled rectangle where it finds it
    (its colour, for the color category, the value the double reports)."""
    width, height = size
    ramp = np.linspace(150, 205, height, dtype=np.uint8)[:, None, None].repeat(width, 1).repeat(3, 2)
    image = Image.fromarray(ramp)  # not flat: the double finds nothing in a flat image
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=13)
    count = len(prompt.objects)
    for index, name in enumerate(prompt.objects):
        if name in double.absent:
            continue
        x0, y0, x1, y1 = double.boxes.get(name) or double._box(index, count, width, height)
        value = double.values.get(name, prompt.statements[0].predicate) if prompt.kind == "attribute" else ""
        fill = (
            COLOR_FILLS.get(value, FILLS[index % len(FILLS)])
            if prompt.category == "color"
            else FILLS[index % len(FILLS)]
        )
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=fill, outline=(40, 40, 40), width=2)
        label = f"{name} ({value})" if value else name
        draw.text((x0 + 4, y1 + 4), label, fill=(20, 20, 20), font=font)
    draw.text((6, height - 18), SYNTHETIC_LABEL, fill=(60, 60, 60), font=ImageFont.load_default(size=11))
    return image


def scored_scenes(
    prompts: Sequence[PromptRecord], samples: int = 4, model_key: str = SYNTHETIC_KEY
) -> list[tuple[ResultRecord, Image.Image]]:
    """Each prompt's synthetic scenes and the records the real rules give them, in order."""
    from negt2ibench.api import Evaluator

    out: list[tuple[ResultRecord, Image.Image]] = []
    for prompt in prompts:
        for sample in range(samples):
            double = double_for(prompt, sample)
            image = scene(prompt, double)
            [record] = Evaluator(perception=double, prompts=[prompt]).score_many(
                [image], [prompt], model_key=model_key, sample_indices=[sample], progress=False, num_workers=0
            )
            out.append((record, image))
    return out


def write_scene_repo(folder: Path, scored: Sequence[tuple[ResultRecord, Image.Image]], split: str) -> Path:
    """A local images repo (images/<split>-00000-of-00001.parquet) of the scenes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def png(image: Image.Image) -> bytes:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()

    table = pa.table(
        {
            "prompt_id": [r.prompt_id for r, _ in scored],
            "sample_index": pa.array([r.sample_index for r, _ in scored], pa.int32()),
            "image": [{"bytes": png(image), "path": None} for _, image in scored],
            "model_key": [split] * len(scored),
        }
    )
    (folder / "images").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "images" / f"{split}-00000-of-00001.parquet")
    return folder
