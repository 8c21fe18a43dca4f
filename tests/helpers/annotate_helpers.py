"""Builders for the Annotate tab's tests: a small images dataset, its sample, the answers to give."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from dataset_builder.records import PromptRecord
from validation.questions import prompt_questions
from validation.sample import SampleItem, dataset_candidates, write_sample

SPLIT = "toy_model"


def png(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def color_of(k: int) -> tuple[int, int, int]:
    """A distinct colour per image, so a test can tell which image is shown."""
    return (20 + 40 * (k % 6), 200 - 30 * (k % 5), 60 + 25 * (k % 7))


def images_dataset(folder: Path, prompts: Sequence[PromptRecord], split: str = SPLIT, row_group_size: int = 2) -> Path:
    """images/<split>-00000-of-00001.parquet with one image per prompt (sample 0), several row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "prompt_id": [p.prompt_id for p in prompts],
            "sample_index": pa.array([0] * len(prompts), pa.int32()),
            "image": [{"bytes": png(color_of(k)), "path": None} for k in range(len(prompts))],
            "model_key": [split] * len(prompts),
        }
    )
    (folder / "images").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "images" / f"{split}-00000-of-00001.parquet", row_group_size=row_group_size)
    return folder


def sample_of(folder: Path, prompts: Sequence[PromptRecord], out: Path | None = None) -> list[SampleItem]:
    """The dataset's images as sample lines in prompt order (written to `out` when given)."""
    by_id = {p.prompt_id: p for p in prompts}
    order = {p.prompt_id: k for k, p in enumerate(prompts)}
    items = sorted(dataset_candidates(folder, None, by_id), key=lambda i: order[i.prompt_id])
    if out is not None:
        write_sample(items, out)
    return items


def answer_pattern(prompt: PromptRecord, k: int) -> list[str]:
    """Fixed, varied yes/no answers to the prompt's questions (k picks the pattern)."""
    return ["yes" if (k + i) % 3 else "no" for i in range(len(prompt_questions(prompt)))]


def expected_record(prompt: PromptRecord, answers: Sequence[str]) -> tuple[dict[str, bool], dict[str, bool]]:
    """(objects, statements) an annotation record holds for these answers."""
    objects, statements = {}, {}
    for question, answer in zip(prompt_questions(prompt), answers, strict=True):
        (objects if question.kind == "object" else statements)[question.key] = answer == "yes"
    return objects, statements
