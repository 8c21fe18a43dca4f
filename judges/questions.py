"""The questions a VLM judge (and an annotator) is asked, one wording for every mode
(docs/validation.md, paper Table 2 and Figure 7).

Modes:
- ``whole``: one question, the prompt itself:
  'Does this image show "a photo of a red cup and a non-red bowl"? Answer yes or no.'
- ``pos``: one question per required object ("Is there a cup in the image?") and one per
  statement, always asked affirmatively ("Is the cup red?", "Is the backpack left of the fork?");
  a negated statement is satisfied when the answer is "no" (its p_yes is inverted).
- ``neg``: as ``pos``, but negated statements are asked in negated form ("Is the cup not red?",
  "Is the backpack not left of the fork?"), satisfied when the answer is "yes". Objects and
  positive statements are asked exactly as in ``pos``.

The per-element wording (`object_question`, `statement_question`) is also the annotation UI's
(`validation.questions`), so people and judges answer the very same questions: "a"/"an" by sound,
plural-only nouns (skis, scissors) take no article and "are" ("Are there skis in the image?",
"Are the skis red?"), materials are asked as "made of" ("Is the cup made of glass?").
`wording_examples()` renders one question of each kind; it is hashed into every record's config,
so a wording change never mixes with old results in one file.

    >>> object_question("apple")
    'Is there an apple in the image?'
    >>> object_question("skis")
    'Are there skis in the image?'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from dataset_builder.grammar import object_phrase
from dataset_builder.records import PromptRecord, Statement
from dataset_builder.vocabulary import MATERIAL_NOUNS, PLURAL_NOUNS, Polarity

Mode = Literal["whole", "pos", "neg"]
MODES: tuple[str, ...] = ("whole", "pos", "neg")

WHOLE_TEMPLATE = 'Does this image show "{prompt}"? Answer yes or no.'


def _verb(noun: str) -> str:
    return "Are" if noun in PLURAL_NOUNS else "Is"


def object_question(name: str) -> str:
    """The question whether an object is in the image.

    Args:
        name: the object's name.

    Returns:
        "Is there a cup in the image?", "Is there an orange in the image?", "Are there scissors in
        the image?".
    """
    return f"{_verb(name)} there {object_phrase(name)} in the image?"


def _predicate_phrase(statement: Statement) -> str:
    """What is asked about the subject: "red", "made of glass", "left of the fork"."""
    if statement.target is not None:
        return f"{statement.predicate} the {statement.target}"
    if statement.predicate in MATERIAL_NOUNS:
        return f"made of {MATERIAL_NOUNS[statement.predicate]}"
    return statement.predicate


def statement_question(statement: Statement, negated_form: bool = False) -> str:
    """The question for one statement.

    Affirmative by default, whatever the statement's polarity ("Is the backpack left of the
    fork?" for "is not left of the fork"). With `negated_form`, a *negated* statement is asked
    as negated ("Is the backpack not left of the fork?"); positive statements are unchanged.
    A "yes" to the affirmative question satisfies a positive statement and violates a negated
    one; a "yes" to the negated form satisfies the negated statement.

        >>> from dataset_builder.records import Statement
        >>> s = Statement(index=0, polarity="negated", subject="skis", target="bench",
        ...               predicate="bigger than", text="are not bigger than the bench")
        >>> statement_question(s)
        'Are the skis bigger than the bench?'
        >>> statement_question(s, negated_form=True)
        'Are the skis not bigger than the bench?'

    Args:
        statement: the prompt's statement.
        negated_form: ask a negated statement in its negated form.

    Returns:
        The question.
    """
    negation = " not" if negated_form and statement.negated else ""
    return f"{_verb(statement.subject)} the {statement.subject}{negation} {_predicate_phrase(statement)}?"


@dataclass(frozen=True)
class Question:
    """One question about one element of a prompt, and how its answer maps to satisfaction.

    `element` names what is asked about: ``"prompt"``, ``"object:<name>"`` or
    ``"statement:<index>"``. `inverted` is True when "no" satisfies the element (a negated
    statement asked affirmatively): p_satisfied = 1 - p_yes.
    """

    element: str
    text: str
    inverted: bool = False

    def satisfaction(self, p_yes: float) -> float:
        """How much a "yes" satisfies the element asked about.

        Args:
            p_yes: the judge's P("yes").

        Returns:
            P(satisfied): 1 − p_yes for an inverted question (a negated statement asked affirmatively),
            else p_yes.
        """
        return 1.0 - p_yes if self.inverted else p_yes


def whole_question(prompt: str) -> str:
    """The `whole` mode's single question about a prompt text.

    Args:
        prompt: the prompt's text.

    Returns:
        The question.
    """
    return WHOLE_TEMPLATE.format(prompt=prompt)


@cache
def wording_examples() -> dict[str, str]:
    """One rendered question of each kind (what a run's config hash covers).

    Returns:
        Each kind's name → its question.
    """

    def statement(polarity: Polarity, subject: str, predicate: str, target: str | None = None) -> Statement:
        return Statement(index=0, polarity=polarity, subject=subject, target=target, predicate=predicate, text="")

    color = statement("negated", "cup", "red")
    material = statement("negated", "skis", "glass")
    relation = statement("negated", "backpack", "left of", "fork")
    return {
        "whole": whole_question("a photo of a red cup"),
        "object": object_question("apple"),
        "object_plural": object_question("skis"),
        "color": statement_question(color, negated_form=False),
        "color_negated": statement_question(color, negated_form=True),
        "material": statement_question(material, negated_form=False),
        "material_negated": statement_question(material, negated_form=True),
        "relation": statement_question(relation, negated_form=False),
        "relation_negated": statement_question(relation, negated_form=True),
        "positive_in_negated_form": statement_question(statement("positive", "cup", "red"), negated_form=True),
    }


def required_objects(prompt: PromptRecord) -> list[str]:
    """The prompt's objects, each once, in mention order.

    Args:
        prompt: a prompt record.

    Returns:
        The object names.
    """
    return list(dict.fromkeys(prompt.objects))


def questions_for(prompt: PromptRecord, mode: str) -> list[Question]:
    """Every question `mode` asks about `prompt`, objects first, then statements by index.

    Args:
        prompt: a prompt record.
        mode: `whole` (one question, the prompt), `pos` (every statement asked affirmatively) or
            `neg` (negated statements asked in negated form).

    Returns:
        The questions, each with the element it asks about and whether a "yes" is inverted.

    Raises:
        ValueError: an unknown mode.
    """
    if mode == "whole":
        return [Question("prompt", whole_question(prompt.prompt))]
    if mode not in ("pos", "neg"):
        raise ValueError(f"unknown judge mode {mode!r}; expected one of {', '.join(MODES)}")
    questions = [Question(f"object:{name}", object_question(name)) for name in required_objects(prompt)]
    for statement in sorted(prompt.statements, key=lambda s: s.index):
        negated_form = mode == "neg" and statement.negated
        questions.append(
            Question(
                f"statement:{statement.index}",
                statement_question(statement, negated_form=negated_form),
                inverted=statement.negated and not negated_form,
            )
        )
    return questions
