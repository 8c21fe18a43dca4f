"""What a judge is asked for a NegVQA question, and the record of its answer.

The prompt is the one NegVQA's authors ran their 20 models with (the seed's §3.1; VLMEvalKit's
`VMCBenchDataset.build_prompt`, which they used: "Question: ...", the options one per line, then
"Answer with the option's letter from the given choices directly. " and a newline), after the
image, in the judge's own chat template. The answer is the likelier of the two letters as the first
token of the judge's reply (`JudgeAdapter.letter_probabilities`: deterministic, no sampling, no
parsing); a tie goes to A. With `--generate` the greedy reply is also written and its letter read
(`generated_letter`; null when it names neither), so a letter the judge would *write* otherwise is
seen.

One record per question and form: the negated question in ``OUT.jsonl``, its affirmative original
in ``OUT.original.jsonl`` (`--original`). Files are appended to, resumed and merged by
`evaluator.resultio` (`runner.NEGVQA_FILES` is their `evaluator.engine.RecordFiles`); this module
imports no model library, so `negvqa summary` and `agree --negvqa` run without torch.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evaluator.resultio import read_results

from ..registry import JudgeSpec
from ..yesno import LETTER_SPELLINGS

# Bump when the prompt, the letter rule or the record layout changes (every record's `evaluator_version`).
NEGVQA_VERSION = "negvqa-1.0.0"
FORMS = ("negated", "original")
LETTERS = ("A", "B")
PROMPT = (
    "Question: {question}\nOptions:\nA. {A}\nB. {B}\n"
    "Answer with the option's letter from the given choices directly. \n"  # VLMEvalKit's space and newline
)
MAX_NEW_TOKENS = 8  # `--generate`: a letter, perhaps with a period or the option's text after it
Key = tuple[str, str, int]
Form = Literal["negated", "original"]
Letter = Literal["A", "B"]


def prompt_text(question: str, choices: Sequence[str]) -> str:
    """The text after the image: the question, the two options, the instruction (`PROMPT`).

    Args:
        question: the question.
        choices: its two options, A then B.

    Returns:
        The prompt.
    """
    first, second = choices
    return PROMPT.format(question=question, A=first, B=second)


def likelier(probabilities: Sequence[float]) -> str:
    """The letter with the higher probability (A on a tie).

    Args:
        probabilities: A's and B's probabilities.

    Returns:
        "A" or "B".
    """
    return LETTERS[0] if probabilities[0] >= probabilities[1] else LETTERS[1]


_LEADING_LETTER = re.compile(r"^\W*(?:answer\s*(?:is)?\s*[:：]?\s*)?\(?([AB])(?![A-Za-z])", re.IGNORECASE)


def generated_letter(text: str, choices: Sequence[str]) -> str | None:
    """The option a written reply names.

    A leading capital A or B ("B", "(A)", "B. red", "Answer: A"), else a reply that is one option's
    text (lower-case "a" is the article).

    Args:
        text: the reply.
        choices: the two options, A then B.

    Returns:
        "A" or "B", or None when it names neither.
    """
    found = _LEADING_LETTER.match(text)
    if found and found[1].isupper():
        return found[1]
    reply = text.strip().rstrip(".").strip().lower()
    named = [letter for letter, choice in zip(LETTERS, choices, strict=True) if reply and reply == choice.lower()]
    return named[0] if len(named) == 1 else None


def negvqa_settings(spec: JudgeSpec, *, dtype: str, generate: bool) -> dict[str, Any]:
    """What a run's answers depend on: hashed into every record's `config_hash`.

    Args:
        spec: the judge.
        dtype: the model's dtype.
        generate: whether replies are written too.

    Returns:
        The hub id, revision, family, dtype, prompt, letters' spellings and reply length.
    """
    return {
        "hub_id": spec.hub_id,
        "revision": spec.revision,
        "family": spec.family,
        "dtype": dtype,
        "prompt": PROMPT,
        "letters": {letter: list(LETTER_SPELLINGS[letter]) for letter in LETTERS},
        "generate": MAX_NEW_TOKENS if generate else 0,
    }


def negvqa_config_hash(spec: JudgeSpec, *, dtype: str, generate: bool) -> str:
    """The config hash of a run: SHA-256 of its `negvqa_settings`, as sorted JSON, cut to 16 hex digits.

    Args:
        spec: the judge.
        dtype: the model's dtype.
        generate: whether replies are written too.

    Returns:
        16 hex digits.
    """
    blob = json.dumps(negvqa_settings(spec, dtype=dtype, generate=generate), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class NegVQARecord(BaseModel):
    """One judge's answer to one NegVQA question in one form (docs/negvqa.md#records)."""

    model_config = ConfigDict(extra="forbid")

    judge: str  # the judge's key
    params: str  # its parameter count as labelled ("8B"; "?" when unknown)
    question_id: str
    form: Form
    source: str
    domain: str
    question: str  # the question asked (the prompt is `prompt_text` of it and the choices)
    choices: list[str]
    answer: Letter  # the correct letter
    probabilities: dict[str, float] | None  # each letter's probability as the reply's first token (sum 1)
    letter: Letter | None  # the likelier letter: the judge's answer
    correct: bool | None
    generated: str | None = None  # `--generate`: the greedy reply
    generated_letter: Letter | None = None  # the letter that reply names (None: neither)
    label: str = ""  # where the question came from ("FILE row N")
    evaluator_version: str
    config_hash: str
    error: str | None = None  # why there is no answer (a bad image, a failed forward)

    @property
    def key(self) -> Key:
        return (self.judge, self.question_id, 0)

    @property
    def passed(self) -> bool:
        return bool(self.correct)

    @property
    def disagrees(self) -> bool | None:
        """Whether the written reply names another letter than the scores (None without a reply)."""
        return None if self.generated is None else self.generated_letter != self.letter


def read_negvqa_records(path: str | Path, *, strict: bool = True) -> list[NegVQARecord]:
    """Every record of a file written by `negt2ibench negvqa`, in file order.

    Args:
        path: the JSONL file.
        strict: a torn last line (a killed writer) is an error too; else it is dropped with a warning.

    Returns:
        The records.

    Raises:
        ResultFileError: a malformed line ("path:line: reason").
    """
    return read_results(path, strict=strict, record_type=NegVQARecord)


def original_path(out: str | Path) -> Path:
    """Where the originals of ``--out OUT.jsonl`` go: ``OUT.original.jsonl``.

    Args:
        out: the negated questions' file.

    Returns:
        The originals' file, beside it.
    """
    out = Path(out)
    return out.with_name(f"{out.stem}.original{out.suffix or '.jsonl'}")
