"""The dataset card: `DIR/README.md` rendered from the template `dataset_card.md` beside this module
(Jinja2; package data, so an installed wheel renders it too).

Everything the card states about the data (counts, example row, image splits) is computed from
the folder it describes, so a rebuilt or extended folder gets a card that is still true.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq

from negt2ibench.core.atomic import write_atomic

from .corpus import CORPUS_VERSION
from .layout import CARD_FILE, image_splits, split_glob
from .loading import load_prompts
from .records import PromptRecord
from .vocabulary import CATEGORIES, CATEGORY_VOCABULARY, OBJECT_CLASSES, SETTINGS, setting_label, setting_name

CARD_TEMPLATE = Path(__file__).resolve().parent / "dataset_card.md"
# Shown in the card's loading code until the folder is pushed; `push` re-renders with the real id
# and the card keeps it (a comment in the card) when generation re-renders it later.
PLACEHOLDER_REPO_ID = "ORG/NegT2IBench"
_REPO_ID_COMMENT = re.compile(r"<!-- repo_id: ([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*) -->")
# The row the card shows in full: a relation prompt with both polarities.
EXAMPLE_PROMPT_ID = "directional_pos1_neg1_000"


def counts_table(records: Sequence[PromptRecord]) -> dict:
    """Prompt counts by category × setting, with totals (for the card's table)."""
    counts = Counter((r.category, r.setting) for r in records)
    settings = [setting_name(p, n) for p, n in SETTINGS]
    rows = [
        {
            "category": category,
            "cells": [counts[(category, s)] for s in settings],
            "total": sum(counts[(category, s)] for s in settings),
        }
        for category in CATEGORIES
    ]
    column_totals = [sum(counts[(c, s)] for c in CATEGORIES) for s in settings]
    return {
        "labels": [setting_label(p, n) for p, n in SETTINGS],
        "rows": rows,
        "column_totals": column_totals,
        "total": len(records),
    }


def balance_summary(records: Sequence[PromptRecord]) -> list[dict]:
    """Per category: how often the least and most used class occurs over the distinct group draws."""
    summary = []
    for category in CATEGORIES:
        groups = {r.group_id: r.objects for r in records if r.category == category}
        uses = Counter({name: 0 for name in OBJECT_CLASSES})
        uses.update(name for objects in groups.values() for name in objects)
        summary.append(
            {
                "category": category,
                "groups": len(groups),
                "classes": sum(1 for v in uses.values() if v),
                "min": min(uses.values()),
                "max": max(uses.values()),
            }
        )
    return summary


def image_split_summary(dataset_dir: Path) -> list[dict]:
    """Key, files, rows and model id of every image split (read from parquet footers and one column)."""
    summary = []
    for key, paths in image_splits(dataset_dir).items():
        rows = sum(pq.read_metadata(path).num_rows for path in paths)
        model_id = ""
        try:
            column = pq.read_table(paths[0], columns=["model_id"]).column("model_id")
            model_id = str(column[0]) if len(column) else ""
        except (KeyError, ValueError, OSError):
            model_id = ""
        summary.append(
            {
                "key": key,
                "files": len(paths),
                "rows": rows,
                "model_id": model_id,
                "path": split_glob(key),
            }
        )
    return summary


def card_context(
    dataset_dir: Path,
    records: Sequence[PromptRecord],
    repo_id: str = PLACEHOLDER_REPO_ID,
    *,
    images_from: Path | None = None,
) -> dict:
    """Everything the template needs, computed from the folder's data (the image splits from
    `images_from` when given: a rebuild's staging folder gets them only after the card is written)."""
    by_id = {r.prompt_id: r for r in records}
    example = by_id.get(EXAMPLE_PROMPT_ID, records[0] if records else None)
    return {
        "repo_id": repo_id,
        "corpus_version": CORPUS_VERSION,
        "num_prompts": len(records),
        "counts": counts_table(records),
        "balance": balance_summary(records),
        "vocabulary": CATEGORY_VOCABULARY,
        "num_classes": len(OBJECT_CLASSES),
        "example_json": json.dumps(example.model_dump(), indent=2) if example else "{}",
        "examples": [
            by_id[i]
            for i in (
                "color_pos0_neg1_000",
                "material_pos2_neg2_000",
                "directional_pos2_neg2_000",
                "proximity_pos1_neg0_000",
                "comparative_pos0_neg2_000",
                "depth_pos2_neg1_000",
            )
            if i in by_id
        ],
        "pair": [by_id[i] for i in ("color_pos1_neg0_007", "color_pos0_neg1_007")]
        if "color_pos0_neg1_007" in by_id and "color_pos1_neg0_007" in by_id
        else None,
        "shared_example": [by_id[i] for i in ("depth_pos0_neg1_000", "proximity_pos0_neg1_000")]
        if "depth_pos0_neg1_000" in by_id and "proximity_pos0_neg1_000" in by_id
        else None,
        "image_splits": image_split_summary(images_from or dataset_dir),
    }


def render_card(context: dict, template_text: str) -> str:
    """Render the card template (Jinja2, undefined names are errors, output ends with one newline)."""
    from jinja2 import Environment, StrictUndefined

    environment = Environment(
        undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False
    )
    return environment.from_string(template_text).render(**context).rstrip("\n") + "\n"


def published_repo_id(dataset_dir: Path) -> str | None:
    """The Hub repo id an earlier `push` wrote into the folder's card, if any."""
    card = Path(dataset_dir) / CARD_FILE
    if not card.is_file():
        return None
    match = _REPO_ID_COMMENT.search(card.read_text(encoding="utf-8"))
    return match.group(1) if match and match.group(1) != PLACEHOLDER_REPO_ID else None


def write_card(
    dataset_dir: Path,
    *,
    records: Sequence[PromptRecord] | None = None,
    repo_id: str | None = None,
    images_from: Path | None = None,
) -> Path:
    """(Re)render `DIR/README.md` from `dataset_card.md`, the prompts in DIR and its image splits.

    `records` saves re-reading the prompts when the caller has just written them; `repo_id` (else
    the one the card already names, else a placeholder) goes into the card's loading code;
    `images_from` is the folder whose image splits the card lists (default: DIR).
    """
    dataset_dir = Path(dataset_dir)
    if records is None:
        records = load_prompts(dataset_dir)
    repo_id = repo_id or published_repo_id(dataset_dir) or PLACEHOLDER_REPO_ID
    context = card_context(dataset_dir, records, repo_id, images_from=images_from)
    text = render_card(context, CARD_TEMPLATE.read_text(encoding="utf-8"))
    # Atomic: never a half-written card, even when generation ranks re-render it at once.
    return write_atomic(dataset_dir / CARD_FILE, text)
