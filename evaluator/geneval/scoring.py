"""`negt2ibench geneval score`: GenEval images → one GenEval result line per image, as one more user of
the engine (`evaluator.engine`: resume by key, ranks and their merge, batches with per-image
isolation, the verdict/write thread, progress). This module brings the record type
(`records.GenEvalRecord`) and the per-batch step: the preset's perception on the batch, then
GenEval's rules (`rules.geneval_verdict`) on each image."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluator.engine import BatchStep, Failed, Job, RecordFiles, run_records
from evaluator.loader import Loaded, resolve_num_workers
from evaluator.pipeline import RESULTS, ScoreSummary
from evaluator.resultio import check_appendable
from negt2ibench.core.names import check_split_name
from negt2ibench.core.options import check, non_negative_int, positive_int
from negt2ibench.core.versions import library_versions

from .config import GENEVAL_VERSION, GenEvalConfig
from .perception import Detections
from .prompts import GenEvalPrompt
from .records import GenEvalRecord
from .rules import geneval_verdict
from .sources import GenEvalSource

ERROR_KINDS = ("unknown GenEval prompt", "bad metadata", "bad image", "perception failed", "verdict failed")
VERSIONED = ("torch", "transformers", "rfdetr", "numpy", "negt2ibench")


GENEVAL_FILES = RecordFiles.for_record_type(GenEvalRecord)


def _record(job: Job, config: GenEvalConfig, versions: dict[str, str], **fields) -> GenEvalRecord:
    item = job.work.item
    prompt: GenEvalPrompt | None = job.work.prompt
    base: dict[str, Any] = {
        "filename": item.label,
        "tag": prompt.tag if prompt is not None else "",
        "prompt": prompt.prompt if prompt is not None else "",
        "metadata": prompt.metadata_json if prompt is not None else "null",
        "details": "{}",
        "model_key": job.model_key,
        "prompt_id": item.prompt_id,
        "sample_index": item.sample_index,
        "preset": config.name,
        "detector": config.detector_label,
        "evaluator_version": GENEVAL_VERSION,
        "config_hash": config.config_hash,
        "versions": versions,
    }
    return GenEvalRecord(**(base | fields))


def error_line(job: Job, reason: str, config: GenEvalConfig, versions: dict[str, str]) -> GenEvalRecord:
    """The line of an image that could not be scored: `correct` null, GenEval's `reason` says why."""
    return _record(job, config, versions, correct=None, reason=f"error: {reason}", error=reason)


def geneval_step(perception, config: GenEvalConfig) -> BatchStep[Detections, GenEvalRecord]:
    """GenEval's part of the engine: the detections of a batch, then each image's verdict line."""
    versions = library_versions(VERSIONED)

    def forward(pairs: Sequence[tuple[Job, Loaded]]) -> list[Detections]:
        return perception.observe([entry.rgb() for _, entry in pairs], [job.work.prompt for job, _ in pairs])

    def records(job: Job, outcome: Detections | Failed) -> list[tuple[str, GenEvalRecord]]:
        if isinstance(outcome, Failed):
            return [(RESULTS, error_line(job, outcome.reason, config, versions))]
        try:
            verdict = geneval_verdict(job.work.record.metadata, outcome, config)
        except ValueError as error:  # detections the rules cannot judge: record it, go on
            return [(RESULTS, error_line(job, f"verdict failed: {error}", config, versions))]
        details = json.dumps(verdict.details())
        line = _record(job, config, versions, correct=verdict.correct, reason=verdict.reason, details=details)
        return [(RESULTS, line)]

    return BatchStep(forward, records, failure="perception failed")


def score_geneval(
    source: GenEvalSource,
    perception,
    *,
    out_path: str | Path,
    config: GenEvalConfig,
    model_key: str | None = None,
    batch_size: int = 8,
    limit: int | None = None,
    progress: bool = True,
    num_workers: int | None = None,
) -> ScoreSummary:
    """Score every image of SOURCE into OUT_PATH (JSONL of `GenEvalRecord`s), skipping those already
    there; under a launcher each process scores its share into `OUT.rank{i}.jsonl` and the main
    process merges. `perception` is a `GenEvalPerception` (or any object with the same `observe`)."""
    batch_size = check("batch_size", batch_size, positive_int)
    num_workers = resolve_num_workers(num_workers)
    if limit is not None:
        limit = check("limit", limit, non_negative_int)
    model_key = check_split_name(model_key or source.model_key, what="model key")
    out = check_appendable(out_path, GENEVAL_VERSION, config.config_hash, record_type=GenEvalRecord)
    work = source.work[:limit] if limit is not None else source.work
    started = time.perf_counter()
    run = run_records(
        [Job(entry, model_key) for entry in work],
        {RESULTS: out},
        geneval_step(perception, config),
        batch_size=batch_size,
        desc=f"geneval {model_key}",
        progress=progress,
        num_workers=num_workers,
        error_kinds=ERROR_KINDS,
        files=GENEVAL_FILES,
    )
    return ScoreSummary.of_run(run, out_path=out, total=len(work), started=started)
