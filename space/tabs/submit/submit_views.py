"""Pure views of the Submit tab: the list of submissions (each one's verification job as Markdown),
what a stored submission's status means, and the tab's instructions. No gradio, no models, no
store: each is testable on plain data."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Literal

import pandas as pd

from leaderboard.intake.identity import shown_identity
from leaderboard.store.sqlite_store import Entry
from leaderboard.text.submitted_names import clip, plain_markdown

SUBMISSION_COLUMNS = ["submitted (UTC)", "model", "submitter", "status", "reason", "verification job", "id"]
# The job column is Markdown (its logs link); every other cell is plain text.
_LINK = re.compile(r"^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~%-]*)*$")  # a job page's address, nothing that ends a link
SUBMISSION_TYPES: list[Literal["str", "markdown"]] = ["str", "str", "str", "str", "str", "markdown", "str"]
# Widths that fit the table in 1,280 px with each header on at most two lines (the reason wraps in its cell).
SUBMISSION_WIDTHS: list[str | int] = ["140px", "170px", "150px", "90px", "340px", "220px", "90px"]
NO_SUBMISSIONS = "No submission yet: upload a results file above and it is listed here, with its verification."


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
