"""A synthetic NegVQA in the authors' own format, and a judge double whose letter scores are set by hand.

`negvqa_rows` are rows as add_negation.ipynb writes `NegVQA-7379.jsonl` (VMCBench's `index`,
`category`, `image`; `original_question`, `negated_question`, `A`, `B`, `original_answer`,
`negated_answer`), with real photographs from `skimage.data` as base64 PNG (VLMEvalKit's image
cells). The questions are made up for the tests and labelled as such; their answers are whatever
the tests need. `ScriptedLetters` is a stand-in for a chat VLM's forward: it reads the question
back from the input ids and puts hand-set logits on the letter tokens, so the real letter reading
of `TransformersJudge` (token ids, log-sum-exp, softmax) is checked against numbers worked out by hand.
"""

from __future__ import annotations

import base64
import io
import json
import time
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import torch
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
SOURCES_OF = {row[0]: row[1] for row in QUESTIONS}


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


class ScriptedLetters(torch.nn.Module):
    """A chat VLM's forward with hand-set next-token logits: the row whose text holds a key of
    LOGITS gets (logit of "A", logit of "B") there, every other token -30. `generate` writes the
    reply of REPLIES whose key the text holds."""

    def __init__(self, tokenizer, logits: dict[str, tuple[float, float]], replies: dict[str, str] | None = None):
        super().__init__()
        self.tokenizer = tokenizer
        self.table = logits
        self.replies = replies or {}
        self.letter_ids = tokenizer.convert_tokens_to_ids(["A", "B"])
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # a parameter, so the module has a device and a dtype

    @property
    def dtype(self) -> torch.dtype:
        return self.anchor.dtype

    def _text(self, ids: torch.Tensor) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    @staticmethod
    def _find(table: dict, text: str):
        return next(value for key, value in table.items() if key in text)

    def forward(self, input_ids: torch.Tensor, **inputs) -> SimpleNamespace:
        logits = torch.full((*input_ids.shape, len(self.tokenizer)), -30.0)
        for row, ids in enumerate(input_ids):
            a, b = self._find(self.table, self._text(ids))
            logits[row, -1, self.letter_ids[0]], logits[row, -1, self.letter_ids[1]] = a, b
        return SimpleNamespace(logits=logits)

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, **inputs) -> torch.Tensor:
        replies = [self.tokenizer.encode(self._find(self.replies, self._text(ids))) for ids in input_ids]
        width = max(len(reply) for reply in replies)
        padded = [reply + [self.tokenizer.pad_token_id or 0] * (width - len(reply)) for reply in replies]
        return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype)], dim=1)


def scripted_judge(logits: dict[str, tuple[float, float]], replies: dict[str, str] | None = None, batch_size: int = 4):
    """`TransformersJudge` around `ScriptedLetters` and a tiny Qwen2-VL processor (the real chat text,
    tokenizer and letter reading; no model weights)."""
    from transformers import Qwen2VLProcessor

    from judges.registry import REGISTRY
    from judges.transformers_judge import TransformersJudge
    from tests.helpers.judge_helpers import QWEN_SPECIAL, _qwen_processor, tiny_tokenizer

    processor = _qwen_processor(Qwen2VLProcessor, tiny_tokenizer(QWEN_SPECIAL), patch_size=14, merge_size=2)
    model = ScriptedLetters(processor.tokenizer, logits, replies)
    return TransformersJudge.from_models(model, processor, spec=REGISTRY["qwen2_5_vl_7b"], batch_size=batch_size)


class FixedLetters(JudgeAdapter):
    """A judge double answering by question text with set letter probabilities (no model at all):
    the first key of ANSWERS the prompt holds gives its (p_A, p_B). After `hang_after` calls it hangs
    until killed (the interrupted-run test)."""

    def __init__(self, answers: dict[str, tuple[float, float]], *, key="fixed", batch_size=2, hang_after=None):
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
