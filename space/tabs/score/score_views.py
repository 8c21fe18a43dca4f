"""Pure views of the Score tab beside the verdict (`space.verdict_views`): what it says when the
scorer's weights or libraries are missing, the prompt grammar shown under a prompt that does not
parse, and the example it opens on (`ScoreExample`, the demo's). No gradio, no models, no store:
each is testable on plain data, and the demo writes its example without importing gradio."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboard.text.submitted_names import plain_markdown


@dataclass(frozen=True)
class ScoreExample:
    """What the tab shows before anything is scored: a picture and its prompt in the inputs, and a
    verdict already made of it (drawn image, summary with `label` saying where it comes from, table)."""

    image: str  # the picture's file
    prompt_id: str
    drawn: Any  # the picture with the verdict drawn (PIL)
    summary: str  # Markdown: the verdict summary and its label
    table: Any  # the verdict frame


def weights_missing(models: str, markdown: bool = True) -> str:
    """What the Space says when the scorer's weights are not on this machine, and how to get them
    (the commands as code in Markdown; as plain text where the message is escaped)."""
    code = (lambda text: f"`{text}`") if markdown else (lambda text: text)
    names = plain_markdown(models) if markdown else models
    return (
        f"Scoring needs the evaluator's model weights ({names}), and they are not on this machine. Fetch them "
        f"once with {code('negt2ibench download-models')} (it needs internet access), then start this app "
        f"again, or start it with {code('negt2ibench serve --weights-dir DIR')} on a folder that "
        f"{code('download-models --dir DIR')} filled."
    )


def library_missing(module: str) -> str:
    """What the Space says when a library the scorer needs is not installed."""
    return (
        f"the scorer needs {plain_markdown(module)}, which is not installed here: install the models extra "
        '(`pip install "negt2ibench[models]"`) and start this app again.'
    )


def grammar_markdown() -> str:
    """The benchmark's prompt grammar (`dataset_builder.grammar`'s words) as a Markdown list: each
    kind of prompt with its vocabulary, its examples below it."""
    from dataset_builder.grammar import GRAMMAR_INTRO, GRAMMAR_KINDS, GRAMMAR_OBJECTS

    lines = [GRAMMAR_INTRO[:1].upper() + GRAMMAR_INTRO[1:], ""]
    for kind, examples in GRAMMAR_KINDS:
        lines.append(f"- {kind}:")
        lines += [f"    - `{example}`" for example in examples]
    lines.append(f"- {GRAMMAR_OBJECTS}")
    return "\n".join(lines)
