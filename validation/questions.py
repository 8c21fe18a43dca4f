"""The annotation UI's questions: one yes/no question per element of a prompt (docs/validation.md,
paper Figure 7).

People and VLM judges answer the same questions, so the wording is the judges' own
(`judges.questions.object_question`, `statement_question`): objects are asked as "Is there a cup
in the image?", statements **affirmatively**, negated ones included (for "a photo of a non-red
cup" the question is "Is the cup red?", and a correct image gets "no"). This module adds what an
annotation record stores: each element's kind, key and polarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dataset_builder.records import PromptRecord
from judges.questions import object_question, statement_question

ElementKind = Literal["object", "statement"]


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
