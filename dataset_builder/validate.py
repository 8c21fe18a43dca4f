"""Checks every corpus invariant (docs/corpus.md) on records or on a built folder.

Among them the shared object draws (`shared_draw_violations`): prompt k of a setting names the
same objects in all four relation categories, and in color and material.

`find_violations` is pure (records in, violations out); `validate_folder` adds the file-level
checks (layout, parquet schema, JSONL = parquet, card configs, and `eval.yaml`: its tasks' configs
and splits declared by the card, `dataset_builder.benchmark`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .corpus import CORPUS_VERSION
from .grammar import PromptParseError, grammar_issues, parse_prompt, render_prompt
from .layout import CARD_FILE, PROMPTS_JSONL
from .records import PromptRecord
from .vocabulary import (
    ATTRIBUTE_CATEGORIES,
    CATEGORIES,
    CATEGORY_VOCABULARY,
    OBJECT_CLASSES,
    PROMPTS_PER_SETTING,
    RELATION_CATEGORIES,
    SETTINGS,
    kind_of,
    setting_name,
)

# `train_` before the category in the training split (`corpus.TRAIN_PREFIX`), its groups likewise.
_PROMPT_ID = re.compile(r"^(?P<prefix>train_)?(?P<category>[a-z]+)_pos(?P<p>\d)_neg(?P<n>\d)_(?P<k>\d{3})$")
_CLASSES = frozenset(OBJECT_CLASSES)
_CARD_VERSION = re.compile(r"<!-- corpus_version: (\S+) -->")
# Categories whose prompt k of a setting names the same objects in the same order (docs/corpus.md).
SHARED_DRAW_FAMILIES: tuple[tuple[str, ...], ...] = (ATTRIBUTE_CATEGORIES, RELATION_CATEGORIES)


@dataclass(frozen=True)
class Violation:
    """One broken invariant; `where` is a prompt id, or a group / category / file for corpus-wide checks."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def record_violations(record: PromptRecord) -> list[str]:
    """What is wrong with one record on its own (ids, counts, vocabulary, text ↔ metadata, English)."""
    problems = _id_problems(record)
    if record.category not in CATEGORIES:
        return problems + [f"unknown category {record.category!r}"]
    kind = kind_of(record.category)
    if record.kind != kind:
        problems.append(f"kind {record.kind!r} should be {kind!r}")
    problems += _statement_problems(record)
    problems += _object_problems(record, kind)
    if problems:
        return problems  # text checks below assume consistent metadata
    return _text_problems(record, kind)


def _id_problems(record: PromptRecord) -> list[str]:
    """The record's prompt id, group id and setting against its category, num_pos and num_neg."""
    problems: list[str] = []
    match = _PROMPT_ID.match(record.prompt_id)
    load = record.num_pos + record.num_neg
    if not match:
        problems.append("prompt_id is not {category}_pos{P}_neg{N}_{k:03d}")
    else:
        if match["category"] != record.category or (int(match["p"]), int(match["n"])) != (
            record.num_pos,
            record.num_neg,
        ):
            problems.append("prompt_id disagrees with category / num_pos / num_neg")
        expected_group = f"{match['prefix'] or ''}{record.category}_load{load}_{match['k']}"
        if record.group_id != expected_group:
            problems.append(f"group_id {record.group_id!r} should be {expected_group!r}")
        if int(match["k"]) >= PROMPTS_PER_SETTING:
            problems.append(f"prompt number {match['k']} is out of range 000-{PROMPTS_PER_SETTING - 1:03d}")
    if (record.num_pos, record.num_neg) not in SETTINGS:
        problems.append(f"setting {record.num_pos}:{record.num_neg} is not one of the benchmark's eight")
    if record.setting != setting_name(record.num_pos, record.num_neg) or record.load != load:
        problems.append("setting / load disagree with num_pos and num_neg")
    return problems


def _statement_problems(record: PromptRecord) -> list[str]:
    """The statements' indexes, polarities, values (of a known category) and texts."""
    problems: list[str] = []
    statements = record.statements
    load = record.num_pos + record.num_neg
    if [s.index for s in statements] != list(range(len(statements))) or len(statements) != load:
        problems.append(f"expected statements indexed 0..{load - 1}")
    polarities = [s.polarity for s in statements]
    if polarities != ["positive"] * record.num_pos + ["negated"] * record.num_neg:
        problems.append("polarities must be num_pos positives followed by num_neg negated")
    vocabulary = CATEGORY_VOCABULARY[record.category]
    for statement in statements:
        if statement.predicate not in vocabulary:
            problems.append(f"statement {statement.index}: {statement.predicate!r} is not a {record.category} value")
        if statement.text not in record.prompt:
            problems.append(f"statement {statement.index}: its text {statement.text!r} is not in the prompt")
    return problems


def _object_problems(record: PromptRecord, kind: str) -> list[str]:
    """The objects' classes, and how the statements of KIND name them as subjects and targets."""
    problems: list[str] = []
    statements, objects = record.statements, record.objects
    unknown = [o for o in objects if o not in _CLASSES]
    if unknown:
        problems.append(f"unknown object classes {unknown}")
    if len(set(objects)) != len(objects):
        problems.append("objects repeat")
    if kind == "attribute":
        if len(objects) != len(statements) or any(
            s.subject != o or s.target is not None for s, o in zip(statements, objects, strict=False)
        ):
            problems.append("attribute statement i must be about objects[i] with no target")
        if len({s.predicate for s in statements}) > 1:
            problems.append("an attribute prompt uses one value")
    else:
        if len(objects) != len(statements) + 1 or any(
            s.subject != objects[0] or s.target != t for s, t in zip(statements, objects[1:], strict=False)
        ):
            problems.append("relation statements must share the subject objects[0] and target objects[1:] in order")
    return problems


def _text_problems(record: PromptRecord, kind: str) -> list[str]:
    """The prompt's text against its (consistent) metadata: mention order, rendering, parsing, English."""
    problems: list[str] = []
    statements, objects = record.statements, record.objects
    position = 0
    for name in objects:  # mention order
        found = re.search(rf"\b{re.escape(name)}\b", record.prompt[position:])
        if not found:
            problems.append(f"object {name!r} is not mentioned in order")
            break
        position += found.end()
    polarities = [s.polarity for s in statements]
    prompt, texts = render_prompt(kind, objects, polarities, [s.predicate for s in statements])
    if prompt != record.prompt or texts != [s.text for s in statements]:
        problems.append(f"text does not match its metadata (expected {prompt!r})")
    try:
        parsed = parse_prompt(record.prompt)
        if parsed.objects != objects or parsed.statements != statements or parsed.category != record.category:
            problems.append("parsing the prompt does not give back its objects and statements")
    except PromptParseError as error:
        problems.append(f"the prompt does not parse: {error.problem}")
    problems.extend(grammar_issues(record.prompt))
    return problems


def corpus_violations(records: Sequence[PromptRecord]) -> list[Violation]:
    """Corpus-wide invariants: counts, unique ids and texts, matched groups, class and value balance."""
    violations: list[Violation] = []
    ids = Counter(r.prompt_id for r in records)
    violations += [Violation(i, f"prompt id occurs {n} times") for i, n in ids.items() if n > 1]
    expected_total = len(CATEGORIES) * len(SETTINGS) * PROMPTS_PER_SETTING
    if len(records) != expected_total:
        violations.append(Violation("corpus", f"{len(records)} prompts, expected {expected_total}"))
    cells = Counter((r.category, r.setting) for r in records)
    for category in CATEGORIES:
        for p, n in SETTINGS:
            count = cells[(category, setting_name(p, n))]
            if count != PROMPTS_PER_SETTING:
                violations.append(
                    Violation(f"{category}_{setting_name(p, n)}", f"{count} prompts, expected {PROMPTS_PER_SETTING}")
                )
    violations += _duplicate_text_violations(records)
    # A group's missing settings are only reported on a complete corpus (a partial one lacks many).
    violations += _group_violations(records, complete=len(records) == expected_total)
    for category in CATEGORIES:
        violations += _balance_violations(records, category)
    return violations


def _duplicate_text_violations(records: Sequence[PromptRecord]) -> list[Violation]:
    """Each prompt whose text another prompt of its setting has too."""
    violations: list[Violation] = []
    by_text: dict[tuple[str, str], list[str]] = defaultdict(list)
    for record in records:
        by_text[(record.setting, record.prompt)].append(record.prompt_id)
    for (setting, _), prompt_ids in by_text.items():
        if len(prompt_ids) > 1:
            violations += [
                Violation(i, f"same text as {', '.join(x for x in prompt_ids if x != i)} in {setting}")
                for i in prompt_ids
            ]
    return violations


def _group_violations(records: Sequence[PromptRecord], complete: bool) -> list[Violation]:
    """Matched groups: same objects and predicates in every member, and (when COMPLETE) every setting."""
    violations: list[Violation] = []
    groups: dict[str, list[PromptRecord]] = defaultdict(list)
    for record in records:
        groups[record.group_id].append(record)
    for group_id, members in groups.items():
        first = members[0]
        content = (first.objects, [s.predicate for s in first.statements])
        for member in members[1:]:
            if (member.objects, [s.predicate for s in member.statements]) != content:
                violations.append(
                    Violation(
                        member.prompt_id,
                        f"differs from {first.prompt_id} in objects or predicates but shares group {group_id}",
                    )
                )
        load = first.load
        expected_settings = {setting_name(p, n) for p, n in SETTINGS if p + n == load}
        present = {m.setting for m in members}
        if present != expected_settings and complete:
            missing = sorted(expected_settings - present)
            violations.append(Violation(group_id, f"group lacks settings {', '.join(missing) or '-'}"))
    return violations


def _balance_violations(records: Sequence[PromptRecord], category: str) -> list[Violation]:
    """CATEGORY's class use over its groups, then its value use per setting and polarity."""
    violations: list[Violation] = []
    draws = {r.group_id: r.objects for r in records if r.category == category}
    if not draws:
        return violations
    uses = Counter({name: 0 for name in OBJECT_CLASSES})
    uses.update(name for objects in draws.values() for name in objects)
    low, high = min(uses.values()), max(uses.values())
    if high - low > 1:
        rare = sorted(n for n, c in uses.items() if c == low)[:5]
        common = sorted(n for n, c in uses.items() if c == high)[:5]
        violations.append(
            Violation(
                category,
                f"class use ranges {low}..{high} over {len(draws)} groups "
                f"(least: {', '.join(rare)}; most: {', '.join(common)})",
            )
        )
    for p, n in SETTINGS:
        setting = setting_name(p, n)
        for polarity in ("positive", "negated"):
            counts = Counter({value: 0 for value in CATEGORY_VOCABULARY[category]})
            counts.update(
                s.predicate
                for r in records
                if r.category == category and r.setting == setting
                for s in r.statements
                if s.polarity == polarity
            )
            if sum(counts.values()) and max(counts.values()) - min(counts.values()) > 1:
                violations.append(
                    Violation(f"{category}_{setting}", f"{polarity} values unbalanced: {dict(sorted(counts.items()))}")
                )
    return violations


def _shared_draw_positions(records: Sequence[PromptRecord]) -> dict[tuple[int, str, str], dict[str, PromptRecord]]:
    """{(family, setting, k): {category: record}}: the records that must name the same objects."""
    family_of = {category: index for index, family in enumerate(SHARED_DRAW_FAMILIES) for category in family}
    positions: dict[tuple[int, str, str], dict[str, PromptRecord]] = defaultdict(dict)
    for record in records:
        match = _PROMPT_ID.match(record.prompt_id)
        if match and record.category in family_of:
            positions[(family_of[record.category], record.setting, match["k"])].setdefault(record.category, record)
    return positions


def shared_draw_violations(records: Sequence[PromptRecord]) -> list[Violation]:
    """Shared object draws: prompt k of a setting names the same objects, in the same order, in every
    relation category, and likewise in color and material. Each differing prompt is reported by id,
    against the prompt of the family's first category at the same position."""
    violations = []
    for (family, _, _), members in _shared_draw_positions(records).items():
        order = [category for category in SHARED_DRAW_FAMILIES[family] if category in members]
        reference = members[order[0]]
        for category in order[1:]:
            record = members[category]
            if record.objects != reference.objects:
                violations.append(
                    Violation(
                        record.prompt_id,
                        f"objects {record.objects} differ from {reference.prompt_id}'s {reference.objects} "
                        "(prompt k of a setting shares its objects across the categories of its kind)",
                    )
                )
    return violations


def shared_draw_summary(records: Sequence[PromptRecord]) -> list[dict]:
    """Per family: its categories, the (setting, k) positions compared, and how many name the same objects."""
    positions = _shared_draw_positions(records)
    summary = []
    for index, family in enumerate(SHARED_DRAW_FAMILIES):
        compared = [members for (f, _, _), members in positions.items() if f == index and len(members) > 1]
        shared = sum(1 for members in compared if len({tuple(r.objects) for r in members.values()}) == 1)
        summary.append({"categories": family, "positions": len(compared), "shared": shared})
    return summary


def find_violations(records: Sequence[PromptRecord]) -> list[Violation]:
    """Every broken invariant: per record (by prompt id), then corpus-wide."""
    violations = [Violation(r.prompt_id, problem) for r in records for problem in record_violations(r)]
    return violations + corpus_violations(records) + shared_draw_violations(records)


def validate_folder(dataset_dir: str | Path) -> tuple[list[PromptRecord], list[Violation]]:
    """Load a built folder and check its files and every invariant. Returns (records, violations)."""
    import pyarrow.parquet as pq

    from .hub import PROMPT_ARROW_SCHEMA
    from .layout import PROMPTS_PARQUET
    from .loading import load_prompts

    root = Path(dataset_dir)
    if not root.is_dir():
        return [], [Violation(str(root), "not a folder")]
    violations: list[Violation] = []
    records: list[PromptRecord] = []
    parquet_path = root / PROMPTS_PARQUET
    if not parquet_path.is_file():
        violations.append(Violation(PROMPTS_PARQUET, "missing"))
    else:
        try:
            schema = pq.read_schema(parquet_path)
            same_features = (schema.metadata or {}).get(b"huggingface") == PROMPT_ARROW_SCHEMA.metadata[b"huggingface"]
            if not same_features or not schema.remove_metadata().equals(PROMPT_ARROW_SCHEMA.remove_metadata()):
                violations.append(
                    Violation(PROMPTS_PARQUET, "schema or `datasets` features metadata differ from the prompts config")
                )
            records = load_prompts(parquet_path)
        except Exception as error:  # noqa: BLE001 - any unreadable file is one violation
            violations.append(Violation(PROMPTS_PARQUET, f"unreadable ({error}); rebuild it with `build --overwrite`"))
    jsonl_path = root / PROMPTS_JSONL
    if not jsonl_path.is_file():
        violations.append(Violation(PROMPTS_JSONL, "missing"))
    else:
        try:
            jsonl_records = load_prompts(jsonl_path)
        except Exception as error:  # noqa: BLE001
            violations.append(Violation(PROMPTS_JSONL, f"unreadable: {error}"))
        else:
            if records:
                violations += copy_differences(records, jsonl_records)
            elif jsonl_records:  # the parquet file is broken: check the corpus on its JSONL copy
                records = jsonl_records
    violations += _card_violations(root / CARD_FILE)
    from .benchmark import eval_yaml_check
    from .layout import EVAL_FILE

    violations += [Violation(EVAL_FILE, problem) for problem in eval_yaml_check(root)]
    if records:
        violations += find_violations(records)
    else:  # one line, not one per empty cell of the corpus (the file violations above say why)
        violations.append(Violation("corpus", "no prompt records could be read from the folder"))
    return records, violations


def _card_violations(card: Path) -> list[Violation]:
    """The dataset card: present, declaring the prompts config, stating this code's corpus version."""
    if not card.is_file():
        return [Violation(CARD_FILE, "missing")]
    violations: list[Violation] = []
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "config_name: prompts" not in text or "prompts/test-*.parquet" not in text:
        violations.append(Violation(CARD_FILE, "no YAML `configs:` declaring the prompts config"))
    stated = _CARD_VERSION.search(text)
    if stated is None or stated.group(1) != CORPUS_VERSION:
        found = f"corpus version {stated.group(1)}" if stated else "no corpus version"
        violations.append(
            Violation(CARD_FILE, f"states {found}; this code builds version {CORPUS_VERSION} (rebuild the folder)")
        )
    return violations


def copy_differences(parquet: Sequence[PromptRecord], jsonl: Sequence[PromptRecord]) -> list[Violation]:
    """Where prompts.jsonl differs from the parquet split: one violation per prompt id, naming the field."""
    by_id = {record.prompt_id: record for record in jsonl}
    violations = []
    for number, record in enumerate(parquet):
        copy = by_id.get(record.prompt_id)
        if copy is None:
            violations.append(Violation(record.prompt_id, f"{PROMPTS_JSONL} lacks this prompt of the parquet split"))
        elif copy != record:
            fields = [name for name in type(record).model_fields if getattr(copy, name) != getattr(record, name)]
            violations.append(
                Violation(record.prompt_id, f"{PROMPTS_JSONL} differs from the parquet split in {', '.join(fields)}")
            )
        elif number < len(jsonl) and jsonl[number].prompt_id != record.prompt_id and not violations:
            violations.append(Violation(PROMPTS_JSONL, f"lists the prompts in another order (line {number + 1})"))
    known = {record.prompt_id for record in parquet}
    violations += [
        Violation(record.prompt_id, f"{PROMPTS_JSONL} has this prompt, the parquet split does not")
        for record in jsonl
        if record.prompt_id not in known
    ]
    return violations
