"""The 4,800-prompt corpus (docs/corpus.md): seeded, balanced, matched across polarity settings and categories.

One *object draw* per (kind, load, k) fixes the objects and their order, shared by every category
of that kind: prompt k of a setting names the same objects in directional, proximity,
comparative and depth, and likewise in color and material, so a difference between two
categories is not a difference between their objects. Each category then draws its own
values/predicates per (load, k). Every setting of a load renders the same (objects, predicates)
with its own polarities (positives first): `color_pos1_neg1_007` and `color_pos2_neg0_007` differ
only in polarity, and `depth_pos0_neg1_007` names the objects of `proximity_pos0_neg1_007`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .grammar import render_prompt
from .records import PromptRecord, Statement
from .vocabulary import (
    CATEGORIES,
    CATEGORY_VOCABULARY,
    LOADS,
    OBJECT_CLASSES,
    PROMPTS_PER_SETTING,
    SETTINGS,
    Category,
    Polarity,
    kind_of,
    setting_name,
)

DEFAULT_SEED: int = 2026
# The training split (`negt2ibench build --split train`): the same design from another seed, its ids
# and groups prefixed, and no (objects, predicates) combination of the test split's (`combination`).
DEFAULT_TRAIN_SEED: int = 2027
TRAIN_PREFIX = "train_"
# A fresh draw (the leaderboard's, from a secret seed): the corpus of that seed (`build --seed`), ids
# and groups prefixed, so its records never share an id with a published prompt's.
FRESH_PREFIX = "fresh_"
# The corpus's version, in the dataset card and in `validate`'s and `build`'s summaries. It changes
# whenever the same seed would give other prompts: 1 drew objects per category; 2 shares each
# object draw across the categories of one kind (the paper's released corpus, Table 4).
CORPUS_VERSION: str = "2"

# Redraws allowed before a draw gives up on avoiding a duplicate prompt text. Collisions are rare
# (only single-statement prompts realistically collide) and a fresh tie-break nearly always fixes them.
_MAX_ATTEMPTS = 500
# After this many plain redraws, also swap a colliding category's values/predicates with a later draw's.
_SWAP_AFTER = 20


@dataclass(frozen=True)
class GroupDraw:
    """What the settings of one (category, load, k) share."""

    category: Category
    load: int
    k: int
    objects: tuple[str, ...]  # attributes: one per statement; relations: subject, then one target per statement
    predicates: tuple[str, ...]  # one value / relation per statement
    prefix: str = ""  # TRAIN_PREFIX in the training split

    @property
    def group_id(self) -> str:
        return f"{self.prefix}{self.category}_load{self.load}_{self.k:03d}"


Combination = tuple[str, tuple[str, ...], tuple[str, ...]]


def combination(category: str, objects: Sequence[str], predicates: Sequence[str]) -> Combination:
    """What a prompt asks for, whatever its order and polarities: its category, its objects and its
    values / predicates, each sorted. Two prompts with one combination picture the same things (the
    training split never shares one with the test split)."""
    return (category, tuple(sorted(objects)), tuple(sorted(predicates)))


def record_combination(record: PromptRecord) -> Combination:
    return combination(record.category, record.objects, [s.predicate for s in record.statements])


def category_rng(seed: int, category: str) -> random.Random:
    """The category's own generator (its values / predicates): string seeds hash with SHA-512, so
    this is stable across runs."""
    return random.Random(f"negt2ibench:{seed}:{category}")


def objects_rng(seed: int, kind: str) -> random.Random:
    """The generator of a kind's shared object draws (`attribute` or `relation`)."""
    return random.Random(f"negt2ibench:{seed}:{kind}:objects")


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


def _predicate_columns(category: str, load: int, rng: random.Random) -> list[list[str]]:
    """One list of `PROMPTS_PER_SETTING` values / predicates per statement index, each balanced."""
    vocabulary = CATEGORY_VOCABULARY[category]
    if kind_of(category) == "attribute":
        # One value per prompt, balanced over the load's draws; the same list object for every
        # statement, so a swap moves the value of every statement.
        values = balanced_sequence(vocabulary, PROMPTS_PER_SETTING, rng)
        return [values] * load
    # One balanced list per statement index, so each (setting, polarity) is balanced.
    return [balanced_sequence(vocabulary, PROMPTS_PER_SETTING, rng) for _ in range(load)]


def draw_kind(
    kind: str, seed: int = DEFAULT_SEED, avoid: frozenset[Combination] = frozenset(), prefix: str = ""
) -> dict[str, list[GroupDraw]]:
    """The 400 group draws of every category of `kind`, by load then k, with shared objects.

    Per (load, k) one object draw (the least-used classes so far, shuffled, so a random subject)
    serves every category of the kind; each category adds its own balanced values / predicates.
    A draw that would repeat a prompt text of any of the categories within a setting is drawn
    again (after `_SWAP_AFTER` tries the colliding category also swaps its predicates with a
    later draw's), so every category stays free of duplicates. A draw whose combination is in AVOID
    (another split's) is drawn again the same way.
    """
    categories = [category for category in CATEGORIES if kind_of(category) == kind]
    if not categories:
        raise ValueError(f"unknown kind {kind!r}; expected attribute or relation")
    rng = objects_rng(seed, kind)
    predicate_rngs = {category: category_rng(seed, category) for category in categories}
    usage = {name: 0 for name in OBJECT_CLASSES}
    draws: dict[str, list[GroupDraw]] = {category: [] for category in categories}
    for load in LOADS:
        columns = {category: _predicate_columns(category, load, predicate_rngs[category]) for category in categories}
        object_count = load if kind == "attribute" else load + 1
        seen: dict[str, set[tuple[tuple[str, ...], tuple[str, ...]]]] = {category: set() for category in categories}
        for k in range(PROMPTS_PER_SETTING):
            for attempt in range(_MAX_ATTEMPTS):
                objects = tuple(_least_used(usage, object_count, rng))
                objects = tuple(rng.sample(objects, len(objects)))  # random order, so a random subject
                signatures = {
                    category: (objects, tuple(column[k] for column in columns[category])) for category in categories
                }
                colliding = [
                    category
                    for category in categories
                    if signatures[category] in seen[category] or combination(category, *signatures[category]) in avoid
                ]
                if not colliding:
                    break
                if attempt >= _SWAP_AFTER and k + 1 < PROMPTS_PER_SETTING:
                    for category in colliding:
                        category_columns = columns[category]
                        swap_rng = predicate_rngs[category]
                        column = category_columns[swap_rng.randrange(len(category_columns))]
                        other = swap_rng.randrange(k + 1, PROMPTS_PER_SETTING)
                        column[k], column[other] = column[other], column[k]
            else:  # pragma: no cover - needs an astronomically unlucky seed
                raise RuntimeError(f"could not draw unique {kind} prompts for load {load}, k={k}")
            for name in objects:
                usage[name] += 1
            for category in categories:
                seen[category].add(signatures[category])
                draws[category].append(GroupDraw(category, load, k, objects, signatures[category][1], prefix))
    return draws


def draw_groups(category: str, seed: int = DEFAULT_SEED) -> list[GroupDraw]:
    """The category's 400 group draws, by load then k (its objects are its kind's shared draws)."""
    return draw_kind(kind_of(category), seed)[category]


def render_record(draw: GroupDraw, num_pos: int, num_neg: int) -> PromptRecord:
    """The prompt record of one setting of a group draw (positives first)."""
    if num_pos + num_neg != draw.load:
        raise ValueError(f"setting {num_pos}:{num_neg} does not have load {draw.load}")
    kind = kind_of(draw.category)
    positive: Polarity = "positive"
    negated: Polarity = "negated"
    polarities = [positive] * num_pos + [negated] * num_neg
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
        prompt_id=f"{draw.prefix}{draw.category}_{setting}_{draw.k:03d}",
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
    return list(_build(seed, frozenset(), ""))


def build_train_corpus(seed: int = DEFAULT_TRAIN_SEED, test_seed: int = DEFAULT_SEED) -> list[PromptRecord]:
    """The training split: 4,800 records of the same design from SEED, ids and groups prefixed
    `train_`, none with a combination (so none with a text) of the test corpus of TEST_SEED."""
    if seed == test_seed:
        raise ValueError(f"the training split needs another seed than the test split's ({test_seed})")
    avoid = frozenset(record_combination(record) for record in build_corpus(test_seed))
    return list(_build(seed, avoid, TRAIN_PREFIX))


def build_fresh_corpus(seed: int) -> list[PromptRecord]:
    """The 4,800 records of `negt2ibench build --seed SEED` (the same draws), ids and groups
    prefixed `fresh_`: the pool a fresh draw samples from (`published_combinations` says which of
    them a published prompt already asks for)."""
    if seed in (DEFAULT_SEED, DEFAULT_TRAIN_SEED):
        published = f"{DEFAULT_SEED}, {DEFAULT_TRAIN_SEED}"
        raise ValueError(f"a fresh draw needs a seed other than the published splits' ({published})")
    return list(_build(seed, frozenset(), FRESH_PREFIX))


@lru_cache(maxsize=4)
def published_combinations(
    test_seed: int = DEFAULT_SEED, train_seed: int = DEFAULT_TRAIN_SEED
) -> frozenset[Combination]:
    """What the published prompts ask for (`combination`): the test split's and the training split's.
    A prompt with none of these asks for nothing published, so its text is no published text either."""
    published = build_corpus(test_seed) + build_train_corpus(train_seed, test_seed)
    return frozenset(record_combination(record) for record in published)


def _build(seed: int, avoid: frozenset[Combination], prefix: str) -> tuple[PromptRecord, ...]:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    return _drawn(seed, avoid, prefix)


@lru_cache(maxsize=4)
def _drawn(seed: int, avoid: frozenset[Combination], prefix: str) -> tuple[PromptRecord, ...]:
    # cached: one start of the Space or of the demo asks for the default corpus more than once (0.6 s
    # each); the records are frozen, and each caller gets its own list of them
    records: list[PromptRecord] = []
    by_kind = {kind: draw_kind(kind, seed, avoid, prefix) for kind in ("attribute", "relation")}
    for category in CATEGORIES:
        by_load_k = {(draw.load, draw.k): draw for draw in by_kind[kind_of(category)][category]}
        for num_pos, num_neg in SETTINGS:
            load = num_pos + num_neg
            for k in range(PROMPTS_PER_SETTING):
                records.append(render_record(by_load_k[(load, k)], num_pos, num_neg))
    return tuple(records)
