"""`negt2ibench ablate`: the paper's Table 17 in one command (agreement of each evaluator
configuration with the annotators, on the annotated images).

Perception is the costly part, and the configurations share it: presets that differ only in the
rules' constants (`EvaluatorConfig.perception_key`: Table 17's previous vs current constants)
see the same detections, masks, attribute scores and disparity, because nothing perception
computes reads those constants (attribute scores are raw SigLIP values, the margins are the
rules'; the disparity map is the depth model's own). So the configurations are grouped by
perception key, each image is observed once per group (once per detector × SAM pair for
C1–C8), and only the verdict (`evaluator.verdict.decide_statements`) is re-run for every preset of the group.

Each preset's records go to `DIR/results/<preset>.jsonl` (resumable, and `agree` can be rerun on
them); the agreement report of `agree` goes to `DIR/agreement/`, and the ablation table
(n, agreement, κ, with bootstrap intervals, per configuration) to `DIR/ablation.{md,csv,json}`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dataset_builder.records import PromptRecord
from evaluator.config import EvaluatorConfig
from evaluator.engine import BatchStep, Failed, Job, run_records
from evaluator.loader import Loaded, Work
from evaluator.observation import ImageObservation
from evaluator.perception_types import Perception
from evaluator.resultio import read_results
from evaluator.results import ResultRecord
from evaluator.sources import ImageItem, resolve_source
from evaluator.verdict import decide_statements, error_record
from negt2ibench.core.atomic import write_atomic
from negt2ibench.core.errors import UserError
from negt2ibench.core.launch import Launch
from negt2ibench.core.strict_json import dumps
from negt2ibench.core.table import Table, to_csv

from .agreement import compute_agreement
from .annotations import ImageKey
from .labels import LabelSet
from .report import section_markdown, study_table, write_report
from .runs import check_results

PerceptionFactory = Callable[[EvaluatorConfig], Perception]
RESULTS_DIR = "results"
AGREEMENT_DIR = "agreement"
COLUMNS = {
    "config": "Config.",
    "detector": "Detector",
    "sam": "SAM",
    "constants": "Constants",
    "n": "n",
    "accuracy": "Agreement (%)",
    "kappa": "κ",
}


@dataclass(frozen=True)
class AblationItem:
    """One annotated image to score: its key and how to fetch it."""

    key: ImageKey  # (model_key, prompt_id, sample_index)
    item: ImageItem
    prompt: PromptRecord


def perception_groups(configs: Sequence[EvaluatorConfig]) -> list[list[EvaluatorConfig]]:
    """The configurations grouped by what perception sees (`perception_key`), in first-seen order."""
    groups: dict[str, list[EvaluatorConfig]] = {}
    for config in configs:
        groups.setdefault(config.perception_key, []).append(config)
    return list(groups.values())


def annotated_items(
    dataset: str | Path, labels: LabelSet, prompts: Mapping[str, PromptRecord]
) -> tuple[list[AblationItem], list[ImageKey]]:
    """The labelled images found in `dataset` (a dataset folder or Hub repo, one split per model key),
    and the labelled keys it does not hold."""
    wanted = sorted(labels.labels)
    found: dict[ImageKey, AblationItem] = {}
    for model_key in sorted({key[0] for key in wanted}):
        items, _ = resolve_source(dataset, split=model_key)
        for item in items:
            key = (model_key, item.prompt_id, item.sample_index)
            if key in labels.labels and key not in found:
                found[key] = AblationItem(key, item, prompts[item.prompt_id])
    return [found[key] for key in wanted if key in found], [key for key in wanted if key not in found]


def ablation_step(perception: Perception, group: Sequence[EvaluatorConfig]) -> BatchStep:
    """The ablation's part of the engine: perception's forward once per image, then the verdict
    under every preset of the group that still lacks it (the engine's output names are the presets)."""

    def forward(pairs: Sequence[tuple[Job, Loaded]]) -> list[ImageObservation]:
        return perception.observe([entry.rgb() for _, entry in pairs], [job.work.record for job, _ in pairs])

    def record(job: Job, outcome: ImageObservation | Failed, config: EvaluatorConfig) -> ResultRecord:
        prompt_id, sample_index = job.work.item.prompt_id, job.work.item.sample_index
        if isinstance(outcome, Failed):
            return error_record(prompt_id, job.model_key, sample_index, outcome.reason, config)
        try:
            return decide_statements(
                job.work.record, outcome, model_key=job.model_key, sample_index=sample_index, config=config
            )
        except ValueError as error:
            return error_record(prompt_id, job.model_key, sample_index, f"verdict failed: {error}", config)

    def records(job: Job, outcome: ImageObservation | Failed) -> list[tuple[str, ResultRecord]]:
        return [(config.name, record(job, outcome, config)) for config in group if config.name in job.needed]

    return BatchStep(forward, records, failure="perception failed")


def score_group(
    items: Sequence[AblationItem],
    group: Sequence[EvaluatorConfig],
    perception: Perception,
    paths: Mapping[str, Path],
    *,
    batch_size: int = 8,
    progress: bool = True,
) -> int:
    """Observe each image missing from any of the group's result files once, judge it under every
    preset of the group, and append the records (one process: `evaluator.engine.run_records` with
    a lone `Launch`). Returns the number of images observed."""
    jobs = [Job(Work(entry.item, entry.prompt), entry.key[0]) for entry in items]
    run = run_records(
        jobs,
        {config.name: paths[config.name] for config in group},
        ablation_step(perception, group),
        batch_size=batch_size,
        desc=f"ablate {', '.join(config.name for config in group)}",
        progress=progress,
        launch=Launch(),
    )
    return run.images


def _free_memory() -> None:
    """Let a finished group's models go before the next group loads its own (GPU memory)."""
    gc.collect()
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def ablation_rows(report: dict, configs: Sequence[EvaluatorConfig]) -> list[dict]:
    """Table 17's rows: per configuration its detector, SAM, constants, n, agreement and κ (with intervals)."""
    rows = []
    for config in configs:
        block = report["evaluators"][config.name]
        row = {
            "config": config.name,
            "detector": config.detector_label,
            "sam": "✓" if config.use_sam else "–",
            "constants": config.constants_label,
            "config_hash": config.config_hash,
            "n": block["n"],
            "accuracy": block["accuracy"],
            "kappa": block["kappa"],
        }
        row.update({key: block[key] for key in ("accuracy_ci", "kappa_ci") if key in block})
        rows.append(row)
    return rows


def ablation_table(report: dict, configs: Sequence[EvaluatorConfig]) -> Table:
    """Table 17 as a `Table` (`ablation_rows`; intervals: percentile bootstrap over images)."""
    notes = (
        "Agreement of each configuration's image verdict with the majority label of three annotators; "
        "intervals: percentile bootstrap over images (the same resamples for every configuration)."
    )
    return study_table(
        "ablation", "Evaluator ablation (paper Table 17)", COLUMNS, ablation_rows(report, configs), notes
    )


@dataclass(frozen=True)
class AblationOutcome:
    table: Table
    report: dict
    results: dict[str, Path]  # preset → its results JSONL
    observed: dict[str, int]  # perception group (its presets, comma-separated) → images observed
    missing: list[ImageKey]  # labelled images the dataset does not hold
    written: list[Path]


def run_ablation(
    dataset: str | Path,
    labels: LabelSet,
    configs: Sequence[EvaluatorConfig],
    out_dir: str | Path,
    *,
    prompts: Mapping[str, PromptRecord],
    perception_for: PerceptionFactory,
    batch_size: int = 8,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    progress: bool = True,
) -> AblationOutcome:
    """Score the labelled images of `dataset` under every configuration, sharing perception within
    each `perception_groups` group, then compute the agreement and write every output file."""
    names = [config.name for config in configs]
    if not configs or len(set(names)) != len(names):
        raise UserError(f"give each configuration once, got {', '.join(names) or 'none'}")
    labels.require_labels()
    items, missing = annotated_items(dataset, labels, prompts)
    if not items:
        raise UserError(f"{dataset} holds none of the {len(labels.labels)} labelled images")
    out = Path(out_dir)
    paths = {config.name: out / RESULTS_DIR / f"{config.name}.jsonl" for config in configs}
    observed = {}
    for group in perception_groups(configs):
        perception = perception_for(group[0])
        observed[", ".join(c.name for c in group)] = score_group(
            items, group, perception, paths, batch_size=batch_size, progress=progress
        )
        del perception
        _free_memory()
    keys = {entry.key for entry in items}
    runs = [
        check_results([r for r in read_results(paths[c.name]) if r.key in keys], prompts, name=c.name, source=str(p))
        for c, p in ((c, paths[c.name]) for c in configs)
    ]
    report = compute_agreement(labels, runs, resamples=resamples, seed=seed, confidence=confidence)
    written = write_report(report, out / AGREEMENT_DIR)
    table = ablation_table(report, configs)
    rows = ablation_rows(report, configs)
    summary = {
        "n_images": report["n_images"],
        "options": report["options"],
        "configs": [row | {"coverage": report["evaluators"][row["config"]]["coverage"]} for row in rows],
        "results": {name: str(path.relative_to(out)) for name, path in paths.items()},
        "missing_images": [list(key) for key in missing],
    }
    for name, text in (
        ("ablation.json", dumps(summary)),
        ("ablation.md", section_markdown(table)),
        ("ablation.csv", to_csv(table)),
    ):
        written.append(write_atomic(out / name, text))
    return AblationOutcome(table, report, paths, observed, missing, written)
