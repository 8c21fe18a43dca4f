"""Tiny random-weight Mask2Former and CLIP for GenEval's perception, built offline, and GenEval folders.

As in `tests.helpers.perception_helpers`, random weights make detections arbitrary: tests built on these check
mechanics (loading, selection, batching, resume, error rows), never what a real model would see.
"""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path

import torch

from tests.helpers.generation_helpers import tiny_tokenizer
from tests.helpers.perception_helpers import random_image

# Classes the tiny Mask2Former "sees": its class head only scores these (random weights see nothing).
VISIBLE = ("dog", "cat", "cup", "bench")


def coco_labels() -> dict[int, str]:
    """The 80 COCO instance labels as Mask2Former's Hub configs spell them (`mouse`, `remote`, ...)."""
    from rfdetr.assets.coco_classes import COCO_CLASSES

    return dict(enumerate(COCO_CLASSES.values()))


@cache
def tiny_mask2former(visible: tuple[str, ...] = VISIBLE):
    """(model, processor): a Swin Mask2Former of ~120k parameters whose class head favours VISIBLE."""
    from transformers import (
        Mask2FormerConfig,
        Mask2FormerForUniversalSegmentation,
        Mask2FormerImageProcessor,
        SwinConfig,
    )

    from evaluator.models.detector import COCO_TO_BENCHMARK_NAME

    torch.manual_seed(0)
    labels = coco_labels()
    backbone = SwinConfig(
        image_size=64,
        patch_size=4,
        embed_dim=8,
        depths=[1, 1, 1, 1],
        num_heads=[1, 1, 1, 1],
        window_size=4,
        out_features=["stage1", "stage2", "stage3", "stage4"],
    )
    config = Mask2FormerConfig(
        backbone_config=backbone,
        feature_size=32,
        mask_feature_size=32,
        hidden_dim=32,
        encoder_feedforward_dim=32,
        encoder_layers=1,
        decoder_layers=2,
        num_attention_heads=2,
        dim_feedforward=32,
        num_queries=12,
        id2label=labels,
        label2id={name: index for index, name in labels.items()},
    )
    model = Mask2FormerForUniversalSegmentation(config).eval()
    benchmark = {COCO_TO_BENCHMARK_NAME.get(name, name): index for index, name in labels.items()}
    head = model.class_predictor
    with torch.no_grad():
        head.weight.mul_(0.0)
        head.bias.fill_(-20.0)
        for name in visible:
            head.weight[benchmark[name]].normal_(0.0, 1.5)
            head.bias[benchmark[name]] = 0.0
    processor = Mask2FormerImageProcessor(size={"shortest_edge": 64, "longest_edge": 96})
    return model, processor


@cache
def tiny_clip():
    """(model, tokenizer, image processor): a CLIP of 32-wide towers, 32 px images, a character vocabulary."""
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer()
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=77,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        ),
        vision_config=dict(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
        ),
        projection_dim=16,
    )
    model = CLIPModel(config).eval()
    processor = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return model, tokenizer, processor


def save_tiny_models(folder: Path) -> tuple[Path, Path]:
    """The tiny Mask2Former and CLIP saved as Hub-style folders (what `--options model=... clip_model=...` reads)."""
    from transformers import CLIPProcessor

    detector, clip = folder / "mask2former", folder / "clip"
    if not (detector / "config.json").is_file():
        model, processor = tiny_mask2former()
        model.save_pretrained(detector)
        processor.save_pretrained(detector)
        clip_model, tokenizer, image_processor = tiny_clip()
        clip_model.save_pretrained(clip)
        CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(clip)
    return detector, clip


def write_geneval_folder(root: Path, prompts, samples: int = 2, size: tuple[int, int] = (80, 64)) -> Path:
    """GenEval's image layout for PROMPTS (GenEvalPrompts): ROOT/{index:05d}/metadata.jsonl + samples/{n:04d}.png."""
    for prompt in prompts:
        folder = root / f"{prompt.index:05d}"
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        (folder / "metadata.jsonl").write_text(json.dumps(dict(prompt.metadata)), encoding="utf-8")
        for sample in range(samples):
            random_image(100 * prompt.index + sample, size).save(folder / "samples" / f"{sample:04d}.png")
    return root


def summary_scores_reference(text: str) -> dict:
    """GenEval's summary_scores.py (djghosh13/geneval@af4902f, evaluation/summary_scores.py), line by line
    with pandas as GenEval runs it: read_json(lines=True) (:22), the correct mean (:30), groupby metadata
    .any() (:29, :31), groupby tag with sort=False and each task's mean (:40-42), np.mean of the task
    scores (:45)."""
    import numpy as np
    import pandas as pd

    df = pd.read_json(io.StringIO(text), orient="records", lines=True)
    tasks = {tag: task_df["correct"].mean() for tag, task_df in df.groupby("tag", sort=False)}
    return {
        "images": len(df),
        "prompts": len(df.groupby("metadata")),
        "images_correct": df["correct"].mean(),
        "prompts_correct": df.groupby("metadata")["correct"].any().mean(),
        "tasks": tasks,
        "overall": np.mean(list(tasks.values())),
    }


def random_geneval_scene(rng, metadata: dict, size: int = 512):
    """Random detections for one GenEval prompt, in both forms: this project's (class → GenEvalDetections)
    and mmdet's (class → float32 (n, 5) arrays of x0, y0, x1, y1, score), with each detection's colour.

    Counts land on, under and over the asked ones; scores straddle both thresholds (float32 0.3 and
    0.9 exactly among them) and never tie; boxes are integer pixels, a position prompt's subject
    placed around its target so that its relation holds about half the time; colours are the asked
    one more often than not. Returns (detections, arrays, colour_of) with colour_of(class, row)."""
    import numpy as np

    from evaluator.geneval import GenEvalDetection
    from evaluator.geneval.config import COLORS
    from evaluator.geneval.prompts import object_names

    includes = metadata.get("include", [])
    names = list(dict.fromkeys([clause["class"] for clause in includes] + [str(rng.choice(object_names()))]))
    asked = {clause["class"]: clause for clause in includes}
    edges = [np.float32(0.3), np.float32(0.9)]
    low = 0.8 if metadata.get("tag") == "counting" else 0.2  # around the task's threshold
    used: set[float] = set()
    detections: dict[str, list] = {}
    arrays: dict[str, np.ndarray] = {}
    colours: dict[tuple[str, bytes], str] = {}
    for name in names:
        want = asked.get(name, {}).get("count", 1)
        count = int(rng.choice([max(want - 1, 0), want, want, want + 1, want + 2, 0]))
        rows = []
        for _ in range(count):
            score = float(edges[rng.integers(2)]) if rng.random() < 0.1 else float(np.float32(rng.uniform(low, 1.0)))
            while score in used:
                score = float(np.float32(rng.uniform(low, 1.0)))
            used.add(score)
            rows.append([*_scene_box(rng, name, metadata, size), score])
        array = np.array(rows, dtype=np.float32).reshape(-1, 5)
        arrays[name] = array
        found = []
        for row in array:
            colour = asked.get(name, {}).get("color") if rng.random() < 0.6 else None
            colour = colour or str(rng.choice(COLORS))
            colours[(name, row.tobytes())] = colour
            found.append(GenEvalDetection(tuple(float(v) for v in row[:4]), float(row[4]), colour))
        detections[name] = found
    return detections, arrays, lambda name, obj: colours[(name, obj[0].tobytes())]


def _scene_box(rng, name: str, metadata: dict, size: int) -> list[int]:
    """An integer box; a position prompt's subject around the centre where its target is drawn."""
    width, height = (int(v) for v in rng.integers(20, 160, size=2))
    includes = metadata.get("include", [])
    position = next((c["position"] for c in includes if c["class"] == name and "position" in c), None)
    targets = {includes[c["position"][1]]["class"] for c in includes if "position" in c}
    if name in targets:
        cx, cy = (size // 2 + int(v) for v in rng.integers(-40, 41, size=2))
    elif position is None:
        cx, cy = (int(v) for v in rng.integers(width, size - width, size=2))
    else:
        step = int(rng.integers(0, 140))
        dx, dy = {"left of": (-step, 0), "right of": (step, 0), "above": (0, -step), "below": (0, step)}[position[0]]
        cx = size // 2 + dx + int(rng.integers(-30, 31))
        cy = size // 2 + dy + int(rng.integers(-30, 31))
    return [cx - width // 2, cy - height // 2, cx + width // 2, cy + height // 2]


class ScriptedGenEvalPerception:
    """GenEval perception double: the detections of each image, in the order the images come
    (a scene list consumed as `observe` is called), whatever the pixels."""

    def __init__(self, scenes):
        self.scenes = list(scenes)
        self.calls: list[int] = []

    def observe(self, images, prompts):
        self.calls.append(len(images))
        taken, self.scenes = self.scenes[: len(images)], self.scenes[len(images) :]
        return [dict(scene) for scene in taken]
