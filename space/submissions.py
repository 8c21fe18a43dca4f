"""Leaderboard submissions: limits, validation, spot check and status.

`submit()` is the whole flow. Limits (file size, submissions per user per day, a model name
owned by another submitter) refuse a submission without storing anything. A file that fails
validation is stored as a *rejected* entry with the reason (it counts toward the daily limit).
A valid one is stored *pending* with its leaderboard row; then k random images are re-scored
from the submitted images dataset: all verdicts agree (within the tolerance) → *verified*, too
many disagree → *rejected*, images not reachable → stays *pending* with that reason.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from dataset_builder.layout import split_files, split_glob
from dataset_builder.records import PromptIndex, PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION, PRESETS, EvaluatorConfig
from evaluator.results import ResultRecord
from negt2ibench.errors import UserError

from .store import Entry, LeaderboardStore, OwnershipError, model_key_of

DAY_SECONDS = 24 * 60 * 60


class SubmissionError(UserError, ValueError):
    """A submission refused before anything was stored (limits, ownership, missing fields)."""


class ImagesUnreachable(UserError, RuntimeError):
    """The submitted images dataset cannot be read from here."""


@dataclass(frozen=True)
class SubmissionLimits:
    max_bytes: int = 200 * 1024 * 1024  # 19,200 result lines are ~30-60 MB
    per_day: int = 5
    spot_check_k: int = 8
    spot_check_tolerance: int = 1  # verdict flips allowed (GPU non-determinism at score margins)


@dataclass(frozen=True)
class SubmissionForm:
    """What the submitter types in."""

    model_name: str
    link: str
    images_repo: str
    images_revision: str
    submitter: str


class ImageSource(Protocol):
    def image(self, prompt_id: str, sample_index: int) -> Image.Image:
        """The submitted image; raises ImagesUnreachable if it cannot be read."""


# Re-scores one image: (image, prompt, model_key, sample_index) -> result.
ScoreFn = Callable[[Image.Image, PromptRecord, str, int], ResultRecord]
# Opens the images of a submission: (repo_id, revision, split) -> ImageSource.
ImageSourceFactory = Callable[[str, str, str], ImageSource]


class ParquetImages:
    """Images of one split read from parquet files (a local dataset folder or Hub paths)."""

    def __init__(self, files: Sequence[str], filesystem: Any = None):
        if not files:
            raise ImagesUnreachable("no image parquet files for this split")
        self.files = list(files)
        self.filesystem = filesystem

    @classmethod
    def from_folder(cls, folder: str | Path, split: str) -> ParquetImages:
        """A dataset folder laid out as the Hub repo: ``images/<split>-*.parquet`` (`dataset_builder.layout`)."""
        files = [str(path) for path in split_files(folder, split)]
        if not files:
            raise ImagesUnreachable(f"images not reachable: no {split_glob(split)} in {folder}")
        return cls(files)

    def image(self, prompt_id: str, sample_index: int) -> Image.Image:
        import pyarrow.dataset as ds

        try:
            dataset = ds.dataset(self.files, format="parquet", filesystem=self.filesystem)
            table = dataset.to_table(
                columns=["image"],
                filter=(ds.field("prompt_id") == prompt_id) & (ds.field("sample_index") == sample_index),
            )
        except Exception as error:  # noqa: BLE001 - any read failure means: not reachable
            raise ImagesUnreachable(f"images not reachable: {type(error).__name__}: {error}") from None
        if table.num_rows == 0:
            raise ImagesUnreachable(f"images dataset has no image for {prompt_id} sample {sample_index}")
        from evaluator.images import ImageError, load_image

        cell = table.column("image")[0].as_py()
        data = cell["bytes"] if isinstance(cell, dict) else cell
        try:
            return load_image(data)
        except ImageError as error:
            raise ImagesUnreachable(f"{prompt_id} sample {sample_index} is not a usable image: {error}") from None


def hub_images(repo_id: str, revision: str, split: str) -> ImageSource:
    """The images split of a Hub dataset repo, read lazily over HTTP (only the rows needed)."""
    try:
        from huggingface_hub import HfFileSystem

        filesystem = HfFileSystem(token=os.environ.get("HF_TOKEN"))
        files = filesystem.glob(f"datasets/{repo_id}@{revision or 'main'}/{split_glob(split)}")
    except Exception as error:  # noqa: BLE001 - offline, missing repo, private repo ...
        raise ImagesUnreachable(f"images not reachable: {type(error).__name__}: {error}") from None
    if not files:
        raise ImagesUnreachable(f"images not reachable: {repo_id}@{revision} has no {split_glob(split)}")
    return ParquetImages(files, filesystem=filesystem)


def check_results(
    results: list[ResultRecord],
    prompt_ids: Iterable[str],
    *,
    config: EvaluatorConfig = PRESETS["current"],
    samples_per_prompt: int = SAMPLES_PER_PROMPT,
) -> str:
    """Why these results cannot go on the leaderboard, or "" when they can: one model key, this
    evaluator's version and config hash, and every prompt id × sample exactly once."""
    if not results:
        return "the results file holds no records"
    keys = sorted({r.model_key for r in results})
    if len(keys) != 1:
        return f"the results mix {len(keys)} model keys ({', '.join(keys[:5])}); submit one model per file"
    versions = Counter(r.evaluator_version for r in results)
    if set(versions) != {EVALUATOR_VERSION}:
        found = ", ".join(f"{v} ({n} records)" for v, n in versions.most_common(3))
        return f"evaluator version {found} does not match this Space's {EVALUATOR_VERSION}; re-score with it"
    hashes = Counter(r.config_hash for r in results)
    if set(hashes) != {config.config_hash}:
        found = ", ".join(hashes)
        return (
            f"config hash {found} does not match this Space's {config.config_hash} "
            f"(preset {config.name!r}); re-score with `negt2ibench score --preset {config.name}`"
        )
    expected = {(pid, s) for pid in prompt_ids for s in range(samples_per_prompt)}
    seen = Counter((r.prompt_id, r.sample_index) for r in results)
    unknown = sorted(k for k in seen if k not in expected)
    if unknown:
        pid, s = unknown[0]
        return f"{len(unknown)} records are not benchmark images (e.g. prompt {pid!r} sample {s})"
    duplicated = sorted(k for k, n in seen.items() if n > 1)
    if duplicated:
        pid, s = duplicated[0]
        return f"{len(duplicated)} images are scored more than once (e.g. {pid} sample {s})"
    missing = sorted(expected - set(seen))
    if missing:
        pid, s = missing[0]
        return (
            f"{len(missing)} of {len(expected)} images are missing (e.g. {pid} sample {s}); "
            f"a submission scores all prompts × {samples_per_prompt} samples"
        )
    return ""


def model_detail(results: Sequence[ResultRecord]) -> dict[str, Any]:
    """The per-model detail view: statement accuracy by category × polarity, failure causes by category."""
    from evaluator.report import failure_causes, statement_accuracy

    return {
        "statement_accuracy": statement_accuracy(results),
        "failure_causes": failure_causes(results)["by_category"],
    }


def spot_check(
    results: list[ResultRecord],
    images: ImageSource,
    prompts: PromptIndex,
    score: ScoreFn,
    *,
    k: int,
    seed: int | None = None,
) -> list[str]:
    """Re-score k random submitted images; the list of disagreements (empty when all agree)."""
    chosen = random.Random(seed).sample(results, min(k, len(results)))
    mismatches = []
    for submitted in chosen:
        image = images.image(submitted.prompt_id, submitted.sample_index)
        rescored = score(image, prompts[submitted.prompt_id], submitted.model_key, submitted.sample_index)
        ours = [s.satisfied for s in rescored.statements]
        theirs = [s.satisfied for s in submitted.statements]
        if rescored.passed != submitted.passed or ours != theirs:
            mismatches.append(
                f"{submitted.prompt_id} sample {submitted.sample_index}: submitted "
                f"{'pass' if submitted.passed else 'fail'} {theirs}, re-scored "
                f"{'pass' if rescored.passed else 'fail'} {ours}"
            )
    return mismatches


def _load_results(path: str | Path) -> list[ResultRecord]:
    from evaluator.resultio import read_results

    return list(read_results(path, strict=True))


def submit(
    store: LeaderboardStore,
    form: SubmissionForm,
    results_path: str | Path,
    *,
    prompts: PromptIndex,
    score: ScoreFn | None,
    open_images: ImageSourceFactory = hub_images,
    config: EvaluatorConfig = PRESETS["current"],
    limits: SubmissionLimits = SubmissionLimits(),
    now: float | None = None,
    seed: int | None = None,
) -> Entry:
    """Validate, store and spot-check one submission; the stored entry with its status.

    Raises SubmissionError (nothing stored) for missing fields, limits and ownership."""
    from evaluator.report import leaderboard_row

    now = time.time() if now is None else now
    model_name = form.model_name.strip()
    if not model_name:
        raise SubmissionError("enter the model's name")
    try:
        model_key = model_key_of(model_name)
    except ValueError as error:
        raise SubmissionError(str(error)) from None
    path = Path(results_path)
    if not path.is_file():
        raise SubmissionError("upload the results JSONL written by `negt2ibench score`")
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise SubmissionError(
            f"the results file is {size / 2**20:.1f} MB; the limit is {limits.max_bytes / 2**20:.0f} MB"
        )
    recent = store.count_recent(form.submitter, now - DAY_SECONDS)
    if recent >= limits.per_day:
        raise SubmissionError(
            f"{form.submitter} already submitted {recent} times in the last 24 hours "
            f"(limit {limits.per_day}); try again tomorrow"
        )
    for other in store.list_entries():
        if other.model_key == model_key and other.submitter != form.submitter and other.status != "rejected":
            raise SubmissionError(f"model {model_name!r} was submitted by another user; choose another model name")

    entry = Entry(
        model_name=model_name,
        model_key=model_key,
        submitter=form.submitter,
        link=form.link.strip(),
        images_repo=form.images_repo.strip(),
        images_revision=form.images_revision.strip() or "main",
        created_at=now,
        evaluator_version=EVALUATOR_VERSION,
        config_hash=config.config_hash,
    )

    def reject(reason: str) -> Entry:
        # Stored without results; earlier entries stay as they are.
        rejected = entry.model_copy(update={"status": "rejected", "reason": reason})
        return store.add_submission(rejected, [])

    try:
        results = _load_results(path)
    except ValueError as error:
        return reject(f"malformed results file: {str(error).replace(str(path), path.name)}")
    problem = check_results(results, prompts.ids(), config=config)
    if problem:
        return reject(problem)
    if not entry.images_repo:
        return reject("name the images dataset (Hub repo id) so the scores can be spot-checked")

    try:
        row = dict(leaderboard_row(results, results[0].model_key))
        detail = model_detail(results)
    except ValueError as error:  # e.g. a failed statement without a cause
        return reject(f"inconsistent results: {error}")
    row["model"] = model_name
    entry = entry.model_copy(update={"row": row, "detail": detail, "reason": "validated; spot check pending"})
    try:
        store.add_submission(entry, results)
    except OwnershipError as error:
        raise SubmissionError(str(error)) from None

    if score is None:
        return store.update_status(entry.submission_id, "pending", "validated; no scorer here to spot-check images")
    split = results[0].model_key
    try:
        images = open_images(entry.images_repo, entry.images_revision, split)
        mismatches = spot_check(results, images, prompts, score, k=limits.spot_check_k, seed=seed)
    except ImagesUnreachable as error:
        return store.update_status(entry.submission_id, "pending", f"validated; spot check waits: {error}")
    checked = min(limits.spot_check_k, len(results))
    if len(mismatches) > limits.spot_check_tolerance:
        shown = "; ".join(mismatches[:3])
        return store.update_status(
            entry.submission_id,
            "rejected",
            f"spot check: {len(mismatches)} of {checked} re-scored images disagree ({shown})",
        )
    return store.update_status(
        entry.submission_id, "verified", f"spot check: {checked - len(mismatches)} of {checked} re-scored images agree"
    )
