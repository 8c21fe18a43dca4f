"""Pure views of a result record's verdict, as the Score tab shows a scored upload and the Gallery
and Compare tabs an image's full view: the verdict's summary and the per-object and per-statement
table. No gradio, no models, no store: each is testable on plain data."""

from __future__ import annotations

import pandas as pd

from dataset_builder.records import PromptRecord
from evaluator.results import ResultRecord, record_verdict
from leaderboard.text.submitted_names import plain_markdown

VERDICT_COLUMNS = ["item", "text", "polarity", "verdict", "cause", "observed", "measured"]


def verdict_frame(prompt: PromptRecord | None, result: ResultRecord | None) -> pd.DataFrame:
    """Every object and statement of the prompt with its verdict, cause and measured numbers."""
    from evaluator.annotate import statement_table

    if prompt is None or result is None:
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    rows = []
    for obj in result.objects:
        box = ", ".join(f"{v:.0f}" for v in obj.box) if obj.box else ""
        rows.append(
            {
                "item": "object",
                "text": obj.name,
                "polarity": "",
                "verdict": "present" if obj.present else "missing",
                "cause": "",
                "observed": "",
                "measured": f"confidence={obj.confidence:.3f}" + (f"; box=[{box}]" if box else ""),
            }
        )
    for row in statement_table(prompt, result):
        rows.append(
            {
                "item": f"statement {row['index']}",
                "text": row["statement"],
                "polarity": row["polarity"],
                "verdict": row["verdict"],
                "cause": row["cause"],
                "observed": row["observed"],
                "measured": row["measurements"],
            }
        )
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def verdict_summary(prompt: PromptRecord, result: ResultRecord, stand_in: str = "") -> str:
    """The verdict's heading, the prompt and the counts; `stand_in` (the name of a perception given
    in place of the models, a test double) marks the verdict as that double's."""
    verdict = record_verdict(result).upper()
    satisfied = sum(s.satisfied for s in result.statements)
    summary = (
        f"## Image verdict: <span class='verdict-{verdict.lower()}'>{verdict}</span>\n\n"
        f"> {plain_markdown(prompt.prompt)}\n\n"
        f"{sum(o.present for o in result.objects)}/{len(result.objects)} objects present, "
        f"{satisfied}/{len(result.statements)} statements satisfied "
        f"(evaluator {result.evaluator_version}, config {result.config_hash})"
    )
    return summary + (f"\n\n{stand_in_note(stand_in)}" if stand_in else "")


def stand_in_note(name: str) -> str:
    """Says that verdicts here come from a stand-in for the evaluator's models (a test double)."""
    return (
        f"**Not the evaluator's models:** verdicts here come from {plain_markdown(name)}, a test double this "
        "app was built with in its models' place; they say nothing about what the models would see."
    )
