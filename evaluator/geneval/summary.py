"""`negt2ibench geneval summary`: a GenEval results file → GenEval's numbers, and what GenEval never says.

GenEval's numbers are computed exactly as its `summary_scores.py` computes them with pandas
(djghosh13/geneval@af4902f, evaluation/summary_scores.py:22-45): images correct is the mean of
`correct`; prompts are grouped by the `metadata` text and one is correct when any of its images is;
tasks are grouped by `tag` in the order they first appear, each scored by its images' mean; the
overall score is the plain mean of the task scores. As pandas does, a null `correct` (an error row)
is left out of every mean, and a prompt with no scored image is not correct.

Beyond GenEval: completeness against the prompts (553 × N images expected; missing images, error
rows, duplicates and lines of other prompts listed, and `complete` false when there is any), a
percentile bootstrap interval on the overall score (prompts resampled within each task), and the
order-to-space diagnostic (`evaluator.report.ots`) from the `details` boxes: Hom over `two_object`
prompts, Ali and Rev over `position` prompts asking for left of / right of. The file may be written by
`negt2ibench geneval score` or by GenEval's own scorer.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from evaluator.report.numbers import OtsStatistics
from evaluator.report.ots import OrderObservation, ots_statistics
from negt2ibench.core.bootstrap import DEFAULT_CONFIDENCE, percentile_interval, resample_indices
from negt2ibench.core.jsonl import JsonlError, read_jsonl
from negt2ibench.core.strict_json import json_ready

from .config import NOT_GENEVAL_CHECKPOINT
from .prompts import GenEvalPrompt, by_metadata, canonical

SHOWN = 20  # missing images and other problems listed on screen (the JSON lists them all)


class GenEvalLine(BaseModel):
    """What the summary reads of one results line: GenEval's fields (ours too when present)."""

    model_config = ConfigDict(extra="allow")

    filename: str = ""
    tag: str
    correct: bool | None
    metadata: str
    details: str = "{}"
    prompt_id: str | None = None
    sample_index: int | None = None
    preset: str | None = None
    detector: str | None = None
    config_hash: str | None = None
    error: str | None = None


class GenEvalFileError(JsonlError):
    """A GenEval results file that cannot be summarised; the message names the path and line."""


def read_lines(path: str | Path) -> list[GenEvalLine]:
    """Every line of a GenEval results file (a malformed line is an error naming it)."""
    return read_jsonl(path, GenEvalLine.model_validate_json, kind="GenEval result", error=GenEvalFileError)


@dataclass
class GenEvalSummary:
    """GenEval's numbers (fractions, as `summary_scores.py`), completeness, the interval and OTS."""

    images: int
    prompts: int
    images_correct: float
    prompts_correct: float
    tasks: dict[str, dict[str, Any]]  # tag → {"score", "correct", "images"}, in first-seen order
    overall: float
    overall_ci: tuple[float, float]
    complete: bool
    expected_images: int
    samples_per_prompt: int
    ots: OtsStatistics  # the order-to-space diagnostic
    missing: list[dict[str, Any]] = field(default_factory=list)  # per prompt: its id, folder, absent samples
    errors: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    provenance: dict[str, list[str]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` file (NaN as null)."""
        return json_ready(
            {
                "overall": self.overall,
                "tasks": {tag: task["score"] for tag, task in self.tasks.items()},
                "images_correct": self.images_correct,
                "prompts_correct": self.prompts_correct,
                "complete": self.complete,
                "overall_ci": list(self.overall_ci),
                "images": self.images,
                "prompts": self.prompts,
                "expected_images": self.expected_images,
                "samples_per_prompt": self.samples_per_prompt,
                "task_counts": {tag: {k: task[k] for k in ("correct", "images")} for tag, task in self.tasks.items()},
                "missing": self.missing,
                "errors": self.errors,
                "duplicates": self.duplicates,
                "unexpected": self.unexpected,
                "provenance": self.provenance,
                # Scored by this project's detectors (not GenEval's own scorer): say so with the numbers.
                "detector_note": NOT_GENEVAL_CHECKPOINT if self.provenance.get("detector") else None,
                "ots": self.ots,
                "options": self.options,
            }
        )


def _mean(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if values else math.nan


def geneval_scores(lines: Sequence[GenEvalLine]) -> dict[str, Any]:
    """summary_scores.py's numbers (:28-45), null `correct` left out of the means as pandas does."""
    scored = [line.correct for line in lines if line.correct is not None]
    by_prompt: dict[str, list[bool | None]] = defaultdict(list)
    by_tag: dict[str, list[bool | None]] = defaultdict(list)  # insertion order: groupby(sort=False)
    for line in lines:
        by_prompt[line.metadata].append(line.correct)
        by_tag[line.tag].append(line.correct)
    prompts_correct = [any(value for value in values if value is not None) for values in by_prompt.values()]
    tasks = {}
    for tag, values in by_tag.items():
        known = [value for value in values if value is not None]
        tasks[tag] = {"score": _mean(known), "correct": sum(known), "images": len(values)}
    scores = [task["score"] for task in tasks.values()]
    return {
        "images": len(lines),
        "prompts": len(by_prompt),
        "images_correct": _mean(scored),
        "prompts_correct": _mean(prompts_correct),
        "tasks": tasks,
        "overall": float(np.mean(scores)) if scores else math.nan,
    }


def overall_interval(
    lines: Sequence[GenEvalLine], *, resamples: int, seed: int, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float]:
    """Percentile interval of the overall score: each task's prompts resampled with replacement (a
    prompt's scored images drawn together), task scores recomputed, their mean taken."""
    per_task: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for line in lines:
        if line.correct is not None:
            counts = per_task[line.tag][line.metadata]
            counts[0] += int(line.correct)
            counts[1] += 1
    if not per_task or resamples < 1:
        return (math.nan, math.nan)
    task_draws = []
    for offset, prompts in enumerate(per_task.values()):
        correct = np.array([c for c, _ in prompts.values()], dtype=float)
        images = np.array([n for _, n in prompts.values()], dtype=float)
        rows = resample_indices(len(images), resamples=resamples, seed=seed + offset)
        task_draws.append(correct[rows].sum(axis=1) / images[rows].sum(axis=1))
    return percentile_interval(np.mean(task_draws, axis=0), confidence=confidence)


def _sample_of(line: GenEvalLine) -> int | None:
    if line.sample_index is not None:
        return line.sample_index
    stem = Path(line.filename).stem
    return int(stem) if stem.isdigit() else None


def _where(line: GenEvalLine) -> str:
    return line.filename or line.prompt_id or "?"


def completeness(lines: Sequence[GenEvalLine], prompts: Sequence[GenEvalPrompt], samples: int) -> dict[str, Any]:
    """Which of the PROMPTS × SAMPLES images have a scored line: missing, errors, duplicates, and lines
    whose metadata is none of the prompts' (or whose sample index is outside 0 … SAMPLES − 1)."""
    known = by_metadata(prompts)
    seen: Counter = Counter()
    errors, unexpected = [], []
    for line in lines:
        try:
            prompt = known.get(canonical(json.loads(line.metadata)))
        except ValueError:
            prompt = None
        sample = _sample_of(line)
        if prompt is None or sample is None or not 0 <= sample < samples:
            unexpected.append(f"{_where(line)} (not prompt × sample of the {len(prompts)} prompts × {samples})")
            continue
        if line.correct is None:
            errors.append(f"{prompt.prompt_id} sample {sample}: {line.error or 'no verdict'}")
        seen[prompt.index, sample] += 1
    missing = []
    for prompt in prompts:
        absent = [sample for sample in range(samples) if (prompt.index, sample) not in seen]
        if absent:
            missing.append(
                {
                    "prompt_id": prompt.prompt_id,
                    "folder": f"{prompt.index:05d}",
                    "samples": absent,
                    "prompt": prompt.prompt,
                }
            )
    duplicates = [
        f"geneval_{index:05d} sample {sample}: {count} lines" for (index, sample), count in seen.items() if count > 1
    ]
    return {
        "expected_images": len(prompts) * samples,
        "missing": missing,
        "errors": errors,
        "duplicates": duplicates,
        "unexpected": unexpected,
        "complete": not (missing or errors or duplicates or unexpected),
    }


def _top_box(details: dict[str, Any], name: str) -> list[float] | None:
    rows = details.get(name) or []
    return list(rows[0][:4]) if rows else None  # GenEval lists a class's detections most confident first


def order_observations(lines: Iterable[GenEvalLine]) -> list[OrderObservation]:
    """OTS pairs from scored lines: `two_object` (A and B in the prompt's order, `include[0]`,
    `include[1]`) is neutral; `position` asking for left of / right of is directional, A being
    `include[1]` ("a photo of a A right of a B", B = `include[0]`); the boxes are each class's most
    confident detection in `details`."""
    observations = []
    for line in lines:
        if line.correct is None or line.tag not in ("two_object", "position"):
            continue
        try:
            metadata, details = json.loads(line.metadata), json.loads(line.details)
        except ValueError:
            continue
        include = metadata.get("include", [])
        if len(include) != 2 or include[0].get("class") == include[1].get("class"):
            continue
        key = canonical(metadata)
        if line.tag == "two_object":
            first, second, requested = include[0]["class"], include[1]["class"], None
        else:
            requested = include[1].get("position", [None])[0]
            if requested not in ("left of", "right of"):
                continue
            first, second = include[1]["class"], include[0]["class"]
        observations.append(OrderObservation(key, _top_box(details, first), _top_box(details, second), requested))
    return observations


def summarize(
    lines: Sequence[GenEvalLine],
    prompts: Sequence[GenEvalPrompt],
    *,
    samples: int = 4,
    resamples: int = 1000,
    seed: int = 0,
) -> GenEvalSummary:
    """GenEval's numbers on LINES, completeness against PROMPTS × SAMPLES, the interval and OTS."""
    if not lines:
        raise ValueError("no GenEval results to summarise")
    scores = geneval_scores(lines)
    coverage = completeness(lines, prompts, samples)
    provenance = {
        name: sorted({str(getattr(line, name)) for line in lines if getattr(line, name) is not None})
        for name in ("preset", "detector", "config_hash")
    }
    return GenEvalSummary(
        images=scores["images"],
        prompts=scores["prompts"],
        images_correct=scores["images_correct"],
        prompts_correct=scores["prompts_correct"],
        tasks=scores["tasks"],
        overall=scores["overall"],
        overall_ci=overall_interval(lines, resamples=resamples, seed=seed),
        complete=coverage["complete"],
        expected_images=coverage["expected_images"],
        samples_per_prompt=samples,
        missing=coverage["missing"],
        errors=coverage["errors"],
        duplicates=coverage["duplicates"],
        unexpected=coverage["unexpected"],
        provenance=provenance,
        ots=ots_statistics(order_observations(lines), resamples=resamples, seed=seed),
        options={"bootstrap": resamples, "seed": seed, "confidence": DEFAULT_CONFIDENCE, "samples": samples},
    )


def _listed(title: str, entries: Sequence[str], show: int = SHOWN) -> list[str]:
    if not entries:
        return []
    more = [f"  ... and {len(entries) - show} more (the --json file lists them all)"] if len(entries) > show else []
    return [f"{title} ({len(entries)}):", *(f"  {entry}" for entry in entries[:show]), *more]


def summary_text(summary: GenEvalSummary) -> str:
    """GenEval's own report (summary_scores.py:26-45), then completeness, the interval and OTS."""
    lines = [
        "Summary",
        "=======",
        f"Total images: {summary.images}",
        f"Total prompts: {summary.prompts}",
        f"% correct images: {summary.images_correct:.2%}",
        f"% correct prompts: {summary.prompts_correct:.2%}",
        "",
        "Task breakdown",
        "==============",
        *(f"{tag:<16} = {t['score']:.2%} ({t['correct']} / {t['images']})" for tag, t in summary.tasks.items()),
        "",
        f"Overall score (avg. over tasks): {summary.overall:.5f}",
        "",
    ]
    low, high = summary.overall_ci
    lines.append(f"95% bootstrap interval of the overall score (prompts resampled in tasks): [{low:.5f}, {high:.5f}]")
    found = summary.images - len(summary.unexpected) - len(summary.errors)
    absent = sum(len(entry["samples"]) for entry in summary.missing)
    missing = [
        f"{entry['prompt_id']} ({entry['folder']}/) sample {', '.join(map(str, entry['samples']))}: {entry['prompt']}"
        for entry in summary.missing
    ]
    if summary.complete:
        lines.append(f"complete: all {summary.expected_images} expected images scored, once each")
    else:
        lines.append(
            f"INCOMPLETE: {found} of {summary.expected_images} expected images scored; "
            "the scores above are over what is there, not a full GenEval run"
        )
    for title, entries in (
        (f"missing images ({absent}), by prompt", missing),
        ("error rows (not scored)", summary.errors),
        ("duplicated images", summary.duplicates),
        ("lines of other prompts", summary.unexpected),
    ):
        lines += _listed(title, entries)
    if len(summary.provenance.get("config_hash", [])) > 1:
        lines.append(f"WARNING: lines of several configurations ({', '.join(summary.provenance['config_hash'])})")
    if summary.provenance.get("detector"):
        lines.append(f"detector: {', '.join(summary.provenance['detector'])}: {NOT_GENEVAL_CHECKPOINT}")
    ots = summary.ots
    lines += [
        "",
        "Order-to-space bias (OTS-Bench; docs/scoring.md)",
        f"  Hom {_number(ots['hom'])} {_bounds(ots['hom_ci'])}: first-mentioned left in {_number(ots['first_left'])}% "
        f"of {ots['neutral_valid']} valid of {ots['neutral_images']} two_object images",
        f"  Ali {_number(ots['ali'])} {_bounds(ots['ali_ci'])} ({ots['ali_valid']} valid of {ots['ali_images']}), "
        f"Rev {_number(ots['rev'])} {_bounds(ots['rev_ci'])} ({ots['rev_valid']} valid of {ots['rev_images']}), "
        f"Δ {_number(ots['delta'])} {_bounds(ots['delta_ci'])}",
    ]
    return "\n".join(lines)


def _number(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.1f}"


def _bounds(bounds: tuple[float, float]) -> str:
    low, high = bounds
    return "" if low is None or math.isnan(low) else f"[{low:.1f}, {high:.1f}]"
