"""The `.eval_results` YAML the Space issues for a verified entry, and where the Hub settings come from.

A verified entry's file is `evaluator.hub_results`'s (one `EvalResultEntry` per `eval.yaml` task,
values from the entry's ranked row by `task_values`, the report's rounding), with `dataset.revision`
the benchmark dataset's commit (read from the Hub by the caller), `date` when the ranked numbers
were scored (`scored_date`), `source.url` the entry's own page in the Space (`entry_page_url`: the
Space's address with `?entry=<submission id>`; a Space page passes its query string on to the app,
which opens that entry's detail) and `notes` saying how it was verified (`verification_note`), on
which images (`pinned_images_note`: `images: ORG/NAME@SHA`, the commit pinned when the submission was
stored; the spec's `source` is the one place a reader follows, so it stays the entry's page) and
whether they were reproduced (`images_note`). A pending, validated, received or rejected entry has
none (`no_yaml_reason` says why).

Settings: the benchmark's Hub dataset (`hub_dataset_id`: NEGT2I_HUB_DATASET, else the repo an
earlier `push` wrote into the dataset folder's card) and the Space's address (`space_base_url`:
NEGT2I_SPACE_URL, else `https://huggingface.co/spaces/$SPACE_ID` on a Space).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from evaluator.hub_results import eval_result_entries, eval_results_yaml, iso_time, scorer_note, task_values
from leaderboard.store.image_sources import COMMIT
from leaderboard.store.ranking import why_not_reproduced
from leaderboard.store.sqlite_store import Entry
from leaderboard.text.submitted_names import MAX_REPO_ID, clip, terminal_text

HUB_DATASET_ENV = "NEGT2I_HUB_DATASET"
SPACE_URL_ENV = "NEGT2I_SPACE_URL"
ENTRY_PARAM = "entry"  # the query parameter of an entry's page
SOURCE_NAME = "NegT2IBench Space (verified entry)"
HUB_HOSTS = ("huggingface.co", "hf.co", "www.huggingface.co")
# First path segments of huggingface.co pages that are not a model repo.
_NOT_MODELS = frozenset(
    {"datasets", "spaces", "docs", "papers", "collections", "models", "organizations", "blog", "posts", "settings"}
)


def hub_dataset_id(explicit: str | None = None, dataset_folder: str | Path | None = None) -> str | None:
    """The benchmark's dataset repo: EXPLICIT, NEGT2I_HUB_DATASET, or the repo the folder's card names."""
    if explicit:
        return explicit
    if os.environ.get(HUB_DATASET_ENV):
        return os.environ[HUB_DATASET_ENV]
    if dataset_folder is not None:
        from dataset_builder.card import published_repo_id

        return published_repo_id(Path(dataset_folder))
    return None


def space_base_url(explicit: str | None = None) -> str | None:
    """The Space's public address: EXPLICIT, NEGT2I_SPACE_URL, or the Hub page of $SPACE_ID."""
    if explicit:
        return explicit
    if os.environ.get(SPACE_URL_ENV):
        return os.environ[SPACE_URL_ENV]
    space_id = os.environ.get("SPACE_ID")
    return f"https://huggingface.co/spaces/{space_id}" if space_id else None


def entry_page_url(base: str, submission_id: str) -> str:
    """BASE with `?entry=SUBMISSION_ID` (any query BASE had is replaced)."""
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", f"{ENTRY_PARAM}={submission_id}", ""))


def model_repo_of(entry: Entry) -> str | None:
    """ORG/NAME when the entry's link is a model page on the Hub (`https://huggingface.co/ORG/NAME...`),
    else None: the Hub's rows are matched to entries by it."""
    parts = urlsplit(entry.link or "")
    segments = [segment for segment in parts.path.split("/") if segment]
    if parts.netloc.lower() not in HUB_HOSTS or len(segments) < 2 or segments[0] in _NOT_MODELS:
        return None
    return f"{segments[0]}/{segments[1]}"


def verification_note(entry: Entry) -> str:
    """How the entry was verified: `sampled n=652, d=0 (...)` or `full re-score (...)`."""
    check = entry.verification
    if check is None:
        return "verified by the NegT2IBench Space"
    if check.method == "full":
        return f"verified by the NegT2IBench Space: full re-score of {check.total:,} images"
    allowed = f"; at most {check.allowed} may" if check.allowed is not None else ""
    return (
        f"verified by the NegT2IBench Space: sampled n={check.checked}, d={check.disagreements} "
        f"({check.checked} of {check.total:,} images re-scored, {check.disagreements} disagreed{allowed})"
    )


def pinned_images_note(entry: Entry) -> str:
    """Which images the entry was verified on: `images: ORG/NAME@SHA`, the commit its revision was
    pinned to when stored. An entry stored before revisions were pinned holds a branch or tag, which
    may have moved since: it says `not pinned to a commit` and never names that revision."""
    repo = terminal_text(clip(entry.images_repo, MAX_REPO_ID)) if entry.images_repo else "(no repo recorded)"
    if COMMIT.fullmatch(entry.images_revision):
        return f"images: {repo}@{entry.images_revision}"
    return f"images: {repo}, not pinned to a commit (stored before revisions were pinned)"


def images_note(entry: Entry) -> str:
    """Whether the entry's images are the model's own (`images not reproduced` with its reason when the
    job could not show it), and its fresh draw when there is one."""
    check = entry.regeneration
    if check is None or check.outcome != "reproduced":
        return why_not_reproduced(entry)
    model = check.model_id + (f"@{check.commit[:12]}" if check.commit else "")
    note = f"images reproduced: {check.checked - check.not_own} of {check.checked} regenerated from {model} agree"
    draw = entry.fresh_draw
    if draw is not None:
        low, high = draw.gap_interval
        note += (
            f"; fresh draw (seed {draw.seed}, {draw.prompts} prompts): {draw.accuracy:.1f}% against "
            f"{draw.public:.1f}%, gap {draw.gap:+.1f} [{low:+.1f}, {high:+.1f}]"
        )
    return note


def no_yaml_reason(entry: Entry) -> str:
    """Why the entry has no `.eval_results` YAML ("" when it has one)."""
    if entry.status != "verified":
        return f"only verified entries get an .eval_results file; this one is {entry.status}"
    if not entry.row:
        return "this entry has no ranked numbers"
    return ""


def scored_date(entry: Entry) -> str:
    """When the entry's ranked numbers were scored, as an entry's `date`: a full re-score's own time;
    for a sampled verification the submitted numbers were scored before the submission, its time."""
    check = entry.verification
    return iso_time(check.at if check is not None and check.method == "full" else entry.created_at)


def entry_eval_results(entry: Entry, *, dataset_id: str, dataset_revision: str, page_url: str) -> str:
    """The `.eval_results` YAML of a verified entry (a ValueError for any other, with the reason)."""
    reason = no_yaml_reason(entry)
    if reason:
        raise ValueError(reason)
    notes = (
        f"{scorer_note(entry.evaluator_version, entry.config_hash)}; {verification_note(entry)}; "
        f"{pinned_images_note(entry)}; {images_note(entry)}"
    )
    entries = eval_result_entries(
        task_values(entry.row or {}),
        dataset_id=dataset_id,
        notes=notes,
        dataset_revision=dataset_revision,
        date=scored_date(entry),
        source_url=page_url,
        source_name=SOURCE_NAME,
    )
    name = terminal_text(clip(entry.model_name, 100))  # a YAML comment: no character YAML refuses, one line
    title = f"NegT2IBench scores of {name}, entry {entry.submission_id[:8]} of the NegT2IBench Space"
    return eval_results_yaml(entries, title=title)
