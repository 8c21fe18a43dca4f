"""A judge double whose letter scores are set by hand: `ScriptedLetters` stands in for a chat VLM's
forward. It reads the question back from the input ids and puts hand-set logits on the letter
tokens, so the real letter reading of `TransformersJudge` (token ids, log-sum-exp, softmax) is
checked against numbers worked out by hand.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch


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
