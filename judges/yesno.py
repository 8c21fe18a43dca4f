"""P("yes") from a model's next-token logits, restricted to its yes/no tokens (docs/validation.md).

A chat model may start its answer with "Yes", "yes", " Yes", "YES", ...; which of these are
single tokens depends on the tokenizer. `find_yes_no_tokens` keeps every variant that encodes to
exactly one token (and decodes back to the word), and `yes_no_probabilities` sums each side's
probability: p_yes = Σ exp(l_yes) / (Σ exp(l_yes) + Σ exp(l_no)), computed with log-sum-exp in
float32 so bf16 logits neither overflow nor lose the small side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from negt2ibench.core.errors import UserError

if TYPE_CHECKING:
    import torch

YES_VARIANTS: tuple[str, ...] = ("yes", "Yes", "YES", " yes", " Yes", " YES")
NO_VARIANTS: tuple[str, ...] = ("no", "No", "NO", " no", " No", " NO")


@dataclass(frozen=True)
class YesNoTokens:
    """The single-token spellings of "yes" and "no" in one tokenizer (ids and the variants)."""

    yes_ids: tuple[int, ...]
    no_ids: tuple[int, ...]
    yes_variants: tuple[str, ...]
    no_variants: tuple[str, ...]


def _single_tokens(tokenizer: Any, variants: tuple[str, ...]) -> tuple[list[int], list[str]]:
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


def find_yes_no_tokens(tokenizer: Any, *, model: str = "this model") -> YesNoTokens:
    """Every single-token yes/no variant of `tokenizer`; a `UserError` when a side has none."""
    yes_ids, yes_found = _single_tokens(tokenizer, YES_VARIANTS)
    no_ids, no_found = _single_tokens(tokenizer, NO_VARIANTS)
    if not yes_ids or not no_ids:
        missing = "yes" if not yes_ids else "no"
        raise UserError(
            f"the tokenizer of {model} has no single token for {missing!r} (tried {', '.join(map(repr, YES_VARIANTS))} "
            f"and the same for no): a judge needs a yes/no vocabulary"
        )
    if set(yes_ids) & set(no_ids):
        raise UserError(f"the tokenizer of {model} maps 'yes' and 'no' to the same token")
    return YesNoTokens(tuple(yes_ids), tuple(no_ids), tuple(yes_found), tuple(no_found))


def yes_no_probabilities(logits: torch.Tensor, tokens: YesNoTokens) -> tuple[torch.Tensor, torch.Tensor]:
    """(p_yes, p_no), each a float32 tensor of shape (batch,), from next-token logits (batch, vocab).

    The softmax is over the yes/no tokens only, so p_yes + p_no = 1 for every row.
    """
    import torch

    logits = logits.float()
    yes = torch.logsumexp(logits[:, list(tokens.yes_ids)], dim=-1)
    no = torch.logsumexp(logits[:, list(tokens.no_ids)], dim=-1)
    both = torch.softmax(torch.stack([yes, no], dim=-1), dim=-1)
    return both[:, 0], both[:, 1]
