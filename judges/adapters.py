"""The small interface every judge backend implements: `load()` and `yes_probability(images, questions)`.

An adapter knows nothing of prompts, modes or records: it answers yes/no questions about
images. `judges.runner` turns prompts into questions and answers into records, so a new backend
(another library, an API) is one class with two methods. A backend that can also answer a
multiple-choice question by its option letter (`letter_probabilities`, and `generate` for the
text it would write) runs NegVQA (`judges.negvqa`); the others say so in one line.
"""

from __future__ import annotations

import resource
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PIL import Image

from negt2ibench.core.errors import UserError

from .registry import JudgeSpec

if TYPE_CHECKING:
    import torch


class JudgeAdapter(ABC):
    """A VLM that answers yes/no questions about images with P("yes").

    Subclasses set `device` (a torch.device) and `dtype_name` ("bfloat16" on GPU, "float32"
    on CPU) in `__init__`, before loading, because the run's config hash depends on them.
    """

    spec: JudgeSpec
    batch_size: int
    device: torch.device
    dtype_name: str

    @classmethod
    def require(cls, spec: JudgeSpec, *, download: bool = False) -> None:
        """Check, before anything heavy loads (torch, the model), that SPEC can be loaded here.

        Its weights on disk (unless DOWNLOAD allows fetching them), its optional library installed.
        Default: nothing to check.

        Args:
            spec: the judge to load.
            download: the weights may be fetched from the Hub when absent.

        Raises:
            MissingWeightsError: the weights are not on disk (exit 2), saying what to run.
            MissingLibraryError: the judge's optional library is not installed (exit 2).
        """
        return None

    @abstractmethod
    def load(self) -> None:
        """Load weights (once; later calls do nothing). Missing weights → `MissingWeightsError`."""

    @abstractmethod
    def yes_probability(self, images: Sequence[Image.Image], questions: Sequence[str]) -> list[float]:
        """P("yes") for each (image, question) pair, in order (pairs are batched internally).

        Args:
            images: one image per question.
            questions: yes/no questions.

        Returns:
            P("yes") of each pair, in [0, 1].
        """

    def letter_probabilities(
        self, images: Sequence[Image.Image], questions: Sequence[str], letters: Sequence[str] = ("A", "B")
    ) -> list[tuple[float, ...]]:
        """For each (image, question) pair, each option letter's probability as the answer's first token.

        Over LETTERS only (each tuple sums to 1).

        Args:
            images: one image per question.
            questions: multiple-choice questions.
            letters: the option letters.

        Returns:
            One tuple per pair, a probability per letter, in LETTERS' order.

        Raises:
            UserError: this adapter answers yes/no only.
        """
        raise UserError(f"judge {self.spec.key} answers yes/no questions only: it cannot read an option letter")

    def generate(self, images: Sequence[Image.Image], questions: Sequence[str], max_new_tokens: int = 8) -> list[str]:
        """The text the model writes for each pair, greedily (deterministic).

        Args:
            images: one image per question.
            questions: the questions.
            max_new_tokens: the longest reply, in tokens.

        Returns:
            Each pair's reply.

        Raises:
            UserError: this adapter cannot generate free text.
        """
        raise UserError(f"judge {self.spec.key} cannot generate free text")

    def reset_peak_memory(self) -> None:
        """Start a fresh peak-memory count (GPU only: a process's peak RSS cannot be reset)."""
        import torch

        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    def peak_memory(self) -> tuple[int, str]:
        """The peak memory of this judge's device so far.

        Returns:
            (bytes, kind): `torch.cuda.max_memory_allocated` on GPU ("cuda"), else the process's peak
            RSS ("rss").
        """
        import torch

        if self.device.type == "cuda":
            return int(torch.cuda.max_memory_allocated(self.device)), "cuda"
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "rss"  # Linux: KiB


def pairs_in_batches(
    images: Sequence[Image.Image], questions: Sequence[str], batch_size: int
) -> list[tuple[list[Image.Image], list[str]]]:
    """(images, questions) chunks of at most `batch_size` pairs, in order.

    Args:
        images: one image per question.
        questions: the questions.
        batch_size: the most pairs in a chunk.

    Returns:
        The chunks.

    Raises:
        ValueError: not one image per question.
    """
    if len(images) != len(questions):
        raise ValueError(f"{len(images)} images but {len(questions)} questions: one image per question")
    return [
        (list(images[start : start + batch_size]), list(questions[start : start + batch_size]))
        for start in range(0, len(questions), batch_size)
    ]
