"""Test doubles and data builders for the Space tests (no models, no network)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import CATEGORY_VOCABULARY, SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION, PRESETS
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.results import scored_now

Box = tuple[int, int, int, int]


class RectanglePerception:
    """Perception double: every prompt object is a filled rectangle the test places.

    Objects without a box are laid out left to right in equal columns (so the first object is
    left of the second, and so on). `values` gives an object's attribute value (default: the
    predicate of the prompt's first statement); its score is 30, every other value 10.
    `absent` objects are not found; `all_absent` finds nothing at all, nor does a flat
    single-colour image (an empty scene, like the images of `write_images_dataset`). Disparity grows downward
    (lower in the image = nearer), so a box lower in the picture is in front.
    """

    def __init__(
        self,
        boxes: dict[str, Box] | None = None,
        values: dict[str, str] | None = None,
        absent: Iterable[str] = (),
        all_absent: bool = False,
    ):
        self.boxes = dict(boxes or {})
        self.values = dict(values or {})
        self.absent = set(absent)
        self.all_absent = all_absent
        self.calls = 0

    def _box(self, index: int, count: int, width: int, height: int) -> Box:
        column = width // max(count, 1)
        x0 = index * column + column // 6
        return (x0, height // 3, x0 + column * 2 // 3, height * 2 // 3)

    def observe(self, images: list[Image.Image], prompts: list[PromptRecord]) -> list[ImageObservation]:
        self.calls += 1
        observations = []
        for image, prompt in zip(images, prompts, strict=False):
            width, height = image.size
            observation = ImageObservation(width=width, height=height)
            pixels = np.asarray(image)
            empty_scene = self.all_absent or bool((pixels == pixels[0, 0]).all())
            if prompt.category == "depth":
                observation.disparity = np.tile(np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None], (1, width))
            for index, name in enumerate(prompt.objects):
                if empty_scene or name in self.absent:
                    observation.objects[name] = ObjectObservation(name=name, present=False)
                    continue
                x0, y0, x1, y1 = self.boxes.get(name) or self._box(index, len(prompt.objects), width, height)
                mask = np.zeros((height, width), dtype=bool)
                mask[y0:y1, x0:x1] = True
                scores = None
                if prompt.kind == "attribute":
                    chosen = self.values.get(name, prompt.statements[0].predicate)
                    scores = {v: (30.0 if v == chosen else 10.0) for v in CATEGORY_VOCABULARY[prompt.category]}
                observation.objects[name] = ObjectObservation(
                    name=name,
                    present=True,
                    confidence=0.9,
                    box=(float(x0), float(y0), float(x1), float(y1)),
                    mask=mask,
                    value_scores=scores,
                    count=1,
                )
            observations.append(observation)
        return observations


def scene_png(path: Path, size: tuple[int, int] = (256, 192)) -> Path:
    """An image with some content (a gradient), which the perception double populates."""
    gradient = np.linspace(0, 255, size[0], dtype=np.uint8)[None, :, None].repeat(size[1], 0).repeat(3, 2)
    Image.fromarray(gradient).save(path)
    return path


def png_bytes(size: tuple[int, int] = (96, 64), color: tuple[int, int, int] = (200, 180, 160)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def result_line(
    prompt: PromptRecord,
    sample_index: int,
    model_key: str,
    *,
    passed: bool,
    version: str = EVALUATOR_VERSION,
    config_hash: str | None = None,
) -> dict:
    """A result record as a dict, as `negt2ibench score` writes it (space/test_submissions checks
    that): every object present and every statement satisfied when `passed`, else every object
    missing (each statement fails for its subject)."""
    statements = [
        {
            "index": s.index,
            "polarity": s.polarity,
            "satisfied": passed,
            "cause": None if passed else "subject_missing",
            "observed": [],
            "measurements": {},
            "dead_zone_pass": False,
        }
        for s in prompt.statements
    ]
    objects = [
        {"name": name, "present": passed, "confidence": 0.9 if passed else 0.0, "box": None} for name in prompt.objects
    ]
    return {
        "prompt_id": prompt.prompt_id,
        "model_key": model_key,
        "sample_index": sample_index,
        "passed": passed,
        "objects": objects,
        "statements": statements,
        "evaluator_version": version,
        "config_hash": config_hash or PRESETS["current"].config_hash,
        "error": None,
        "evaluator": f"negt2ibench/{PRESETS['current'].name}",
        "score": 1.0 if passed else 0.0,  # share of objects and statements satisfied
        "scored_at": scored_now(),  # the tests' fixed moment (SOURCE_DATE_EPOCH, tests/conftest.py)
    }


def write_results(
    path: Path,
    prompts: Sequence[PromptRecord],
    model_key: str,
    *,
    passed: Callable[[PromptRecord, int], bool] | bool = False,
    samples: int = SAMPLES_PER_PROMPT,
    **overrides,
) -> Path:
    """Write a full results JSONL (every prompt × sample) quickly: one JSON encoding per prompt
    and verdict, the sample index substituted into the text."""
    marker = '"sample_index": -1'
    with path.open("w", encoding="utf-8") as handle:
        for prompt in prompts:
            encoded: dict[bool, str] = {}
            for sample in range(samples):
                ok = passed(prompt, sample) if callable(passed) else passed
                if ok not in encoded:
                    encoded[ok] = json.dumps(result_line(prompt, -1, model_key, passed=ok, **overrides))
                handle.write(encoded[ok].replace(marker, f'"sample_index": {sample}', 1) + "\n")
    return path


def write_images_dataset(
    folder: Path, prompts: Sequence[PromptRecord], split: str, samples: int = SAMPLES_PER_PROMPT
) -> Path:
    """A local folder laid out as the Hub images repo: images/<split>-00000-of-00001.parquet
    (one small PNG shared by every row, so it is quick to write)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = {"bytes": png_bytes(), "path": None}
    rows = [(p.prompt_id, s) for p in prompts for s in range(samples)]
    table = pa.table(
        {
            "prompt_id": [r[0] for r in rows],
            "sample_index": pa.array([r[1] for r in rows], pa.int32()),
            "image": [image] * len(rows),
            "model_key": [split] * len(rows),
        }
    )
    (folder / "images").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "images" / f"{split}-00000-of-00001.parquet", row_group_size=2048)
    return folder


class ToggleImages:
    """An images factory (`leaderboard.intake.submissions.ImageSourceFactory`) that is unreachable until
    `reachable` is set; `opened` counts the attempts."""

    def __init__(self, folder: Path):
        self.folder, self.reachable, self.opened = folder, False, 0

    def __call__(self, repo_id: str, revision: str, split: str):
        from leaderboard.intake.submissions import ImagesUnreachable, ParquetImages

        self.opened += 1
        if not self.reachable:
            raise ImagesUnreachable("images not reachable: offline")
        return ParquetImages.from_folder(self.folder, split)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait until `condition()` holds (polling state, not sleeping a fixed time); fail after `timeout`."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


PINNED_COMMIT = "c" * 40


def pinned_commit(repo_id: str, revision: str) -> str:
    """The Hub's commit of a revision, as a submission pins it, for tests that cannot ask the Hub."""
    return PINNED_COMMIT
