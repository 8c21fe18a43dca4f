"""The 4,800-prompt corpus (docs/corpus.md): seeded, balanced, matched across polarity settings.

Per category, one *group draw* per (load, k) fixes the objects, their order and the
values/predicates; every setting of that load renders the same draw with its own polarities
(positives first). So `color_pos1_neg1_007` and `color_pos2_neg0_007` differ only in polarity.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from .grammar import render_prompt
from .records import PromptRecord, Statement
from .vocabulary import (
    CATEGORIES,
    CATEGORY_VOCABULARY,
    LOADS,
    OBJECT_CLASSES,
    PROMPTS_PER_SETTING,
    SETTINGS,
    kind_of,
    setting_name,
)

DEFAULT_SEED: int = 2026

# Redraws allowed before a group gives up on avoiding a duplicate prompt text. Collisions are rare
# (only single-statement prompts realistically collide) and a fresh tie-break nearly always fixes them.
_MAX_ATTEMPTS = 500
# After this many plain redraws, also swap this group's values/predicates with a later group's.
_SWAP_AFTER = 20


@dataclass(frozen=True)
class GroupDraw:
    """What the settings of one (category, load, k) share."""

    category: str
    load: int
    k: int
    objects: tuple[str, ...]  # attributes: one per statement; relations: subject, then one target per statement
    predicates: tuple[str, ...]  # one value / relation per statement

    @property
    def group_id(self) -> str:
        return f"{self.category}_load{self.load}_{self.k:03d}"


def category_rng(seed: int, category: str) -> random.Random:
    """The category's own generator: string seeds hash with SHA-512, so this is stable across runs."""
    return random.Random(f"negt2ibench:{seed}:{category}")


def balanced_sequence(values: Sequence[str], length: int, rng: random.Random) -> list[str]:
    """`length` items where every value occurs floor or ceil of length/len(values) times, shuffled."""
    repeats, remainder = divmod(length, len(values))
    items = list(values) * repeats + rng.sample(list(values), remainder)
    rng.shuffle(items)
    return items


def _least_used(usage: dict[str, int], count: int, rng: random.Random) -> list[str]:
    """`count` distinct classes among the least used so far, ties broken at random.

    Always taking the least used keeps every class within one use of every other.
    """
    ranked = sorted(usage, key=lambda name: (usage[name], rng.random()))
    return ranked[:count]


def draw_groups(category: str, seed: int = DEFAULT_SEED) -> list[GroupDraw]:
    """The category's 400 group draws, by load then k."""
    rng = category_rng(seed, category)
    kind = kind_of(category)
    vocabulary = CATEGORY_VOCABULARY[category]
    usage = {name: 0 for name in OBJECT_CLASSES}
    draws: list[GroupDraw] = []
    for load in LOADS:
        if kind == "attribute":
            # One value per prompt, balanced over the load's groups.
            values = balanced_sequence(vocabulary, PROMPTS_PER_SETTING, rng)
            columns = [values] * load  # the same list object: a swap moves the value of every statement
        else:
            # One balanced list per statement index, so each (setting, polarity) is balanced.
            columns = [balanced_sequence(vocabulary, PROMPTS_PER_SETTING, rng) for _ in range(load)]
        object_count = load if kind == "attribute" else load + 1
        seen: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
        for k in range(PROMPTS_PER_SETTING):
            for attempt in range(_MAX_ATTEMPTS):
                if attempt >= _SWAP_AFTER and k + 1 < PROMPTS_PER_SETTING:
                    column = columns[rng.randrange(len(columns))]
                    other = rng.randrange(k + 1, PROMPTS_PER_SETTING)
                    column[k], column[other] = column[other], column[k]
                objects = _least_used(usage, object_count, rng)
                rng.shuffle(objects)  # random order, so a random subject for relations
                predicates = tuple(column[k] for column in columns)
                signature = (tuple(objects), predicates)
                if signature not in seen:
                    break
            else:  # pragma: no cover - needs an astronomically unlucky seed
                raise RuntimeError(f"could not draw a unique {category} group for load {load}, k={k}")
            seen.add(signature)
            for name in objects:
                usage[name] += 1
            draws.append(GroupDraw(category, load, k, tuple(objects), predicates))
    return draws


def render_record(draw: GroupDraw, num_pos: int, num_neg: int) -> PromptRecord:
    """The prompt record of one setting of a group draw (positives first)."""
    if num_pos + num_neg != draw.load:
        raise ValueError(f"setting {num_pos}:{num_neg} does not have load {draw.load}")
    kind = kind_of(draw.category)
    polarities = ["positive"] * num_pos + ["negated"] * num_neg
    prompt, texts = render_prompt(kind, draw.objects, polarities, draw.predicates)
    statements = []
    for index, (polarity, predicate, text) in enumerate(zip(polarities, draw.predicates, texts, strict=False)):
        if kind == "attribute":
            subject, target = draw.objects[index], None
        else:
            subject, target = draw.objects[0], draw.objects[index + 1]
        statements.append(
            Statement(index=index, polarity=polarity, subject=subject, target=target, predicate=predicate, text=text)
        )
    setting = setting_name(num_pos, num_neg)
    return PromptRecord(
        prompt_id=f"{draw.category}_{setting}_{draw.k:03d}",
        group_id=draw.group_id,
        category=draw.category,
        kind=kind,
        num_pos=num_pos,
        num_neg=num_neg,
        load=draw.load,
        setting=setting,
        prompt=prompt,
        objects=list(draw.objects),
        statements=statements,
    )


def build_corpus(seed: int = DEFAULT_SEED) -> list[PromptRecord]:
    """All 4,800 records: categories in CATEGORIES order, then SETTINGS order, then k = 0..99."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    records: list[PromptRecord] = []
    for category in CATEGORIES:
        by_load_k = {(draw.load, draw.k): draw for draw in draw_groups(category, seed)}
        for num_pos, num_neg in SETTINGS:
            load = num_pos + num_neg
            for k in range(PROMPTS_PER_SETTING):
                records.append(render_record(by_load_k[(load, k)], num_pos, num_neg))
    return records
