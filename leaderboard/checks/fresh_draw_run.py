"""The fresh draw of one entry, run by the verification job (`verify-job --fresh-draw`): generate, score, store.

The draw itself (seed, prompts, statistics) is `leaderboard.checks.fresh_draw_policy`. Here: the model the entry's
images record (`generation.reproduce.recorded_spec`, as the regeneration check found it) is loaded
(`GeneratorLoader`), its images of the fresh prompts are made by the generation's own run
(`generation.runner.generate_images`, resumable: its shards are kept in the work folder under a name
that does not reveal the seed), scored by the spot check's scorer (the job keeps the records too, so
a rerun scores only the rest), and the numbers are written on the entry, with the seed, in one
conditional write (it is still verified and has no fresh draw).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import ScoreFn, verification_secret
from leaderboard.checks.fresh_draw_policy import (
    FRESH_PER_CELL,
    fresh_numbers,
    fresh_prompts,
    fresh_seed,
    fresh_work_tag,
)
from leaderboard.checks.spot_check_run import SPOT_CHECK_BATCH
from leaderboard.store.entries import Entry, FreshDraw
from leaderboard.store.image_sources import ImageSourceFactory, ParquetImages
from leaderboard.store.sqlite_store import LeaderboardStore
from negt2ibench.core.errors import UserError

GeneratorLoader = Callable[[Any], Any]
GENERATION_BATCH = 4


def _free_memory(generator: Any) -> None:
    """Let go of the generation model before the scorer's run (one GPU holds one set of models)."""
    del generator
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # no torch: nothing was on a GPU
        pass


def recorded_model(entry: Entry, results: list[ResultRecord], open_images: ImageSourceFactory) -> Any:
    """The model the entry's first image records, as the regeneration check found it.

    Args:
        entry: the entry.
        results: its stored records (the first names the images split).
        open_images: how its images dataset is opened.

    Returns:
        The recorded model's `generation.registry.ModelSpec`.

    Raises:
        UserError: the images record no generation parameters, or no model that can be loaded.
    """
    from generation.reproduce import NotReproducible, recorded_spec

    source = open_images(entry.images_repo, entry.images_revision, results[0].model_key)
    reader = getattr(source, "first_record", None)
    if reader is None:
        raise UserError("its images' source records no generation parameters")
    record = reader()
    try:
        spec = recorded_spec(record.model_id, record.model_key, record.params)
    except NotReproducible as error:
        raise UserError(f"its images no longer name a model to load: {error.one_line()}") from None
    check = entry.regeneration  # the commit the regeneration check resolved and reproduced the images at
    return replace(spec, revision=check.commit) if check is not None and check.commit else spec


def score_folder(folder: Path, spec: Any, prompts: list[PromptRecord], score: ScoreFn) -> list[ResultRecord]:
    """Score the fresh draw's images in the spot check's batches.

    Args:
        folder: the dataset folder the fresh draw's images were generated into.
        spec: the model (its key is the split).
        prompts: the fresh draw's prompts.
        score: the scorer.

    Returns:
        One record per image, prompt by prompt and sample by sample.
    """
    by_id = {prompt.prompt_id: prompt for prompt in prompts}
    keys = [(prompt.prompt_id, sample) for prompt in prompts for sample in range(SAMPLES_PER_PROMPT)]
    scored: list[ResultRecord] = []
    batch: list[tuple[tuple[str, int], Any]] = []

    def flush() -> None:
        images, chosen, samples = [i for _, i in batch], [by_id[k[0]] for k, _ in batch], [k[1] for k, _ in batch]
        scored.extend(score(images, chosen, spec.key, samples))
        batch.clear()

    for key, image in ParquetImages.from_folder(folder, spec.key).images(keys):
        batch.append((key, image))
        if len(batch) >= SPOT_CHECK_BATCH:
            flush()
    if batch:
        flush()
    return scored


def _stored(store: LeaderboardStore, entry: Entry, draw: FreshDraw) -> Entry:
    """The draw written on the entry while it is verified and has none (one conditional write)."""

    def check(current: Entry) -> str:
        if current.status != "verified" or current.fresh_draw is not None:
            return f"it is {current.status}" + (" with its fresh draw done" if current.fresh_draw else "")
        return ""

    return store.update_entry(entry.submission_id, check, fresh_draw=draw)


def run_fresh_draw(
    store: LeaderboardStore,
    entry: Entry,
    *,
    open_images: ImageSourceFactory,
    load: GeneratorLoader | None,
    score: ScoreFn | None,
    work: Path,
    secret: bytes | None = None,
    per_cell: int = FRESH_PER_CELL,
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> Entry:
    """Generate, score and store the entry's fresh draw.

    Args:
        store: the leaderboard's store.
        entry: the entry whose model is drawn.
        open_images: how its images dataset is opened (for the recorded model).
        load: loads the generation model (None: none here).
        score: the scorer (None: none here).
        work: the work folder (the draw's images, resumable).
        secret: the server's secret (None: `verification_secret()`).
        per_cell: prompts per category and setting.
        progress: show progress bars.
        say: where the run's lines go.

    Returns:
        The entry as stored afterwards, with its fresh draw.

    Raises:
        UserError: no model or scorer here, or the images name no model to load.
    """
    if load is None or score is None:
        raise UserError("a fresh draw needs the generation model and the scorer here (`verify-job --fresh-draw`)")
    results = store.get_results(entry.submission_id)
    spec = recorded_model(entry, results, open_images)
    secret = secret or verification_secret()
    seed = fresh_seed(secret, entry.submission_id)
    prompts = fresh_prompts(seed, per_cell)
    folder = work / f"{entry.submission_id}.fresh-{fresh_work_tag(secret, entry.submission_id)}"
    say(f"{entry.submission_id[:8]}: fresh draw of {len(prompts)} prompts x {SAMPLES_PER_PROMPT} images, {spec.hub_id}")
    _generate_draw(load(spec), spec, prompts, folder, progress)
    scored = score_folder(folder, spec, prompts, score)
    return _stored(store, entry, _fresh_record(seed, len(prompts), scored, results))


def _generate_draw(generator: Any, spec: Any, prompts: list[PromptRecord], folder: Path, progress: bool) -> None:
    """Generate the draw's images into FOLDER (resumable), then let go of the model."""
    from generation.runner import ShardStore, generate_images
    from generation.work import plan_work

    generate_images(
        generator,
        spec,
        plan_work(prompts, SAMPLES_PER_PROMPT),
        folder,
        batch_size=GENERATION_BATCH,
        device="verify-job",
        progress=progress,
        store=ShardStore(folder, spec.key),
    )
    _free_memory(generator)


def _fresh_record(seed: int, prompts: int, scored: list[ResultRecord], results: list[ResultRecord]) -> FreshDraw:
    """The draw's numbers as the entry stores them, each rounded to 2 decimals."""
    numbers = fresh_numbers(scored, results)
    return FreshDraw(
        seed=seed,
        prompts=prompts,
        images=len(scored),
        accuracy=round(numbers.accuracy, 2),
        interval=[round(value, 2) for value in numbers.interval],
        public=round(numbers.public, 2),
        public_interval=[round(value, 2) for value in numbers.public_interval],
        gap=round(numbers.gap, 2),
        gap_interval=[round(value, 2) for value in numbers.gap_interval],
    )
