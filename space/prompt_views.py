"""Pure views of the prompts that the Explore and Compare tabs both show: the filters (category,
setting, load, object), the pickers' labels and a prompt's header. No gradio, no models, no
store: each is testable on plain data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import SETTINGS, setting_label, setting_name

ANY = "any"
EXPLORE_LIMIT = 1000  # rows shown in the prompt table and the prompt picker
SETTING_CHOICES = [(f"{setting_label(p, n)} ({setting_name(p, n)})", setting_name(p, n)) for p, n in SETTINGS]


def prompt_label(record: PromptRecord) -> str:
    return f"{record.prompt_id}: {record.prompt}"


def _any(value: Any) -> bool:
    return value in (ANY, "", None)


def filter_prompts(
    prompts: Sequence[PromptRecord], category: str = ANY, setting: str = ANY, load: str = ANY, obj: str = ANY
) -> list[PromptRecord]:
    """Prompts matching every filter that is not `any`."""
    return [
        p
        for p in prompts
        if (_any(category) or p.category == category)
        and (_any(setting) or p.setting == setting)
        and (_any(load) or str(p.load) == str(load))
        and (_any(obj) or obj in p.objects)
    ]


def prompt_header(record: PromptRecord) -> str:
    return (
        f"### `{record.prompt_id}`\n\n> {record.prompt}\n\n"
        f"category **{record.category}** ({record.kind}), "
        f"setting **{setting_label(record.num_pos, record.num_neg)}**, "
        f"load {record.load}, objects: {', '.join(record.objects)}; matched group `{record.group_id}`"
    )
