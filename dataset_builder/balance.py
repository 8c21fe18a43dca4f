"""How evenly the corpus uses its objects, values and predicates, and how many elements a prompt
carries: the numbers of the paper's Figures 5 and 6 and of Table 8's questions per image (pure).

Objects are counted two ways. **Per draw**: each group draw once (a matched group's prompts share
one draw, docs/corpus.md), which is what the draws balance. **Per prompt**: every prompt that
names the object, which is what a model is asked: a load-2 draw is rendered three times (2:0,
1:1, 0:2), a load-1 or load-3 draw twice, a load-4 draw once, so per-prompt counts weight the
draws unevenly. The **most even allocation** of a total T over the 79 classes gives
T mod 79 classes ⌈T/79⌉ uses and the others ⌊T/79⌋; it holds when the sorted counts equal it
(the most- and least-used class differ by at most one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean

from .records import PromptRecord
from .vocabulary import CATEGORIES, CATEGORY_VOCABULARY, OBJECT_CLASSES, SETTINGS, kind_of, setting_label, setting_name

COUNTINGS = ("draw", "prompt")


def most_even(total: int, classes: int) -> list[int]:
    """The most even allocation of TOTAL uses over CLASSES, largest first.

    >>> most_even(10, 4)
    [3, 3, 2, 2]
    """
    if classes <= 0:
        return []
    low, extra = divmod(total, classes)
    return [low + 1] * extra + [low] * (classes - extra)


def object_uses(records: Sequence[PromptRecord], category: str, counting: str) -> Counter[str]:
    """Uses of every benchmark class (zeros included) in CATEGORY, per "draw" or per "prompt"."""
    if counting not in COUNTINGS:
        raise ValueError(f"counting is one of {COUNTINGS}, got {counting!r}")
    chosen = [record for record in records if record.category == category]
    if counting == "draw":
        objects = list({record.group_id: record.objects for record in chosen}.values())
    else:
        objects = [record.objects for record in chosen]
    uses = Counter({name: 0 for name in OBJECT_CLASSES})
    uses.update(name for names in objects for name in names)
    return uses


@dataclass(frozen=True)
class Allocation:
    """One category's object uses under one counting, sorted from most to least used."""

    category: str
    counting: str
    objects: tuple[str, ...]
    counts: tuple[int, ...]
    even: tuple[int, ...]  # the most even allocation of the same total, aligned with `counts`

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def holds(self) -> bool:
        """Whether the counts are the most even allocation of their total."""
        return list(self.counts) == list(self.even)

    @property
    def used(self) -> int:
        return sum(1 for count in self.counts if count)


def allocation(records: Sequence[PromptRecord], category: str, counting: str) -> Allocation:
    """CATEGORY's object uses under COUNTING (ties in count by class name), with the most even allocation."""
    uses = object_uses(records, category, counting)
    ranked = sorted(uses.items(), key=lambda item: (-item[1], item[0]))
    counts = tuple(count for _, count in ranked)
    return Allocation(
        category, counting, tuple(name for name, _ in ranked), counts, tuple(most_even(sum(counts), len(counts)))
    )


def allocations(records: Sequence[PromptRecord]) -> list[Allocation]:
    """Every category (that has records) under both countings, categories in the paper's order."""
    present = {record.category for record in records}
    return [
        allocation(records, category, counting)
        for category in CATEGORIES
        if category in present
        for counting in COUNTINGS
    ]


def value_counts(records: Sequence[PromptRecord], category: str) -> dict[str, dict[str, int]]:
    """{value or predicate: {"positive": n, "negated": n}} of CATEGORY's statements, in the vocabulary's order."""
    counts = {value: {"positive": 0, "negated": 0} for value in CATEGORY_VOCABULARY[category]}
    for record in records:
        if record.category == category:
            for statement in record.statements:
                counts.setdefault(statement.predicate, {"positive": 0, "negated": 0})[statement.polarity] += 1
    return counts


def elements(record: PromptRecord) -> int:
    """The elements of a prompt: its objects and its statements (one question each for a judge in pos mode)."""
    return len(record.objects) + len(record.statements)


def element_counts(records: Sequence[PromptRecord]) -> list[dict]:
    """Per (kind, setting): objects, statements and elements of a prompt (the mean, when they vary)."""
    rows = []
    for kind in ("attribute", "relation"):
        for p, n in SETTINGS:
            chosen = [r for r in records if kind_of(r.category) == kind and r.setting == setting_name(p, n)]
            if chosen:
                rows.append(
                    {
                        "kind": kind,
                        "setting": setting_label(p, n),
                        "prompts": len(chosen),
                        "objects": mean(len(r.objects) for r in chosen),
                        "statements": mean(len(r.statements) for r in chosen),
                        "elements": mean(elements(r) for r in chosen),
                    }
                )
    return rows


def mean_elements(records: Sequence[PromptRecord]) -> float:
    """Objects + statements per prompt, averaged over RECORDS (the corpus: 31/6 ≈ 5.17)."""
    return mean(elements(record) for record in records) if records else float("nan")
