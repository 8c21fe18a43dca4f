"""Data builders and doubles for the Gallery and Compare tests: verified entries whose records
have every verdict and cause, their images repos, and an images factory that counts fetches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import CATEGORIES, SETTINGS, setting_name
from evaluator.report import leaderboard_row
from evaluator.results import ResultRecord
from evaluator.verdict import error_record
from leaderboard.checks.compared_fields import shown_numbers
from leaderboard.store.image_sources import ImagesUnreachable, ParquetImages
from leaderboard.store.sqlite_store import Entry, LeaderboardStore
from tests.helpers.space_helpers import result_line, write_images_dataset

IMAGE_SIZE = (96, 64)  # the size of `write_images_dataset`'s image


def some_prompts(prompts: Sequence[PromptRecord], per_setting: int = 2) -> list[PromptRecord]:
    """The first `per_setting` prompts of every category × setting (96 by default), in corpus order."""
    wanted = {f"{c}_{setting_name(p, n)}_{k:03d}" for c in CATEGORIES for p, n in SETTINGS for k in range(per_setting)}
    return [p for p in prompts if p.prompt_id in wanted]


def _failed_cause(prompt: PromptRecord, polarity: str) -> str:
    if polarity == "negated":
        return "forbidden_rendered"
    return "wrong_value" if prompt.kind == "attribute" else "dead_zone"


def varied_record(prompt: PromptRecord, sample: int, model_key: str, number: int) -> ResultRecord:
    """A record whose outcome is set by the sample and the prompt's `number` (its place in the list):
    sample 0 passes; 1 fails every statement with its polarity's cause (negated: forbidden_rendered,
    positive: wrong_value or dead_zone); 2 finds no object (subject_missing); 3 passes for even
    numbers and is an error row for odd ones. Present objects have boxes, in columns."""
    if sample == 3 and number % 2:
        return error_record(prompt.prompt_id, model_key, sample, "unreadable image (test)")
    line = result_line(prompt, sample, model_key, passed=sample in (0, 3))
    width, height = IMAGE_SIZE
    column = width // len(prompt.objects)
    if sample != 2:
        for index, obj in enumerate(line["objects"]):
            obj.update(present=True, confidence=0.9, box=[index * column + 2.0, 10.0, (index + 1) * column - 2.0, 50.0])
    if sample == 1:
        line["passed"] = False
        for statement in line["statements"]:
            statement.update(satisfied=False, cause=_failed_cause(prompt, statement["polarity"]))
    return ResultRecord.model_validate(line)


def varied_results(prompts: Sequence[PromptRecord], model_key: str, samples: int = 4) -> list[ResultRecord]:
    return [varied_record(p, s, model_key, n) for n, p in enumerate(prompts) for s in range(samples)]


def add_entry(
    store: LeaderboardStore,
    name: str,
    results: Sequence[ResultRecord],
    *,
    status: str = "verified",
    images_repo: str = "org/gallery-images",
    images_revision: str = "main",
    submitter: str = "alice",
    created_at: float = 1.0,
) -> Entry:
    """Store an entry with these results, as verified (or another status), with its row and detail."""
    key = results[0].model_key
    entry = Entry(
        model_name=name,
        model_key=key,
        submitter=submitter,
        status=status,  # type: ignore[arg-type]
        reason="test entry",
        images_repo=images_repo,
        images_revision=images_revision,
        created_at=created_at,
        row={**leaderboard_row(results, key), "model": name},
        detail=shown_numbers(results).detail,
    )
    return store.add_submission(entry, results)


class CountingImages:
    """An images factory (`leaderboard.checks.spot_check_run.ImageSourceFactory`) over local dataset folders, by repo
    id; `opened` counts the repos opened and `fetched` every key asked for. A repo not in `folders`
    is unreachable, as an offline Hub."""

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders
        self.opened = 0
        self.fetched: list[tuple[str, int]] = []

    def __call__(self, repo_id: str, revision: str, split: str):
        self.opened += 1
        if repo_id not in self.folders:
            raise ImagesUnreachable(f"images not reachable: {repo_id} (offline test)")
        source = ParquetImages.from_folder(self.folders[repo_id], split)
        counter = self

        class Counted:
            def images(self, keys):
                counter.fetched.extend(keys)
                return source.images(keys)

        return Counted()

    def reset(self) -> None:
        self.opened = 0
        self.fetched.clear()


def images_repo(folder: Path, prompts: Sequence[PromptRecord], split: str, samples: int = 4) -> Path:
    """A local images repo of `prompts` (one small PNG shared by every row)."""
    return write_images_dataset(folder, prompts, split, samples=samples)
