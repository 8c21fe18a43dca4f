"""Pure view builders of the Annotate tab (paper Figure 7): records in, Markdown and plain values out.

What the annotator sees is decided here, so it is easy to check what they do *not* see: the
image and the whole prompt, then one yes/no question per required object and one per
statement, each statement asked affirmatively (`validation.questions`): for "the backpack is
not left of the fork" the question is "Is the backpack left of the fork?". Never the expected
answers, the generator (model key), the sample's stratum, or other annotators' answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dataset_builder.records import PromptLookup, PromptRecord
from leaderboard.text.submitted_names import plain_markdown
from validation.annotations import AnnotationRecord
from validation.assignment import Progress
from validation.labels import RATERS
from validation.questions import Question, prompt_questions

ANSWERS = ("yes", "no")

INSTRUCTIONS = """\
Look at the image, read the prompt, then answer every question about **what the image shows**
(not what the prompt asks for). An object that is not in the image: answer *no* to its question;
you may then answer the questions about it as you like.

**Keyboard:** `y` / `n` answer the first unanswered question · `Enter` saves and goes on ·
`←` / `→` go back to your previous image / forward again. You can go back and change any answer:
press *Save* again and the new answer replaces the old one. Answers are stored as soon as you save.
"""

# Installed once per page load (an event's `js`): the shortcuts act only while the Annotate tab
# is visible and no text field has the focus.
KEYBOARD_JS = """
() => {
  if (window.__negt2iAnnotateKeys) return;
  window.__negt2iAnnotateKeys = true;
  const visible = (el) => el && el.offsetParent !== null;
  const click = (id) => {
    const button = document.getElementById(id);
    if (visible(button) && !button.disabled) button.click();
  };
  document.addEventListener("keydown", (event) => {
    if (!visible(document.getElementById("annotate-panel"))) return;
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const target = event.target;
    const typing = target && (target.isContentEditable || target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && !["radio", "checkbox", "button"].includes(target.type)));
    if (typing) return;
    const key = event.key.toLowerCase();
    if (key === "y" || key === "n") {
      const groups = [...document.querySelectorAll("[id^=annotate-q-]")].filter(visible);
      const open = groups.find((group) => !group.querySelector("input[type=radio]:checked"));
      const choice = open && open.querySelector(`input[type=radio][value="${key === "y" ? "yes" : "no"}"]`);
      if (choice) { choice.click(); event.preventDefault(); }
    } else if (event.key === "Enter") { click("annotate-save"); event.preventDefault(); }
    else if (event.key === "ArrowLeft") { click("annotate-back"); event.preventDefault(); }
    else if (event.key === "ArrowRight") { click("annotate-forward"); event.preventDefault(); }
  });
}
"""


@dataclass(frozen=True)
class Slot:
    """One question component's state: shown with this label and value, or hidden."""

    label: str = ""
    value: str | None = None
    visible: bool = False


def prompt_markdown(prompt: PromptRecord, number: int | None = None) -> str:
    """The prompt in full, as the generator got it (and the image's number in the annotator's order)."""
    title = f"### Image {number}" if number is not None else "### Image"
    return f"{title}\n\n**Prompt:** {prompt.prompt}"


def questions_of(prompt: PromptRecord) -> list[Question]:
    """The annotator's questions: objects, then statements by index, every statement affirmative."""
    return prompt_questions(prompt, negated_form=False)


def stored_answers(questions: Sequence[Question], record: AnnotationRecord | None) -> list[str | None]:
    """The annotator's own earlier answers ("yes" / "no") for each question, None where unanswered."""
    if record is None:
        return [None] * len(questions)
    answers = []
    for question in questions:
        raw = (record.objects if question.kind == "object" else record.statements).get(question.key)
        answers.append(None if raw is None else ANSWERS[0] if raw else ANSWERS[1])
    return answers


def slots(questions: Sequence[Question], answers: Sequence[str | None], count: int) -> list[Slot]:
    """`count` component states: the questions numbered in order, the rest hidden."""
    if len(questions) > count:
        raise ValueError(f"{len(questions)} questions but only {count} question components")
    shown = [Slot(f"{i + 1}. {q.text}", a, True) for i, (q, a) in enumerate(zip(questions, answers, strict=True))]
    return shown + [Slot()] * (count - len(shown))


def unanswered(questions: Sequence[Question], answers: Sequence[str | None]) -> list[int]:
    """1-based numbers of the questions without a yes/no answer."""
    return [i + 1 for i, a in enumerate(answers[: len(questions)]) if a not in ANSWERS]


def raw_answers(
    questions: Sequence[Question], answers: Sequence[str | None]
) -> tuple[dict[str, bool], dict[str, bool]]:
    """(objects, statements) of an annotation record from the yes/no answers, in question order."""
    objects: dict[str, bool] = {}
    statements: dict[str, bool] = {}
    for question, answer in zip(questions, answers, strict=False):
        if answer not in ANSWERS:
            raise ValueError(f"question {question.key!r} has no yes/no answer")
        (objects if question.kind == "object" else statements)[question.key] = answer == ANSWERS[0]
    return objects, statements


def progress_markdown(annotator: str, progress: Progress, *, reviewing: bool = False, per_image: int = RATERS) -> str:
    """ "**alice** · 3 done · 597 left for you · 0 of 600 images complete (3 annotators)"."""
    line = (
        f"**{plain_markdown(annotator)}** · {progress.done} done · {progress.left} left for you · "
        f"{progress.complete} of {progress.total} images complete ({per_image} annotators)"
    )
    if reviewing:
        line += " · *reviewing an earlier answer: change it and press Save*"
    return line


def finished_markdown(progress: Progress) -> str:
    if progress.done:
        return (
            f"### Nothing left for you\n\nYou annotated {progress.done} image(s): thank you. "
            "Press ← to review your answers."
        )
    return "### Nothing left for you\n\nEvery image already has three annotators."


def signed_out_markdown(require_login: bool) -> str:
    if require_login:
        return "Sign in with Hugging Face (button above), then press **Start**."
    return "Type your name (it is stored with your answers), then press **Start**."


def no_sample_markdown() -> str:
    return (
        "No annotation sample is configured. Draw one with `negt2ibench annotation-sample` and serve it with "
        "`negt2ibench serve --annotation-sample sample.jsonl` (on a Space: set `NEGT2I_ANNOTATION_SAMPLE`)."
    )


def question_count(prompts: PromptLookup, prompt_ids: Sequence[str]) -> int:
    """How many question components the tab needs: the most questions of any prompt in the sample."""
    return max((len(questions_of(prompts[p])) for p in set(prompt_ids)), default=1)
