"""The yes/no question for each element of a prompt (DESIGN §7, paper Figure 7).

People and VLM judges answer the same questions. Objects are asked as "Is there a cup in the
image?". Statements are asked **affirmatively** by default, negated ones included: for "a photo
of a non-red cup" the question is "Is the cup red?", and a correct image gets "no". VLM judges
have a second wording (`neg` mode, Table 2) that asks a negated statement in its negated form
("Is the cup not red?"); `negated_form=True` gives it. Positive statements read the same in both.

English: "a"/"an" by sound, plural-only nouns (skis, scissors) take no article and "are".

    >>> object_question("apple")
    'Is there an apple in the image?'
    >>> object_question("skis")
    'Are there skis in the image?'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dataset_builder.grammar import object_phrase
from dataset_builder.records import PromptRecord, Statement
from dataset_builder.vocabulary import MATERIAL_NOUNS, PLURAL_NOUNS

ElementKind = Literal["object", "statement"]


def _verb(noun: str) -> str:
    return "Are" if noun in PLURAL_NOUNS else "Is"


def object_question(name: str) -> str:
    """ "Is there a cup in the image?", "Is there an orange in the image?", "Are there scissors in the image?"."""
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
    """
    negation = " not" if negated_form and statement.negated else ""
    return f"{_verb(statement.subject)} the {statement.subject}{negation} {_predicate_phrase(statement)}?"


@dataclass(frozen=True)
class Question:
    """One element of a prompt and its question.

    `key` is how the annotation record stores the answer: the object's name in ``objects``,
    or the statement's index as a string in ``statements``.
    """

    kind: ElementKind
    key: str
    text: str
    polarity: Literal["positive", "negated"] = "positive"  # objects are always required present

    @property
    def element(self) -> str:
        """A unique id within the prompt: ``object:cup``, ``statement:1``."""
        return f"{self.kind}:{self.key}"


def prompt_questions(prompt: PromptRecord, *, negated_form: bool = False) -> list[Question]:
    """Every question of a prompt in the order the annotation UI asks them: objects in mention
    order, then statements by index.

        >>> from dataset_builder.grammar import parse_prompt
        >>> [q.text for q in prompt_questions(parse_prompt("a photo of a non-red cup"))]
        ['Is there a cup in the image?', 'Is the cup red?']
    """
    questions = [Question("object", name, object_question(name)) for name in prompt.objects]
    questions += [
        Question("statement", str(s.index), statement_question(s, negated_form), s.polarity)
        for s in sorted(prompt.statements, key=lambda s: s.index)
    ]
    return questions
