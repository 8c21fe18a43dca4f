"""The benchmark's prompt grammar: render metadata to English, and parse English back.

Attribute prompts (color, material), one object per statement:
    a photo of a red cup
    a photo of a plastic bus, a plastic knife, a non-plastic sandwich, and a non-plastic toilet
Relation prompts (directional, proximity, comparative, depth), one subject, one target per statement:
    a photo of a laptop, a zebra, and a carrot, where the laptop is right of the zebra and is not
    right of the carrot

English rules the paper's corpus missed: "an" before a vowel sound, "a non-..." always "a",
plural-only nouns (skis, scissors) take no article and "are".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from negt2ibench.core.errors import UserError

from .records import PromptRecord, Statement
from .vocabulary import (
    ATTRIBUTE_CATEGORIES,
    CATEGORIES,
    CATEGORY_VOCABULARY,
    OBJECT_CLASSES,
    PLURAL_NOUNS,
    Category,
    Polarity,
    kind_of,
    setting_name,
)

PROMPT_PREFIX = "a photo of "
RELATION_JOINER = ", where the "

# Which category each attribute value / relation predicate belongs to (they never overlap).
PREDICATE_CATEGORY: dict[str, Category] = {
    predicate: category for category in CATEGORIES for predicate in CATEGORY_VOCABULARY[category]
}
ATTRIBUTE_VALUES: frozenset[str] = frozenset(
    value for category in ATTRIBUTE_CATEGORIES for value in CATEGORY_VOCABULARY[category]
)
# Longest first so "in front of" is tried before shorter predicates.
RELATION_PREDICATES: tuple[str, ...] = tuple(
    sorted((p for p, c in PREDICATE_CATEGORY.items() if kind_of(c) == "relation"), key=len, reverse=True)
)
_CLASSES: frozenset[str] = frozenset(OBJECT_CLASSES)

# Words whose first letter misleads about the sound ("a unicorn", "an hour"). None of the
# benchmark's words need it today; the table keeps the rule honest if the vocabulary grows.
_CONSONANT_SOUND_VOWEL_WORDS = frozenset({"one", "unicorn", "uniform", "university", "user", "european"})
_VOWEL_SOUND_CONSONANT_WORDS = frozenset({"hour", "honest", "heir"})

# The grammar in words, once: the CLI shows it as indented text (`GRAMMAR_HELP`), the Space as a list.
GRAMMAR_INTRO = "prompts follow the benchmark's grammar (lower case, one category per prompt):"
GRAMMAR_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "attributes (color: {}; material: {})".format(
            *(" ".join(CATEGORY_VOCABULARY[c]) for c in ATTRIBUTE_CATEGORIES)
        ),
        (
            "a photo of a red cup",
            "a photo of a non-red cup",
            "a photo of a plastic bus, a plastic knife, a non-plastic sandwich, and a non-plastic toilet",
        ),
    ),
    (
        "relations ({})".format(
            ", ".join(p for c in CATEGORIES if kind_of(c) == "relation" for p in CATEGORY_VOCABULARY[c])
        ),
        (
            "a photo of a laptop and a zebra, where the laptop is right of the zebra",
            "a photo of a laptop, a zebra, and a carrot, where the laptop is right of the zebra and is not below the "
            "carrot",
            "a photo of skis and a bench, where the skis are not bigger than the bench",
        ),
    ),
)
GRAMMAR_OBJECTS = (
    f"objects are the {len(OBJECT_CLASSES)} COCO classes other than person, as GenEval names them "
    '(e.g. "tv remote", "hot dog", "computer mouse").'
)


def _grammar_text(width: int = 100) -> str:
    import textwrap

    lines = [GRAMMAR_INTRO]
    for kind, examples in GRAMMAR_KINDS:
        under = " " * (kind.index("(") + 3)  # a heading's next line starts under its first word in brackets
        lines += textwrap.wrap(kind + ":", width, initial_indent="  ", subsequent_indent=under)
        for example in examples:
            lines += textwrap.wrap(example, width, initial_indent="    ", subsequent_indent="      ")
    return "\n".join(lines + textwrap.wrap(GRAMMAR_OBJECTS, 80))  # 80: the examples of names stay whole


GRAMMAR_HELP = _grammar_text()


class PromptParseError(UserError, ValueError):
    """A prompt outside the benchmark's grammar. The message shows the grammar with examples;
    the CLI prints only the problem and where the grammar is explained."""

    def __init__(self, problem: str):
        self.problem = problem
        super().__init__(f"{problem}\n{GRAMMAR_HELP}")

    def one_line(self) -> str:
        return f"cannot parse the prompt: {self.problem} (the grammar: `negt2ibench explain --help`)"


# --------------------------------------------------------------------------- rendering


def starts_with_vowel_sound(phrase: str) -> bool:
    """Whether the first word of `phrase` is spoken with a vowel sound (so it takes "an")."""
    word = phrase.split(" ", 1)[0].lower()
    if word in _CONSONANT_SOUND_VOWEL_WORDS:
        return False
    if word in _VOWEL_SOUND_CONSONANT_WORDS:
        return True
    return word[:1] in set("aeiou")


def with_article(noun_phrase: str, head_noun: str) -> str:
    """`noun_phrase` with its indefinite article; plural-only head nouns take none."""
    if head_noun in PLURAL_NOUNS:
        return noun_phrase
    return ("an " if starts_with_vowel_sound(noun_phrase) else "a ") + noun_phrase


def attribute_phrase(noun: str, value: str, polarity: str) -> str:
    """ "a red cup", "an orange cup", "a non-red cup", "red skis", "non-red scissors"."""
    prefix = value if polarity == "positive" else f"non-{value}"
    return with_article(f"{prefix} {noun}", noun)


def object_phrase(noun: str) -> str:
    """ "a laptop", "an apple", "skis"."""
    return with_article(noun, noun)


def relation_verb_phrase(subject: str, target: str, predicate: str, polarity: str) -> str:
    """ "is right of the zebra", "is not below the surfboard", "are not bigger than the bench"."""
    verb = "are" if subject in PLURAL_NOUNS else "is"
    negation = " not" if polarity == "negated" else ""
    return f"{verb}{negation} {predicate} the {target}"


def join_list(items: Sequence[str]) -> str:
    """ "x", "x and y", "x, y, and z" (Oxford comma)."""
    if not items:
        raise ValueError("nothing to join")
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + f", and {items[-1]}"


def render_prompt(
    kind: str, objects: Sequence[str], polarities: Sequence[str], predicates: Sequence[str]
) -> tuple[str, list[str]]:
    """The prompt text and each statement's text (its exact words in the prompt).

    Attributes: statement i is about `objects[i]`. Relations: `objects[0]` is the subject and
    statement i relates it to `objects[i + 1]`.
    """
    if len(polarities) != len(predicates) or not polarities:
        raise ValueError("need one polarity per predicate and at least one statement")
    if kind == "attribute":
        if len(objects) != len(predicates):
            raise ValueError("attribute prompts need one object per statement")
        texts = [attribute_phrase(o, v, p) for o, v, p in zip(objects, predicates, polarities, strict=False)]
        return PROMPT_PREFIX + join_list(texts), texts
    if kind == "relation":
        if len(objects) != len(predicates) + 1:
            raise ValueError("relation prompts need a subject plus one target per statement")
        subject, targets = objects[0], objects[1:]
        texts = [
            relation_verb_phrase(subject, t, r, p) for t, r, p in zip(targets, predicates, polarities, strict=False)
        ]
        listing = join_list([object_phrase(o) for o in objects])
        return f"{PROMPT_PREFIX}{listing}{RELATION_JOINER}{subject} {join_list(texts)}", texts
    raise ValueError(f"unknown kind {kind!r}; expected attribute or relation")


def statement_sentence(record: PromptRecord, statement: Statement) -> str:
    """A standalone sentence for display: "the laptop is not below the surfboard", "a non-red cup"."""
    if statement.target is None:
        return attribute_phrase(statement.subject, statement.predicate, statement.polarity)
    verb_phrase = relation_verb_phrase(statement.subject, statement.target, statement.predicate, statement.polarity)
    return f"the {statement.subject} {verb_phrase}"


# --------------------------------------------------------------------------- parsing

_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")
_ARTICLE = re.compile(r"^(?:an?)\s+")
_WHERE = re.compile(r",?\s*\bwhere the\s+")
_VERB_PHRASE = re.compile(r"^(is|are)\s+(not\s+)?(.+)$")


def normalize_prompt(text: str) -> str:
    """Lower case, single spaces, no surrounding space or final full stop."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".").strip().lower()


def _split_list(text: str) -> list[str]:
    items = [item.strip() for item in _LIST_SEPARATOR.split(text)]
    if any(not item for item in items):
        raise PromptParseError(f"an empty item in the list {text!r}")
    return items


def _parse_object_item(item: str) -> tuple[str, str | None, Polarity]:
    """(noun, value or None, polarity) of "a red cup", "a non-red cup", "an apple", "skis"."""
    bare = _ARTICLE.sub("", item, count=1)
    if bare in _CLASSES:
        return bare, None, "positive"
    head, _, rest = bare.partition(" ")
    polarity: Polarity = "positive"
    if head.startswith("non-"):
        head, polarity = head[len("non-") :], "negated"
    if head in ATTRIBUTE_VALUES and rest in _CLASSES:
        return rest, head, polarity
    raise PromptParseError(
        f"cannot read {item!r}: expected an object class, optionally after a value or non-value "
        f"(like 'a red cup' or 'a non-glass vase')"
    )


def _parse_verb_phrase(phrase: str, objects: list[str]) -> tuple[Polarity, str, str]:
    """(polarity, predicate, target) of "is not below the surfboard"."""
    match = _VERB_PHRASE.match(phrase)
    if not match:
        raise PromptParseError(f"cannot read {phrase!r}: a relation starts with 'is' or 'are' (then 'not' to negate)")
    polarity: Polarity = "negated" if match.group(2) else "positive"
    rest = match.group(3)
    for predicate in RELATION_PREDICATES:
        if rest.startswith(predicate + " the "):
            target = rest[len(predicate) + len(" the ") :]
            if target not in objects:
                raise PromptParseError(f"the target {target!r} of {phrase!r} is not in the object list {objects}")
            return polarity, predicate, target
    raise PromptParseError(
        f"cannot read {phrase!r}: expected '<is|are> [not] <relation> the <object>' with a relation "
        f"from: {', '.join(sorted(RELATION_PREDICATES))}"
    )


def _single_category(predicates: Sequence[str]) -> Category:
    categories = sorted({PREDICATE_CATEGORY[p] for p in predicates})
    if len(categories) != 1:
        raise PromptParseError(f"all statements of a prompt must share one category; found {', '.join(categories)}")
    return categories[0]


def _attribute_statements(
    listing: str, items: Sequence[tuple[str, str | None, Polarity]], objects: list[str]
) -> list[Statement]:
    """The statements of an attribute prompt: one per listed object that has a value (or non-value)."""
    statements: list[Statement] = []
    texts = _split_list(listing)
    for noun, value, polarity in items:
        if value is None:
            continue
        statements.append(
            Statement(
                index=len(statements),
                polarity=polarity,
                subject=noun,
                target=None,
                predicate=value,
                text=texts[objects.index(noun)],
            )
        )
    if not statements:
        raise PromptParseError("the prompt states nothing to score: give an object a value, or add a 'where' clause")
    return statements


def _relation_statements(
    clause: str, items: Sequence[tuple[str, str | None, Polarity]], objects: list[str]
) -> list[Statement]:
    """The statements of a relation prompt: one per verb phrase of its 'where the' CLAUSE."""
    if any(value is not None for _, value, _ in items):
        raise PromptParseError("a prompt is either about attributes or about relations, not both")
    # Multi-word subjects ("tv remote"): take the longest listed object the clause starts with.
    candidates = [o for o in objects if clause.startswith(o + " ")]
    if not candidates:
        raise PromptParseError(f"after 'where the' name one of the listed objects {objects}")
    subject = max(candidates, key=len)
    verb_phrases = clause[len(subject) + 1 :]
    statements: list[Statement] = []
    for phrase in _split_list(verb_phrases):
        polarity, predicate, target = _parse_verb_phrase(phrase, objects)
        if target == subject:
            raise PromptParseError(f"{phrase!r} relates the {subject} to itself")
        statements.append(
            Statement(
                index=len(statements),
                polarity=polarity,
                subject=subject,
                target=target,
                predicate=predicate,
                text=phrase,
            )
        )
    targets = [s.target for s in statements]
    if len(set(targets)) != len(targets):
        raise PromptParseError("each target may appear in one relation only")
    return statements


def parse_prompt(text: str) -> PromptRecord:
    """Parse a prompt of the benchmark's grammar into a record (ids "custom").

    Raises `PromptParseError` (a `ValueError`) whose message shows the grammar with examples.
    """
    prompt = normalize_prompt(text)
    if not prompt.startswith(PROMPT_PREFIX):
        raise PromptParseError(f"the prompt must start with {PROMPT_PREFIX.strip()!r}")
    body = prompt[len(PROMPT_PREFIX) :]
    listing, *where_clause = _WHERE.split(body, maxsplit=1)
    where, clause = bool(where_clause), (where_clause[0] if where_clause else "")
    items = [_parse_object_item(item) for item in _split_list(listing)]
    objects = [noun for noun, _, _ in items]
    if len(set(objects)) != len(objects):
        raise PromptParseError(f"each object may appear once in the list; got {objects}")

    if where:
        statements = _relation_statements(clause, items, objects)
    else:
        statements = _attribute_statements(listing, items, objects)

    category = _single_category([s.predicate for s in statements])
    num_pos = sum(s.polarity == "positive" for s in statements)
    num_neg = len(statements) - num_pos
    return PromptRecord(
        prompt_id="custom",
        group_id="custom",
        category=category,
        kind=kind_of(category),
        num_pos=num_pos,
        num_neg=num_neg,
        load=len(statements),
        setting=setting_name(num_pos, num_neg),
        prompt=prompt,
        objects=objects,
        statements=statements,
    )


# --------------------------------------------------------------------------- lint

_WORD = re.compile(r"[a-z][a-z-]*")
_DOUBLED_WORD = re.compile(r"\b([a-z][a-z-]*) \1\b")  # only across a space: "wine glass, glass skis" is right
_PLURAL_ALTERNATION = "|".join(sorted(map(re.escape, PLURAL_NOUNS)))
_ARTICLE_BEFORE_PLURAL = re.compile(rf"\ban? (?:(?:non-)?[a-z]+ )?({_PLURAL_ALTERNATION})\b")
_SUBJECT_VERB = re.compile(r"\bwhere the ([a-z][a-z ]*?) (is|are)\b")


def grammar_issues(prompt: str) -> list[str]:
    """English mistakes the paper's corpus made: doubled words, a/an, articles on plural-only nouns,
    and verb agreement after them. Empty when the prompt reads right."""
    issues: list[str] = []
    words = _WORD.findall(prompt.lower())
    for match in _DOUBLED_WORD.finditer(prompt.lower()):
        word = match.group(1)
        if not (word in ATTRIBUTE_VALUES and word in _CLASSES):  # "an orange orange" is right
            issues.append(f"doubled word {word!r}")
    for first, second in zip(words, words[1:], strict=False):
        if first in ("a", "an"):
            vowel = starts_with_vowel_sound(second) and not second.startswith("non-")
            if first == "a" and vowel:
                issues.append(f"'a {second}' should be 'an {second}'")
            if first == "an" and not vowel:
                issues.append(f"'an {second}' should be 'a {second}'")
    for match in _ARTICLE_BEFORE_PLURAL.finditer(prompt):
        issues.append(f"plural-only noun {match.group(1)!r} takes no article")
    for match in _SUBJECT_VERB.finditer(prompt):
        noun, verb = match.group(1), match.group(2)
        expected = "are" if noun in PLURAL_NOUNS else "is"
        if verb != expected:
            issues.append(f"'the {noun} {verb}' should be 'the {noun} {expected}'")
    return issues
