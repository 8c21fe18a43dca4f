"""Chat VLM judges through transformers' image-text-to-text classes (Qwen-VL, InternVL, any other).

The model is loaded with `AutoModelForImageTextToText` and `AutoProcessor`; each question is
wrapped by the processor's own chat template (one user turn: the image, then the question; the
generation prompt appended), the batch is left-padded so the last position of every row is the
next token, and one forward pass gives the next-token logits of the whole batch: P("yes") against
"no" for the yes/no questions, each option letter against the others for NegVQA's questions
(`judges.yesno.choice_probabilities`, one path for both). `generate` writes the greedy answer (the
same inputs through `model.generate`). bf16 on GPU, fp32 on CPU.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from typing import Any

from PIL import Image

from negt2ibench.core.errors import MissingWeightsError, UserError, brief
from negt2ibench.core.local_files import local_model

from .adapters import JudgeAdapter, pairs_in_batches
from .registry import JudgeSpec
from .yesno import (
    LETTER_SPELLINGS,
    ChoiceTokens,
    YesNoTokens,
    choice_probabilities,
    find_choice_tokens,
    find_yes_no_tokens,
)


def how_to_get(hub_id: str) -> str:
    """How to get a judge's weights onto a machine without them, for `MissingWeightsError`.

    Args:
        hub_id: the model's Hub repo id.

    Returns:
        The instructions, in one paragraph.
    """
    return (
        f"Run the same command with --download on a machine with internet access (or `hf download {hub_id}` "
        f"there, then copy its Hugging Face cache here and set HF_HUB_CACHE), or pass a local model folder "
        f"to --model-id."
    )


def require_weights(spec: JudgeSpec, *, download: bool = False) -> None:
    """Refuse at once when SPEC's model is not on this machine (a disk look, no torch).

    Args:
        spec: the judge.
        download: transformers may fetch the model (nothing is checked).

    Raises:
        MissingWeightsError: not in the Hugging Face cache nor a local folder, saying how to get it.
    """
    if not download and local_model(spec.hub_id, revision=spec.revision) is None:
        raise MissingWeightsError(spec.hub_id, "not in the Hugging Face cache", how_to_get=how_to_get(spec.hub_id))


def load_pretrained(spec: JudgeSpec, *, dtype: Any, device: Any, download: bool = False) -> tuple[Any, Any]:
    """(model, processor) of `spec` from a folder or the Hub cache (the Hub too only with DOWNLOAD).

    Args:
        spec: the judge.
        dtype: the model's torch dtype.
        device: the torch device (a CUDA one is the model's device map).
        download: fetch from the Hub what is not cached.

    Returns:
        The image-text-to-text model and its processor.

    Raises:
        MissingWeightsError: the model or its processor is not here.
        UserError: the repo is no image-text-to-text model.
    """
    from huggingface_hub.errors import LocalEntryNotFoundError
    from transformers import AutoModelForImageTextToText, AutoProcessor

    require_weights(spec, download=download)
    try:
        processor = AutoProcessor.from_pretrained(spec.hub_id, revision=spec.revision, local_files_only=not download)
        model = AutoModelForImageTextToText.from_pretrained(
            spec.hub_id,
            revision=spec.revision,
            dtype=dtype,
            device_map=str(device) if device.type == "cuda" else None,
            local_files_only=not download,
        )
    except (OSError, LocalEntryNotFoundError) as error:
        raise MissingWeightsError(spec.hub_id, brief(error), how_to_get=how_to_get(spec.hub_id)) from None
    except ValueError as error:  # e.g. a repo whose config is no image-text-to-text model
        raise UserError(f"{spec.hub_id} cannot be loaded as an image-text-to-text model: {error}") from None
    return model, processor


class TransformersJudge(JudgeAdapter):
    """A transformers chat VLM answering yes/no questions, batched over (image, question) pairs."""

    @classmethod
    def require(cls, spec: JudgeSpec, *, download: bool = False) -> None:
        """The model must be on this machine, unless DOWNLOAD lets transformers fetch it.

        Args:
            spec: the judge.
            download: the weights may be fetched.

        Raises:
            MissingWeightsError: the model is not here.
        """
        require_weights(spec, download=download)

    def __init__(
        self,
        spec: JudgeSpec,
        *,
        device: str = "auto",
        batch_size: int = 8,
        dtype: str | None = None,
        download: bool = False,
    ):
        import torch

        from negt2ibench.core.launch import select_device, select_dtype
        from negt2ibench.core.options import check, positive_int

        self.spec = spec
        self.download = download
        self.batch_size = check("batch_size", batch_size, positive_int)
        self.device = select_device(device)
        self.torch_dtype = getattr(torch, dtype) if dtype else select_dtype(self.device, spec.dtype)
        self.dtype_name = str(self.torch_dtype).removeprefix("torch.")
        self.model: Any = None
        self.processor: Any = None
        self.tokens: YesNoTokens | None = None
        self._letter_tokens: dict[tuple[str, ...], ChoiceTokens] = {}
        self._keeps_last_logits = False

    @classmethod
    def from_models(cls, model: Any, processor: Any, *, spec: JudgeSpec, batch_size: int = 8) -> TransformersJudge:
        """A judge around models already built (tests: tiny random ones), on CPU in their dtype.

        Args:
            model: an image-text-to-text model.
            processor: its processor.
            spec: the judge's spec.
            batch_size: pairs per forward pass.

        Returns:
            The judge, loaded.

        Raises:
            UserError: the processor has no chat template, or its tokenizer no single yes/no token.
        """
        judge = cls(spec, device="cpu", batch_size=batch_size, dtype=str(model.dtype).removeprefix("torch."))
        judge._attach(model, processor)
        return judge

    def _attach(self, model: Any, processor: Any) -> None:
        if getattr(processor, "chat_template", None) is None:
            raise UserError(f"{self.spec.hub_id} has no chat template: a judge needs a chat (instruct) VLM")
        processor.tokenizer.padding_side = "left"
        self.tokens = find_yes_no_tokens(processor.tokenizer, model=self.spec.hub_id)
        self.model = model.eval()
        self.processor = processor
        self._keeps_last_logits = "logits_to_keep" in inspect.signature(model.forward).parameters

    def load(self) -> None:
        if self.model is not None:
            return
        model, processor = load_pretrained(
            self.spec, dtype=self.torch_dtype, device=self.device, download=self.download
        )
        if self.device.type != "cuda":
            model = model.to(self.device)
        self._attach(model, processor)

    def chat_text(self, question: str) -> str:
        """The exact text the model reads for one question.

        Args:
            question: the question.

        Returns:
            The chat template applied, with the image placeholder in, ready for generation.
        """
        conversation = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        return self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)

    def _inputs(self, images: Sequence[Image.Image], questions: Sequence[str]) -> Any:
        """The processor's batch for these pairs: chat texts, RGB images, left-padded, on the device."""
        return self.processor(
            text=[self.chat_text(question) for question in questions],
            images=[image.convert("RGB") for image in images],
            padding=True,
            padding_side="left",
            return_tensors="pt",
        ).to(device=self.device, dtype=self.torch_dtype)

    def _next_token_logits(self, images: Sequence[Image.Image], questions: Sequence[str]) -> Iterator[Any]:
        """The logits of the answer's first token, (batch, vocab), one batch of pairs at a time."""
        import torch

        self.load()
        extra = {"logits_to_keep": 1} if self._keeps_last_logits else {}
        for batch_images, batch_questions in pairs_in_batches(images, questions, self.batch_size):
            with torch.inference_mode():
                yield self.model(**self._inputs(batch_images, batch_questions), **extra).logits[:, -1, :]

    def yes_probability(self, images: Sequence[Image.Image], questions: Sequence[str]) -> list[float]:
        """P("yes") for each (image, question) pair: the softmax over the yes and no tokens' next-token logits.

        Args:
            images: one image per question.
            questions: yes/no questions.

        Returns:
            P("yes") of each pair, in order.

        Raises:
            ValueError: not one image per question.
        """
        probabilities: list[float] = []
        for logits in self._next_token_logits(images, questions):
            if self.tokens is None:  # `load` finds them or raises
                raise RuntimeError(f"{self.spec.key}: no yes/no tokens after loading")
            probabilities.extend(float(p) for p in choice_probabilities(logits, self.tokens.choices)[:, 0].cpu())
        return probabilities

    def letter_tokens(self, letters: Sequence[str]) -> ChoiceTokens:
        """The single-token spellings of each option letter ("A", " A", ...), found once per letter set.

        Args:
            letters: the option letters.

        Returns:
            The letters' tokens.

        Raises:
            UserError: a letter has no single token, or two share one.
        """
        self.load()
        key = tuple(letters)
        if key not in self._letter_tokens:
            spellings = {letter: LETTER_SPELLINGS.get(letter, (letter, " " + letter)) for letter in key}
            needs = "a multiple-choice answer needs each option letter as a token"
            self._letter_tokens[key] = find_choice_tokens(
                self.processor.tokenizer, spellings, model=self.spec.hub_id, needs=needs
            )
        return self._letter_tokens[key]

    def letter_probabilities(
        self, images: Sequence[Image.Image], questions: Sequence[str], letters: Sequence[str] = ("A", "B")
    ) -> list[tuple[float, ...]]:
        """Each option letter's probability as the answer's first token, over LETTERS only.

        Args:
            images: one image per question.
            questions: multiple-choice questions.
            letters: the option letters.

        Returns:
            One tuple per pair, a probability per letter (summing to 1).

        Raises:
            UserError: a letter has no single token.
            ValueError: not one image per question.
        """
        tokens = self.letter_tokens(letters)
        found: list[tuple[float, ...]] = []
        for logits in self._next_token_logits(images, questions):
            found.extend(tuple(float(p) for p in row) for row in choice_probabilities(logits, tokens).cpu())
        return found

    def generate(self, images: Sequence[Image.Image], questions: Sequence[str], max_new_tokens: int = 8) -> list[str]:
        """The text the model writes for each pair, greedily (deterministic).

        Args:
            images: one image per question.
            questions: the questions.
            max_new_tokens: the longest reply, in tokens.

        Returns:
            Each pair's reply, special tokens left out.

        Raises:
            ValueError: not one image per question.
        """
        import torch

        self.load()
        texts: list[str] = []
        for batch_images, batch_questions in pairs_in_batches(images, questions, self.batch_size):
            inputs = self._inputs(batch_images, batch_questions)
            with torch.inference_mode():
                output = self.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
            new_tokens = output[:, inputs["input_ids"].shape[1] :]
            texts.extend(self.processor.tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
        return texts
