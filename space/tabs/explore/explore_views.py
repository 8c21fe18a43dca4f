"""Pure views of the Explore tab: the matching prompts as a table and their count, a prompt's
statements and its matched group. No gradio, no models, no store: each is testable on plain data.
The filters, the pickers' labels and a prompt's header, which Compare shows too, are
`space.prompt_views`."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import setting_label
from space.prompt_views import EXPLORE_LIMIT

PROMPT_COLUMNS = ["prompt_id", "setting", "prompt"]
STATEMENT_COLUMNS = ["#", "polarity", "subject", "target", "predicate", "sentence"]


def prompts_frame(prompts: Sequence[PromptRecord]) -> pd.DataFrame:
    rows = [
        {"prompt_id": p.prompt_id, "setting": setting_label(p.num_pos, p.num_neg), "prompt": p.prompt} for p in prompts
    ]
    return pd.DataFrame(rows, columns=PROMPT_COLUMNS)


def matches_note(count: int) -> str:
    return f"{count} prompts" + (f" (first {EXPLORE_LIMIT} shown)" if count > EXPLORE_LIMIT else "")


def statements_frame(record: PromptRecord | None) -> pd.DataFrame:
    from dataset_builder.grammar import statement_sentence

    rows = [
        {
            "#": s.index,
            "polarity": s.polarity,
            "subject": s.subject,
            "target": s.target or "",
            "predicate": s.predicate,
            "sentence": statement_sentence(prompt, s),
        }
        for prompt in ([record] if record else [])
        for s in prompt.statements
    ]
    return pd.DataFrame(rows, columns=STATEMENT_COLUMNS)


def group_frame(record: PromptRecord | None, prompts: Sequence[PromptRecord]) -> pd.DataFrame:
    """The other prompts of the record's matched group (same content, other polarities)."""
    return prompts_frame([p for p in prompts if record is not None and p.group_id == record.group_id])
