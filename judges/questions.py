"""The questions a VLM judge is asked, one wording for every mode (DESIGN §7, paper Table 2).

Modes:
- ``whole``: one question, the prompt itself:
  'Does this image show "a photo of a red cup and a non-red bowl"? Answer yes or no.'
- ``pos``: one question per required object ("Is there a cup in the image?") and one per
  statement, always asked affirmatively ("Is the cup red?", "Is the backpack left of the fork?");
  a negated statement is satisfied when the answer is "no" (its p_yes is inverted).
- ``neg``: as ``pos``, but negated statements are asked in negated form ("Is the cup not red?",
  "Is the backpack not left of the fork?"), satisfied when the answer is "yes". Objects and
  positive statements are asked exactly as in ``pos``.

English: "a"/"an" by sound, plural-only nouns (skis, scissors) take no article and "are"
("Are there skis in the image?", "Are the skis red?"); materials are asked as "made of"
("Is the cup made of glass?"), the form `vocabulary.MATERIAL_NOUNS` exists for.
Everything that shapes a question is in `TEMPLATES`, which is hashed into each record's config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dataset_builder.grammar import object_phrase
from dataset_builder.records import PromptRecord, Statement
from dataset_builder.vocabulary import CATEGORY_VOCABULARY, MATERIAL_NOUNS, PLURAL_NOUNS

Mode = Literal["whole", "pos", "neg"]
MODES: tuple[str, ...] = ("whole", "pos", "neg")

TEMPLATES: dict[str, str] = {
    "whole": 'Does this image show "{prompt}"? Answer yes or no.',
    "object": "{Be} there {object_phrase} in the image?",
    "color": "{Be} the {subject} {not}{value}?",
    "material": "{Be} the {subject} {not}made of {material}?",
    "relation": "{Be} the {subject} {not}{predicate} the {target}?",
}

_MATERIALS = frozenset(CATEGORY_VOCABULARY["material"])


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
        return 1.0 - p_yes if self.inverted else p_yes


def _be(noun: str) -> str:
    return "Are" if noun in PLURAL_NOUNS else "Is"


def whole_question(prompt: str) -> str:
    """The `whole` mode's single question about a prompt text."""
    return TEMPLATES["whole"].format(prompt=prompt)


def object_question(name: str) -> str:
    """ "Is there a cup in the image?", "Is there an apple ...", "Are there skis ..."."""
    return TEMPLATES["object"].format(Be=_be(name), object_phrase=object_phrase(name))


def statement_question(statement: Statement, *, negated_form: bool) -> str:
    """A statement as a yes/no question, affirmative or (when `negated_form`) with "not".

    >>> from dataset_builder.records import Statement
    >>> s = Statement(index=0, polarity="negated", subject="backpack", target="fork",
    ...               predicate="left of", text="is not left of the fork")
    >>> statement_question(s, negated_form=False)
    'Is the backpack left of the fork?'
    >>> statement_question(s, negated_form=True)
    'Is the backpack not left of the fork?'
    """
    fields = {"Be": _be(statement.subject), "subject": statement.subject, "not": "not " if negated_form else ""}
    if statement.target is not None:
        return TEMPLATES["relation"].format(predicate=statement.predicate, target=statement.target, **fields)
    if statement.predicate in _MATERIALS:
        return TEMPLATES["material"].format(material=MATERIAL_NOUNS[statement.predicate], **fields)
    return TEMPLATES["color"].format(value=statement.predicate, **fields)


def required_objects(prompt: PromptRecord) -> list[str]:
    """The prompt's objects, each once, in mention order."""
    return list(dict.fromkeys(prompt.objects))


def questions_for(prompt: PromptRecord, mode: str) -> list[Question]:
    """Every question `mode` asks about `prompt`, objects first, then statements by index."""
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
