"""Pure view builders of the Space's Explore, Score and Submit tabs: records in, frames and
Markdown out. No gradio, no models, no store: each is testable on plain data."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Literal

import pandas as pd

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import SETTINGS, setting_label, setting_name
from evaluator.results import ResultRecord, record_verdict
from leaderboard.intake.identity import shown_identity
from leaderboard.store.sqlite_store import Entry
from leaderboard.text.submitted_names import clip, plain_markdown, shorten

ANY = "any"
EXPLORE_LIMIT = 1000  # rows shown in the prompt table and the prompt picker
SETTING_CHOICES = [(f"{setting_label(p, n)} ({setting_name(p, n)})", setting_name(p, n)) for p, n in SETTINGS]
PROMPT_COLUMNS = ["prompt_id", "setting", "prompt"]
STATEMENT_COLUMNS = ["#", "polarity", "subject", "target", "predicate", "sentence"]
VERDICT_COLUMNS = ["item", "text", "polarity", "verdict", "cause", "observed", "measured"]
SUBMISSION_COLUMNS = ["submitted (UTC)", "model", "submitter", "status", "reason", "verification job", "id"]
# The job column is Markdown (its logs link); every other cell is plain text.
_LINK = re.compile(r"^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~%-]*)*$")  # a job page's address, nothing that ends a link
SUBMISSION_TYPES: list[Literal["str", "markdown"]] = ["str", "str", "str", "str", "str", "markdown", "str"]


# -- Explore -------------------------------------------------------------------------------------------


def prompt_label(record: PromptRecord) -> str:
    return f"{record.prompt_id}: {record.prompt}"


def _any(value: Any) -> bool:
    return value in (ANY, "", None)


def filter_prompts(
    prompts: Sequence[PromptRecord], category: str = ANY, setting: str = ANY, load: str = ANY, obj: str = ANY
) -> list[PromptRecord]:
    """Prompts matching every filter that is not `any`."""
    return [
        p
        for p in prompts
        if (_any(category) or p.category == category)
        and (_any(setting) or p.setting == setting)
        and (_any(load) or str(p.load) == str(load))
        and (_any(obj) or obj in p.objects)
    ]


def prompts_frame(prompts: Sequence[PromptRecord]) -> pd.DataFrame:
    rows = [
        {"prompt_id": p.prompt_id, "setting": setting_label(p.num_pos, p.num_neg), "prompt": p.prompt} for p in prompts
    ]
    return pd.DataFrame(rows, columns=PROMPT_COLUMNS)


def matches_note(count: int) -> str:
    return f"{count} prompts" + (f" (first {EXPLORE_LIMIT} shown)" if count > EXPLORE_LIMIT else "")


def prompt_header(record: PromptRecord) -> str:
    return (
        f"### `{record.prompt_id}`\n\n> {record.prompt}\n\n"
        f"category **{record.category}** ({record.kind}), "
        f"setting **{setting_label(record.num_pos, record.num_neg)}**, "
        f"load {record.load}, objects: {', '.join(record.objects)}; matched group `{record.group_id}`"
    )


def statements_frame(record: PromptRecord | None) -> pd.DataFrame:
    from dataset_builder.grammar import statement_sentence

    rows = [
        {
            "#": s.index,
            "polarity": s.polarity,
            "subject": s.subject,
            "target": s.target or "",
            "predicate": s.predicate,
            "sentence": statement_sentence(prompt, s),
        }
        for prompt in ([record] if record else [])
        for s in prompt.statements
    ]
    return pd.DataFrame(rows, columns=STATEMENT_COLUMNS)


def group_frame(record: PromptRecord | None, prompts: Sequence[PromptRecord]) -> pd.DataFrame:
    """The other prompts of the record's matched group (same content, other polarities)."""
    return prompts_frame([p for p in prompts if record is not None and p.group_id == record.group_id])


# -- Score ---------------------------------------------------------------------------------------------


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


def error_markdown(message: str) -> str:
    """A one-line error in bold, as plain text (it may quote a stranger's input: at most a few
    hundred characters of it, its last clause kept whole: `names.shorten`); further lines (e.g. the
    grammar) below it as an indented code block, which no Markdown or HTML inside can leave."""
    first, *rest = message.splitlines() or [""]
    block = "\n".join("    " + clip(line, 300) for line in rest[:40])
    return f"**Error:** {plain_markdown(shorten(first, 600))}" + (f"\n\n{block}" if rest else "")


# -- Submit --------------------------------------------------------------------------------------------


def job_cell(entry: Entry) -> str:
    """The entry's verification job as Markdown: backend, stage, attempts, the logs link (a Hub job's
    page, or a local job's log file), the last error; the reason when no job runs. Plain text otherwise."""
    job = entry.job
    if job is None:
        return ""
    if not job.job_id:
        return plain_markdown(f"{job.backend}: {job.message}" if job.message else job.backend)
    parts = [f"{job.backend} {job.stage or 'launched'}".strip()]
    if len(job.launches) > 1:
        parts.append(f"launch {len(job.launches)}")
    if job.message:
        parts.append(job.message)
    text = plain_markdown(" · ".join(parts))
    if _LINK.match(job.url):
        text += f" · [logs]({job.url})"
    elif job.url:
        text += f" · logs: {plain_markdown(job.url)}"
    if job.last_error:
        text += f" · last error: {plain_markdown(clip(job.last_error, 200))}"
    return text


def submissions_frame(entries: Sequence[Entry]) -> pd.DataFrame:
    rows = [
        {
            "submitted (UTC)": time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.created_at)),
            "model": e.model_name,
            "submitter": shown_identity(e.submitter),
            "status": e.status,
            "reason": e.reason,
            "verification job": job_cell(e),
            "id": e.submission_id[:8],
        }
        for e in sorted(entries, key=lambda e: e.created_at, reverse=True)
    ]
    return pd.DataFrame(rows, columns=SUBMISSION_COLUMNS)


# What each stored status means for the submitter (leaderboard/intake/submissions.py's state machine), in
# words that do not repeat the status itself.
STATUS_MEANING: dict[str, str] = {
    "received": "stored; its file is being checked",
    "validated": "stored and its file checked; the spot check runs next, as a verification job: refresh the list "
    "below to follow it",
    "verified": "ranked on the leaderboard",
    "rejected": "stored but not ranked; it counts toward the daily limit",
    "pending": "stored and listed apart from the ranking until its spot check can run; it is retried automatically",
    "held": "stored and listed apart: ranked only after a maintainer's full re-score",
    "withdrawn": "withdrawn by a maintainer; not on the leaderboard",
}
# The statuses whose stored reason only restates what STATUS_MEANING says (the state machine's own words).
SAYS_NO_MORE = ("received", "validated")


def submission_message(entry: Entry) -> str:
    """What the Submit tab says about a stored submission: its stored status, what that means, and
    its stored reason where the reason adds something; each said once."""
    meaning = STATUS_MEANING.get(entry.status, "")
    why = "" if entry.status in SAYS_NO_MORE or not entry.reason else f" Why: {plain_markdown(entry.reason)}."
    return (
        f"**{plain_markdown(entry.model_name)}**: status **{entry.status}**: {meaning} "
        f"(id `{entry.submission_id[:8]}`).{why}"
    )


def submit_help(
    *,
    version: str,
    config_hash: str,
    sample: int,
    tolerance: int,
    max_megabytes: int,
    per_day: int,
    invalid_per_hour: int = 10,
) -> str:
    """The Submit tab's instructions: what to upload, where the images go, what happens, the limits."""
    return (
        f"Submit the JSONL written by `negt2ibench score` for all 4,800 prompts × 4 samples, scored with "
        f"evaluator {version} / config `{config_hash}` (the `current` preset).\n\n"
        "The images must be on the Hub so they can be re-scored: publish them from your dataset folder with "
        "`negt2ibench push --repo-id ORG/NAME --images KEY`, where KEY, the images split, is the `model_key` "
        "of your results (`score --model-key KEY`); enter ORG/NAME and its revision below.\n\n"
        f"After you submit, {sample} of your images, drawn with a seed nobody knows in advance, are re-scored "
        "by a verification job (the list below shows its state and logs): an image disagrees when its pass "
        "or fail, a statement's verdict or cause, an object's presence "
        f"or whether it could be scored differs; at most {tolerance} may → **verified (sampled)** and ranked; "
        "more → **rejected**. A file that disagrees with a re-score on 2% of its images or more gets through "
        "with probability at most 1%, per account however often it tries: after a rejection, your later "
        "submissions (and those verified by a sample) are **held**, ranked only after a full re-score, as is "
        "a file with error rows. An honest file (0.26% of images flipped by hardware) is rejected with "
        "probability at most 1%. While the check runs, or when it cannot run now (images unreachable, a failed "
        "job), the submission is **pending**: stored, listed apart, and retried automatically. "
        "A maintainer's full re-score (`negt2ibench leaderboard verify --full`) replaces your numbers with "
        "the project's own: **verified (full re-score)**.\n\n"
        f"Limits: {max_megabytes} MB per file; {per_day} stored submissions per user per 24 hours, whatever "
        "their outcome; one submission at a time. A file refused as invalid (malformed, incomplete, another "
        f"evaluator version) is not stored and does not count toward the day's, but at most {invalid_per_hour} "
        "are taken per hour."
    )
