"""Images + prompt records → result records, streamed to JSONL, resumable, across processes.

`score_image` scores one image (the Space and `explain` call it). `score_images` scores a
whole source: a folder of `{prompt_id}_{sample_index}.png`, an `images` dataset split (a local
dataset folder with `images/{key}-*.parquet`, or a Hub repo id), or a single image file with a
prompt id. The run itself is the engine's (`evaluator.engine`: resume by key, ranks and their
merge, batches with per-image isolation, the verdict/write thread, progress); this module brings
the sources and the scorer's `scoring_step` (perception's forward, then the verdicts). Bad
images and unknown prompt ids become error rows and the run goes on.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from dataset_builder.layout import has_images, image_file_key, image_splits, lacks_sample_index, rank_path
from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import EvaluatorConfig
from evaluator.engine import BatchStep, Failed, Job, RecordRun, run_batches, run_records
from evaluator.images import ImageError, ImageSource, load_image
from evaluator.loader import Loaded, Work, resolve_num_workers
from evaluator.models.inputs import InputPreparer
from evaluator.observation import ImageObservation
from evaluator.perception_types import Perception, StreamingPerception
from evaluator.results import ResultRecord
from evaluator.verdict import decide_statements, error_record
from negt2ibench.core.atomic import recover_folder
from negt2ibench.core.errors import UserError
from negt2ibench.core.names import check_split_name, slug
from negt2ibench.core.options import REPO_ID, check, non_negative_int, positive_int


@dataclass(frozen=True)
class ImageItem:
    """One image to score: its key and how to fetch its data (a path, bytes, or a loader)."""

    prompt_id: str
    sample_index: int
    fetch: Callable[[], ImageSource]
    label: str = ""  # where it came from, for error messages


RESULTS = "results"  # the one output of a scoring run (and of a GenEval run)


@dataclass
class ScoreSummary:
    out_path: Path
    total: int = 0  # images in the source (after --limit)
    already_done: int = 0  # skipped because the output had them
    scored: int = 0  # new rows without error
    errors: int = 0  # new error rows
    passed: int = 0  # new rows that passed
    seconds: float = 0.0
    error_reasons: dict[str, int] = field(default_factory=dict)
    rank: int = 0  # this process, under a launcher
    world: int = 1  # processes in the run; each wrote its share to rank_path(out_path, rank)
    skipped_files: list[str] = field(default_factory=list)  # files of a folder source not named as images

    @classmethod
    def of_run(
        cls, run: RecordRun, *, out_path: Path, total: int, started: float, output: str = RESULTS
    ) -> ScoreSummary:
        """What `run_records` did to `output`, as a summary; `started` is the run's `time.perf_counter()`."""
        counts = run.outputs[output]
        return cls(
            out_path=out_path,
            total=total,
            already_done=counts.already_done,
            scored=counts.written - counts.errors,
            errors=counts.errors,
            passed=counts.passed,
            seconds=time.perf_counter() - started,
            error_reasons=dict(counts.error_reasons),
            rank=run.rank,
            world=run.world,
        )

    def skipped_line(self, show: int = 5) -> str:
        """The files of a folder source that were not scored, or "" when none were skipped."""
        if not self.skipped_files:
            return ""
        names = ", ".join(self.skipped_files[:show]) + (" ..." if len(self.skipped_files) > show else "")
        return (
            f"skipped {len(self.skipped_files)} file(s) not named {{prompt_id}}_{{sample_index}}.png "
            f"(or .jpg, .webp, .bmp, .tiff): {names}"
        )

    def line(self) -> str:
        rate = f", {self.seconds / max(self.scored + self.errors, 1):.2f} s/image" if self.scored + self.errors else ""
        where = str(self.out_path)
        if self.world > 1:
            where = f"{rank_path(self.out_path, self.rank).name}, merged into {self.out_path}"
        prefix = f"[rank {self.rank}/{self.world}] " if self.world > 1 else ""
        return (
            f"{prefix}{self.scored + self.errors} new rows "
            f"({self.scored} scored, {self.passed} passed, {self.errors} errors), "
            f"{self.already_done} already done, {self.total} in source{rate} → {where}"
        )


# -- sources ---------------------------------------------------------------------------------


def folder_items(folder: Path, skipped: list[str] | None = None) -> list[ImageItem]:
    """Images named `{prompt_id}_{sample_index}.png` (or .jpg, .webp, .bmp, .tiff) in a folder.

    Other entries are not scored; their names (hidden ones aside) are appended to `skipped`, so
    the caller can say which files it left alone. A file whose prompt id is not a benchmark
    prompt is an image and is scored into an error row."""
    items = []
    for path in sorted(folder.iterdir()):
        key = image_file_key(path.name)
        if key and path.is_file():
            items.append(ImageItem(key[0], key[1], fetch_path(path), str(path)))
        elif skipped is not None and not path.name.startswith("."):
            note = " (no sample index)" if lacks_sample_index(path.name) else "/" if path.is_dir() else ""
            skipped.append(path.name + note)
    if not items:
        others = [p.name for p in sorted(folder.iterdir()) if not p.name.startswith(".")][:3]
        found = f" (it holds {', '.join(others)}{' ...' if len(others) == 3 else ''})" if others else " (it is empty)"
        raise UserError(f"{folder} holds no images named {{prompt_id}}_{{sample_index}}.png{found}")
    return items


def _local_shards(dataset_dir: Path, split: str | None) -> tuple[str, list[Path]]:
    splits = image_splits(dataset_dir)
    keys = list(splits)
    if split is None:
        if len(keys) != 1:
            raise UserError(f"{dataset_dir} holds image splits {', '.join(keys) or '(none)'}: choose one with --split")
        split = keys[0]
    if split not in splits:
        where = dataset_dir / "images"
        raise UserError(f"no split {split!r} in {where} (splits there: {', '.join(keys) or 'none'})")
    return split, splits[split]


@lru_cache(maxsize=4)
def _row_group_images(path: str, row_group: int) -> list:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(row_group, columns=["image"]).column("image").to_pylist()


def _same(path: Path) -> Path:
    return path


def fetch_path(path: Path) -> Callable[[], ImageSource]:
    """An item's `fetch` that hands the loader the file's path (it reads the file)."""
    return functools.partial(_same, path)


def _row_image(dataset: Any, index: int) -> bytes:
    """Row `index`'s encoded image, read when the loader fetches it."""
    return image_bytes(dataset[index]["image"])


def image_bytes(cell: object) -> bytes:
    """The encoded image of a parquet/datasets ``image`` cell (``{"bytes", "path"}`` struct, or raw bytes)."""
    if isinstance(cell, dict):
        if cell.get("bytes"):
            return cell["bytes"]
        if cell.get("path"):
            return Path(cell["path"]).read_bytes()
    if isinstance(cell, (bytes, bytearray)):
        return bytes(cell)
    raise ImageError("dataset row has no image bytes")


def local_dataset_items(dataset_dir: Path, split: str | None) -> tuple[str, list[ImageItem]]:
    """Rows of `images/{split}-*.parquet`; image bytes are read one row group at a time, on demand."""
    import pyarrow.parquet as pq

    split, shards = _local_shards(dataset_dir, split)
    items = []
    for shard in shards:
        parquet = pq.ParquetFile(shard)
        for group in range(parquet.num_row_groups):
            keys = parquet.read_row_group(group, columns=["prompt_id", "sample_index"]).to_pylist()
            for offset, row in enumerate(keys):
                fetch = lambda s=str(shard), g=group, o=offset: image_bytes(_row_group_images(s, g)[o])  # noqa: E731
                label = f"{shard.name}#{group}:{offset}"
                items.append(ImageItem(row["prompt_id"], int(row["sample_index"]), fetch, label))
    return split, items


def hub_dataset_items(repo_id: str, split: str) -> list[ImageItem]:
    """Rows of the Hub dataset's `images` config, split `split` (downloaded through `datasets`)."""
    import datasets

    try:
        dataset = datasets.load_dataset(repo_id, "images", split=split)
    except Exception as error:  # noqa: BLE001 - datasets raises many kinds; one line is enough here
        raise UserError(f"could not load split {split!r} of the images config of {repo_id}: {error}") from None
    dataset = dataset.cast_column("image", datasets.Image(decode=False))
    keys = dataset.select_columns(["prompt_id", "sample_index"]).to_list()
    return [
        ImageItem(
            row["prompt_id"],
            int(row["sample_index"]),
            functools.partial(_row_image, dataset, index),
            f"{repo_id}[{split}][{index}]",
        )
        for index, row in enumerate(keys)
    ]


def resolve_source(
    images: str | Path,
    *,
    split: str | None = None,
    prompt_id: str | None = None,
    sample_index: int = 0,
    skipped: list[str] | None = None,
) -> tuple[list[ImageItem], str]:
    """The items of a source and a default model key (the split, the folder name, or `upload`).

    A folder's entries that are not images named `{prompt_id}_{sample_index}.png` go to `skipped`."""
    path = Path(images)
    if not path.is_file():
        recover_folder(path)  # a dataset folder whose rebuild was killed mid-swap is put right first
    if path.is_file():
        if prompt_id is None:
            named = image_file_key(path.name)
            if not named:
                raise UserError(f"{path.name} is not named {{prompt_id}}_{{sample_index}}.png: pass --prompt-id")
            prompt_id, sample_index = named
        return [ImageItem(prompt_id, sample_index, fetch_path(path), str(path))], "upload"
    if path.is_dir():
        if has_images(path):
            key, items = local_dataset_items(path, split)
            return items, key
        items = folder_items(path, skipped)
        return items, slug(path.resolve().name, fallback="images")
    if path.exists():
        raise UserError(f"{path} is neither an image file nor a folder")
    if REPO_ID.match(str(images)):
        if not split:
            raise UserError("a Hub dataset source needs --split (the model key, e.g. sd_1_5)")
        return hub_dataset_items(str(images), split), split
    raise UserError(f"no such image, folder or dataset: {images}")


# -- scoring ---------------------------------------------------------------------------------


def score_image(
    image: ImageSource,
    prompt: PromptRecord,
    perception: Perception,
    *,
    config: EvaluatorConfig,
    model_key: str = "upload",
    sample_index: int = 0,
) -> tuple[ResultRecord, ImageObservation]:
    """Score one image (raises `ImageError` for an image that cannot be scored)."""
    rgb = load_image(image)
    observation = perception.observe([rgb], [prompt])[0]
    record = decide_statements(prompt, observation, model_key=model_key, sample_index=sample_index, config=config)
    return record, observation


ERROR_KINDS = ("unknown prompt id", "bad image", "perception failed", "verdict failed")


def scoring_step(perception: Perception, config: EvaluatorConfig) -> BatchStep[ImageObservation, ResultRecord]:
    """The scorer's part of the engine: perception's forward on a batch, then each image's verdict.

    A `StreamingPerception` (`ModelPerception`) gets the loader's inputs and computes only the
    masks a rule reads; any other `Perception` (a test double) gets the images and prompts alone."""
    streaming = perception if isinstance(perception, StreamingPerception) else None

    def prepare(jobs: Sequence[Job]) -> InputPreparer | None:
        categories = {job.work.prompt.category for job in jobs if job.work.prompt is not None}
        return streaming.worker_preparer(categories) if streaming is not None else None

    def forward(pairs: Sequence[tuple[Job, Loaded]]) -> list[ImageObservation]:
        prompts = [job.work.record for job, _ in pairs]
        if streaming is not None:  # the workers' pixels as they came, their inputs, only the masks a rule reads
            frames = [entry.frame() for _, entry in pairs]
            return streaming.observe(frames, prompts, prepared=[entry.prepared for _, entry in pairs], masks="rules")
        return perception.observe([entry.rgb() for _, entry in pairs], prompts)

    def records(job: Job, outcome: ImageObservation | Failed) -> list[tuple[str, ResultRecord]]:
        item = job.work.item
        if isinstance(outcome, Failed):
            return [(RESULTS, error_record(item.prompt_id, job.model_key, item.sample_index, outcome.reason, config))]
        try:
            record = decide_statements(
                job.work.record, outcome, model_key=job.model_key, sample_index=item.sample_index, config=config
            )
        except ValueError as error:  # an observation the rules cannot judge: record it, go on
            record = error_record(item.prompt_id, job.model_key, item.sample_index, f"verdict failed: {error}", config)
        return [(RESULTS, record)]

    return BatchStep(forward, records, failure="perception failed", prepare=prepare if streaming is not None else None)


def score_batches(
    work: Sequence[Work],
    batches: Sequence[Sequence[int]],
    perception: Perception,
    *,
    config: EvaluatorConfig,
    model_key: str,
    on_record: Callable[[ResultRecord], None],
    on_batch: Callable[[int], None] | None = None,
    num_workers: int | None = None,
) -> None:
    """Score `work` in `batches` (lists of positions in it) through the engine, without files:
    `on_record` gets every record, in order, from the verdict thread (`Evaluator.score_many`).

    `num_workers`: loader processes that decode (and on the CPU preprocess) the images; None
    takes `evaluator.loader.default_num_workers()`, 0 decodes here."""

    def sink(pairs: list[tuple[str, ResultRecord]]) -> None:
        for _, record in pairs:
            on_record(record)

    jobs = [Job(entry, model_key) for entry in work]
    step = scoring_step(perception, config)
    run_batches(jobs, batches, step, sink=sink, on_batch=on_batch, num_workers=resolve_num_workers(num_workers))


def score_images(
    source: str | Path | Sequence[ImageItem],
    prompts: PromptIndex | Iterable[PromptRecord],
    perception: Perception,
    *,
    out_path: str | Path,
    config: EvaluatorConfig,
    model_key: str | None = None,
    batch_size: int = 8,
    limit: int | None = None,
    split: str | None = None,
    prompt_id: str | None = None,
    progress: bool = True,
    num_workers: int | None = None,
) -> ScoreSummary:
    """Score every image of `source` into `out_path` (JSONL), skipping keys already there.

    Images are decoded (and on the CPU preprocessed) by `num_workers` loader processes (None: from
    the CPU count, `evaluator.loader.default_num_workers`; 0: in this process) while the models
    run here, and the verdicts and the write of each batch overlap the next batch's forwards
    (`evaluator.engine`); the file is the same, byte for byte, with any number of workers.
    Under a launcher (`negt2ibench.core.launch.Launch`) each process scores its contiguous share into
    `rank_path(out_path, rank)` with its own workers, and the main process merges them into `out_path`.
    """
    batch_size = check("batch_size", batch_size, positive_int)
    num_workers = resolve_num_workers(num_workers)
    if limit is not None:
        limit = check("limit", limit, non_negative_int)
    if isinstance(source, (str, Path)):
        items, default_key = resolve_source(source, split=split, prompt_id=prompt_id)
    else:
        items, default_key = list(source), "upload"
    model_key = check_split_name(model_key or default_key, what="model key")
    items = items[:limit] if limit is not None else items
    index = prompts if isinstance(prompts, PromptIndex) else PromptIndex(prompts)
    out = Path(out_path)
    started = time.perf_counter()
    run = run_records(
        [Job(Work.look_up(item, index), model_key) for item in items],
        {RESULTS: out},
        scoring_step(perception, config),
        batch_size=batch_size,
        desc=f"score {model_key}",
        progress=progress,
        num_workers=num_workers,
        error_kinds=ERROR_KINDS,
    )
    return ScoreSummary.of_run(run, out_path=out, total=len(items), started=started)
