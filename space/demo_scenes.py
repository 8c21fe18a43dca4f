"""The demo's synthetic scenes and the reader that scores them (`negt2ibench serve --demo`).

A scene is a grey canvas with one labelled rectangle per prompt object, and "SYNTHETIC SCENE" written
on it. Where each rectangle is, and which value an attribute object shows, is the scene's *layout*; it
is drawn, and also written into the PNG (a text chunk, `LAYOUT_KEY`), so that `DrawingReader` reads
back exactly what was drawn: each object present where its rectangle is, its mask the rectangle, the
value drawn scoring above the others, and for a depth prompt a disparity that grows downward (lower
in the picture = nearer). The real rules and verdict (`Evaluator(perception=DrawingReader())`) then
decide each statement, so the demo shows what this scorer decides for such detections: passes, and
failures of every cause. No model runs: nothing here is any text-to-image model's output or any
detector's, and every picture says so.

Four samples per prompt, four layouts (`scene_layout`), so each category has every kind of outcome:
0, the objects left to right, the first the largest and lowest, with the value the prompt's first
statement names; 1, the same with one object left out (the first; for a relation prompt with more
negated than positive statements its last, a target); 2, right to left, sizes and heights reversed;
3, every attribute another value, or a relation's objects stacked top to bottom.

The demo's records are scored once and shipped (`SHIPPED`, 48 prompts × 4 samples: the examples'
prompts, `validation.examples.example_prompts`), so `serve --demo` starts without scoring; the scenes
themselves are drawn when a page asks for them (`SceneImages`). tests/space/test_demo_scenes.py scores
the scenes again and fails, saying how to write them anew (`python -m space.demo_scenes`), when the
shipped records are not what this scorer gives.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont, PngImagePlugin

from dataset_builder.records import PromptIndex, PromptRecord
from dataset_builder.vocabulary import CATEGORY_VOCABULARY
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.results import ResultRecord
from leaderboard.store.image_sources import ImagesUnreachable

SHIPPED = Path(__file__).resolve().parent / "data" / "demo_scenes.jsonl"
SCENES_KEY = "synthetic_scenes"  # the demo entry's model key and images split

SCENE_SIZE = (384, 256)
SAMPLES = 4
LAYOUT_KEY = "negt2ibench-demo-layout"
SCENE_LABEL = "SYNTHETIC SCENE - not a model's output"
FILLS = ((86, 180, 233), (230, 159, 0), (0, 158, 115), (204, 121, 167), (213, 94, 0))  # Okabe-Ito
COLOR_FILLS = {
    "red": (200, 30, 30),
    "orange": (240, 140, 20),
    "yellow": (235, 210, 40),
    "green": (40, 150, 60),
    "blue": (40, 80, 200),
    "purple": (120, 50, 160),
    "pink": (240, 150, 190),
    "brown": (120, 75, 40),
    "black": (20, 20, 20),
    "white": (250, 250, 250),
}
SHOWN_SCORE, OTHER_SCORE = 30.0, 10.0  # the value drawn, every other value of its category (100 × cosine)


@dataclass(frozen=True)
class DrawnObject:
    """One rectangle of a scene: the prompt object it stands for, where it is, the value it shows ("" none)."""

    name: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels, x1 and y1 excluded
    value: str = ""


def _other_value(prompt: PromptRecord) -> str:
    named = {statement.predicate for statement in prompt.statements}
    return next(value for value in CATEGORY_VOCABULARY[prompt.category] if value not in named)


def _row_box(slot: int, count: int, rank: int, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """A rectangle in column SLOT of COUNT; rank 0 is the largest and lowest (nearest), later ranks smaller, higher."""
    width, height = size
    column = width // max(count, 1)
    x0 = slot * column + column // 8
    bottom = int(height * (0.86 - 0.07 * rank))
    top = bottom - int(height * (0.5 - 0.08 * rank))
    return (x0, top, x0 + column * 3 // 4 - 4 * rank, bottom)


def _stacked_box(slot: int, count: int, size: tuple[int, int]) -> tuple[int, int, int, int]:
    width, height = size
    row = (height - 30) // max(count, 1)
    return (width // 3, 8 + slot * row, width * 2 // 3, 8 + slot * row + row * 3 // 4)


def scene_layout(prompt: PromptRecord, sample: int, size: tuple[int, int] = SCENE_SIZE) -> list[DrawnObject]:
    """The rectangles of one sample's scene (the module's docstring says which sample is which).

    Args:
        prompt: the scene's prompt.
        sample: its sample index, 0 to 3.
        size: the canvas (width, height).

    Returns:
        One rectangle per object drawn, in the prompt's order of objects.
    """
    count = len(prompt.objects)
    value = prompt.statements[0].predicate if prompt.kind == "attribute" else ""
    if sample == 3 and prompt.kind == "attribute":
        value = _other_value(prompt)
    drawn = []
    for index, name in enumerate(prompt.objects):
        if sample == 3 and prompt.kind == "relation":
            box = _stacked_box(index, count, size)
        elif sample == 2:
            box = _row_box(count - 1 - index, count, count - 1 - index, size)
        else:
            box = _row_box(index, count, index, size)
        drawn.append(DrawnObject(name, box, value))
    if sample == 1:
        left_out = count - 1 if prompt.kind == "relation" and prompt.num_neg > prompt.num_pos else 0
        drawn.pop(left_out)
    return drawn


def draw_scene(prompt: PromptRecord, layout: Sequence[DrawnObject], size: tuple[int, int] = SCENE_SIZE) -> bytes:
    """The scene as PNG bytes, its layout in the PNG's text chunk `LAYOUT_KEY`.

    Args:
        prompt: the scene's prompt (its category picks the fills: a color prompt's rectangle is its value).
        layout: the rectangles to draw (`scene_layout`).
        size: the canvas (width, height).

    Returns:
        The PNG file's bytes.
    """
    width, height = size
    ramp = np.linspace(150, 205, height, dtype=np.uint8)[:, None, None].repeat(width, 1).repeat(3, 2)
    image = Image.fromarray(ramp)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=13)
    for index, obj in enumerate(layout):
        fill = COLOR_FILLS.get(obj.value, FILLS[index % len(FILLS)]) if prompt.category == "color" else None
        x0, y0, x1, y1 = obj.box
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=fill or FILLS[index % len(FILLS)], outline=(40, 40, 40), width=2)
        label = f"{obj.name} ({obj.value})" if obj.value else obj.name
        draw.text((x0 + 4, y0 + 4), label, fill=(20, 20, 20), font=font)
    draw.rectangle((0, height - 20, width, height), fill=(255, 255, 255))
    draw.text((6, height - 17), SCENE_LABEL, fill=(180, 0, 0), font=ImageFont.load_default(size=12))
    info = PngImagePlugin.PngInfo()
    info.add_text(LAYOUT_KEY, json.dumps([asdict(obj) for obj in layout]))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def read_layout(image: Image.Image) -> list[DrawnObject] | None:
    """The layout a scene's PNG carries (`draw_scene`), or None for any other picture."""
    text = (getattr(image, "info", None) or {}).get(LAYOUT_KEY)
    if not isinstance(text, str):
        return None
    return [DrawnObject(item["name"], tuple(item["box"]), item.get("value", "")) for item in json.loads(text)]


class DrawingReader:
    """The demo's perception: what a synthetic scene's PNG says was drawn, as `Perception.observe` gives it.

    A picture without a layout (not one of the demo's scenes) has nothing in it.
    """

    def observe(self, images: Sequence[Any], prompts: Sequence[PromptRecord]) -> list[ImageObservation]:
        """One observation per (image, prompt).

        Args:
            images: the scenes (PIL images opened from `draw_scene`'s PNGs; a PIL image without a layout has
                nothing in it).
            prompts: their prompts, in the same order.

        Returns:
            Each prompt object present where its rectangle is drawn, absent where none is.
        """
        return [_observation(image, prompt) for image, prompt in zip(images, prompts, strict=True)]


def _observation(image: Image.Image, prompt: PromptRecord) -> ImageObservation:
    width, height = image.size
    observation = ImageObservation(width=width, height=height)
    if prompt.category == "depth":  # lower in the picture = nearer
        observation.disparity = np.tile(np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None], (1, width))
    drawn = {obj.name: obj for obj in read_layout(image) or []}
    for name in prompt.objects:
        obj = drawn.get(name)
        if obj is None:
            observation.objects[name] = ObjectObservation(name=name, present=False)
            continue
        x0, y0, x1, y1 = obj.box
        mask = np.zeros((height, width), dtype=bool)
        mask[y0:y1, x0:x1] = True
        scores = None
        if prompt.kind == "attribute":
            scores = {v: SHOWN_SCORE if v == obj.value else OTHER_SCORE for v in CATEGORY_VOCABULARY[prompt.category]}
        observation.objects[name] = ObjectObservation(
            name=name,
            present=True,
            confidence=0.9,
            box=(float(x0), float(y0), float(x1), float(y1)),
            mask=mask,
            value_scores=scores,
            count=1,
        )
    return observation


class SceneImages:
    """The demo's scenes as an image source (`leaderboard.store.image_sources.ImageSource`), drawn when asked."""

    def __init__(self, prompts: PromptIndex):
        self.prompts = prompts

    def images(self, keys: Sequence[tuple[str, int]]) -> Iterator[tuple[tuple[str, int], Image.Image]]:
        """Each key's scene (prompt id, sample index).

        Args:
            keys: the (prompt id, sample index) pairs asked for.

        Yields:
            Each key with its scene, in the order asked.

        Raises:
            ImagesUnreachable: a key that names no scene of the demo.
        """
        for prompt_id, sample in keys:
            if prompt_id not in self.prompts or not 0 <= int(sample) < SAMPLES:
                raise ImagesUnreachable(f"images not reachable: the demo drew no scene {prompt_id} {sample}")
            prompt = self.prompts[prompt_id]
            yield (prompt_id, sample), Image.open(io.BytesIO(draw_scene(prompt, scene_layout(prompt, int(sample)))))


def score_scenes(prompts: Sequence[PromptRecord]) -> list[ResultRecord]:
    """Every scene of PROMPTS scored by the real rules and verdict, the scenes read by `DrawingReader`.

    Args:
        prompts: the scenes' prompts (the demo's: `validation.examples.example_prompts`).

    Returns:
        One record per prompt and sample, prompt by prompt, without their moment of scoring.
    """
    from negt2ibench.api import Evaluator

    keys = [(prompt, sample) for prompt in prompts for sample in range(SAMPLES)]
    images = [Image.open(io.BytesIO(draw_scene(prompt, scene_layout(prompt, sample)))) for prompt, sample in keys]
    evaluator = Evaluator(perception=DrawingReader(), prompts=list(prompts))
    records = evaluator.score_many(
        images,
        [prompt for prompt, _ in keys],
        model_key=SCENES_KEY,
        sample_indices=[sample for _, sample in keys],
        progress=False,
        num_workers=0,
    )
    return [record.model_copy(update={"scored_at": None}) for record in records]


def shipped_records() -> list[ResultRecord]:
    """The demo's records as shipped (`SHIPPED`)."""
    from evaluator.resultio import read_results

    return read_results(SHIPPED)


def write_shipped(path: Path = SHIPPED) -> Path:
    """Score the demo's scenes again and write them to PATH (`python -m space.demo_scenes`)."""
    from dataset_builder.loading import load_prompts
    from validation.examples import example_prompts

    records = score_scenes(example_prompts(load_prompts(None)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(record.model_dump_json() + "\n" for record in records), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write_shipped()}")
