"""An answer's probability from a model's next-token logits, restricted to its answers' tokens
(docs/validation.md): P("yes") against "no" for the yes/no judges, P("A") against "B" for NegVQA.

A chat model may start its answer with "Yes", "yes", " Yes", "YES", ... (or "A", " A"); which of
these are single tokens depends on the tokenizer. `find_choice_tokens` keeps every spelling of
each answer that encodes to exactly one token (and decodes back to the word), and
`choice_probabilities` sums each answer's probability over its spellings:
p_k = Σ exp(l_k) / Σ_j Σ exp(l_j), computed with log-sum-exp in float32 so bf16 logits neither
overflow nor lose the small side. Yes/no is the two-answer case (`find_yes_no_tokens`,
`yes_no_probabilities`); NegVQA's two letters are another (`LETTER_SPELLINGS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from negt2ibench.core.errors import UserError

if TYPE_CHECKING:
    import torch

YES_VARIANTS: tuple[str, ...] = ("yes", "Yes", "YES", " yes", " Yes", " YES")
NO_VARIANTS: tuple[str, ...] = ("no", "No", "NO", " no", " No", " NO")
# An option letter, bare or after a space; lower case is left out ("a" is the article).
LETTER_SPELLINGS: Mapping[str, tuple[str, ...]] = {"A": ("A", " A"), "B": ("B", " B")}


@dataclass(frozen=True)
class ChoiceTokens:
    """The single-token spellings of each answer in one tokenizer, in the answers' order."""

    answers: tuple[str, ...]  # ("yes", "no") or ("A", "B")
    ids: tuple[tuple[int, ...], ...]  # per answer, the token ids of its spellings
    variants: tuple[tuple[str, ...], ...]  # per answer, the spellings found


@dataclass(frozen=True)
class YesNoTokens:
    """The single-token spellings of "yes" and "no" in one tokenizer (ids and the variants)."""

    yes_ids: tuple[int, ...]
    no_ids: tuple[int, ...]
    yes_variants: tuple[str, ...]
    no_variants: tuple[str, ...]

    @property
    def choices(self) -> ChoiceTokens:
        """The same tokens as the two answers ("yes", "no") of `choice_probabilities`."""
        return ChoiceTokens(("yes", "no"), (self.yes_ids, self.no_ids), (self.yes_variants, self.no_variants))


def _single_tokens(tokenizer: Any, variants: Sequence[str]) -> tuple[list[int], list[str]]:
    ids: list[int] = []
    found: list[str] = []
    for variant in variants:
        encoded = tokenizer.encode(variant, add_special_tokens=False)
        if len(encoded) != 1:
            continue
        decoded = tokenizer.decode(encoded).strip().lower()
        if decoded != variant.strip().lower() or encoded[0] in ids:
            continue
        ids.append(int(encoded[0]))
        found.append(variant)
    return ids, found


def find_choice_tokens(
    tokenizer: Any, spellings: Mapping[str, Sequence[str]], *, model: str = "this model", needs: str = "answers"
) -> ChoiceTokens:
    """Every single-token spelling of each answer of SPELLINGS.

    Args:
        tokenizer: the model's tokenizer.
        spellings: {answer: its spellings}.
        model: the model's name, for the error.
        needs: what ends the error's message ("a judge needs a yes/no vocabulary").

    Returns:
        The answers, each one's token ids and the spellings found.

    Raises:
        UserError: an answer has no single-token spelling, or two answers share a token.
    """
    ids, found = [], []
    for answer, variants in spellings.items():
        answer_ids, answer_found = _single_tokens(tokenizer, variants)
        if not answer_ids:
            tried = ", ".join(map(repr, variants))
            raise UserError(f"the tokenizer of {model} has no single token for {answer!r} (tried {tried}): {needs}")
        ids.append(tuple(answer_ids))
        found.append(tuple(answer_found))
    shared = [set(a) & set(b) for position, a in enumerate(ids) for b in ids[position + 1 :]]
    if any(shared):
        raise UserError(f"the tokenizer of {model} maps two of the answers {', '.join(spellings)} to the same token")
    return ChoiceTokens(tuple(spellings), tuple(ids), tuple(found))


def find_yes_no_tokens(tokenizer: Any, *, model: str = "this model") -> YesNoTokens:
    """Every single-token yes/no variant of `tokenizer`.

    Args:
        tokenizer: the model's tokenizer.
        model: the model's name, for the error.

    Returns:
        The yes and no token ids, and the spellings found.

    Raises:
        UserError: a side has no single token.
    """
    needs = "a judge needs a yes/no vocabulary"
    tokens = find_choice_tokens(tokenizer, {"yes": YES_VARIANTS, "no": NO_VARIANTS}, model=model, needs=needs)
    (yes_ids, no_ids), (yes_found, no_found) = tokens.ids, tokens.variants
    return YesNoTokens(yes_ids, no_ids, yes_found, no_found)


def choice_probabilities(logits: torch.Tensor, tokens: ChoiceTokens) -> torch.Tensor:
    """Each answer's probability from next-token logits: the softmax over the answers' tokens only.

    Args:
        logits: next-token logits, (batch, vocab).
        tokens: the answers' tokens (`find_choice_tokens`).

    Returns:
        A float32 tensor (batch, answers); every row sums to 1.
    """
    import torch

    logits = logits.float()
    sides = [torch.logsumexp(logits[:, list(ids)], dim=-1) for ids in tokens.ids]
    return torch.softmax(torch.stack(sides, dim=-1), dim=-1)


def yes_no_probabilities(logits: torch.Tensor, tokens: YesNoTokens) -> tuple[torch.Tensor, torch.Tensor]:
    """(p_yes, p_no) from next-token logits (batch, vocab).

    The softmax is over the yes/no tokens only, so p_yes + p_no = 1 for every row.

    Args:
        logits: next-token logits, (batch, vocab).
        tokens: the yes/no tokens (`find_yes_no_tokens`).

    Returns:
        Two float32 tensors of shape (batch,).
    """
    both = choice_probabilities(logits, tokens.choices)
    return both[:, 0], both[:, 1]
