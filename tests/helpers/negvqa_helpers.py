"""A synthetic NegVQA in the authors' own format, and a judge double answering by question text (no
torch needed to import this module; the model double is in negvqa_doubles.py).

`negvqa_rows` are rows as add_negation.ipynb writes `NegVQA-7379.jsonl` (VMCBench's `index`,
`category`, `image`; `original_question`, `negated_question`, `A`, `B`, `original_answer`,
`negated_answer`), with real photographs from `skimage.data` as base64 PNG (VLMEvalKit's image
cells). The questions are made up for the tests and labelled as such; their answers are whatever
the tests need. `FixedLetters` is a whole judge double (set probabilities per question).
"""

from __future__ import annotations

import base64
import io
import json
import time
from functools import cache
from pathlib import Path

from PIL import Image

from judges.adapters import JudgeAdapter
from judges.registry import JudgeSpec

# (skimage.data image, source dataset, negated question, original question, A, B, negated answer, original answer)
QUESTIONS = (
    ("astronaut", "VQAv2", "What is she not wearing?", "What is she wearing?", "a tie", "a suit", "A", "B"),
    ("coffee", "VQAv2", "What is not in the cup?", "What is in the cup?", "coffee", "sand", "B", "A"),
    ("chelsea", "GQA", "Which animal is not shown?", "Which animal is shown?", "a cat", "a dog", "B", "A"),
    ("rocket", "MMMU", "What is the vehicle not?", "What is the vehicle?", "a rocket", "a bus", "B", "A"),
    ("camera", "TextVQA", "What is the man not holding?", "What is the man holding?", "a camera", "a book", "B", "A"),
    ("page", "ChartQA", "Which is not printed here?", "Which is printed here?", "text", "a chart", "B", "A"),
)


@cache
def skimage_png(name: str, side: int = 64) -> bytes:
    """skimage.data's NAME, shrunk to SIDE px on its long side, as PNG bytes."""
    from skimage import data

    image = Image.fromarray(getattr(data, name)())
    image.thumbnail((side, side))
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def negvqa_rows() -> list[dict]:
    """The six synthetic questions as the authors' JSONL rows (image: base64 PNG)."""
    rows = []
    for index, (name, source, negated, original, a, b, negated_answer, original_answer) in enumerate(QUESTIONS):
        rows.append(
            {
                "index": index,
                "category": source,
                "image": base64.b64encode(skimage_png(name)).decode("ascii"),
                "original_question": original,
                "negated_question": negated,
                "A": a,
                "B": b,
                "original_answer": original_answer,
                "negated_answer": negated_answer,
            }
        )
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    """ROWS as a Hub dataset's parquet: the image as `datasets`' ``{bytes, path}`` struct."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = [{**row, "image": {"bytes": base64.b64decode(row["image"]), "path": f"{row['index']}.png"}} for row in rows]
    pq.write_table(pa.Table.from_pylist(table), path, row_group_size=4)
    return path


def write_tsv(path: Path, rows: list[dict]) -> Path:
    """ROWS as VLMEvalKit's TSV (pandas' quoting; a question with a tab and a newline in quotes)."""
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return path


class FixedLetters(JudgeAdapter):
    """A judge double answering by question text with set letter probabilities (no model at all):
    the first key of ANSWERS the prompt holds gives its (p_A, p_B). After `hang_after` calls it hangs
    until killed (the interrupted-run test)."""

    def __init__(self, answers: dict[str, tuple[float, float]], *, key="fixed", batch_size=2, hang_after=None):
        import torch

        self.spec = JudgeSpec(key, "test/fixed-letters", "auto", "1B")
        self.batch_size = batch_size
        self.device = torch.device("cpu")
        self.dtype_name = "float32"
        self.answers = answers
        self.hang_after = hang_after
        self.asked: list[str] = []
        self.calls = 0

    def load(self) -> None:
        pass

    def yes_probability(self, images, questions):
        raise AssertionError("NegVQA asks for letters, not yes/no")

    def letter_probabilities(self, images, questions, letters=("A", "B")):
        self.calls += 1
        while self.hang_after is not None and self.calls > self.hang_after:
            time.sleep(1)
        self.asked.extend(questions)
        return [next(p for key, p in self.answers.items() if key in question) for question in questions]
