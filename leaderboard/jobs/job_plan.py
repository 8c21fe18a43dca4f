"""What a verification job will do and what it costs, in GPU-seconds, stated before it runs.

`plan_job(mode, ...)` counts the images the job generates (the regeneration sample, the fresh draw)
and re-scores (the spot check's sample, the fresh draw's images, every image for `full`), and
prices them: generation at the generation registry's cost per image for the recorded model
(`generation.registry.image_seconds`: estimated on one L4, the jobs' default flavour), re-scoring at
`SCORE_SECONDS_PER_IMAGE` (the evaluator on one L4, docs/hub-jobs.md), plus the job's start-up. The
Space's pass (`leaderboard.jobs.job_keeper`) writes the plan on the entry's job record and launches the
job only when the Space's daily GPU budget covers it; `verify-job` prints it before it starts.
Pure: the recorded model comes in (`GenerationRecord`), nothing is read here.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.checks.fresh_draw_policy import FRESH_PER_CELL, fresh_images
from leaderboard.checks.regeneration_policy import regeneration_plan
from leaderboard.checks.spot_check_policy import spot_check_plan
from leaderboard.jobs.job_backends import Mode
from leaderboard.store.image_sources import GenerationRecord

SCORE_SECONDS_PER_IMAGE = 0.06  # the evaluator on one L4 (docs/hub-jobs.md: 0.059 s, estimated)
STARTUP_SECONDS = 600.0  # a job's start: the image, the package and its pins, the weights (docs/hub-jobs.md)


@dataclass(frozen=True)
class JobPlan:
    """The images a job generates and re-scores, and their GPU-seconds."""

    mode: Mode
    model: str  # what it generates with, or why it generates nothing
    seconds_per_image: float  # generation, per image
    regeneration_images: int = 0
    fresh_images: int = 0
    rescore_images: int = 0
    startup_s: float = STARTUP_SECONDS

    @property
    def generation_s(self) -> float:
        return (self.regeneration_images + self.fresh_images) * self.seconds_per_image

    @property
    def rescore_s(self) -> float:
        return self.rescore_images * SCORE_SECONDS_PER_IMAGE

    @property
    def total_s(self) -> float:
        return self.startup_s + self.generation_s + self.rescore_s

    def describe(self) -> str:
        """One line: the total, then each part (GPU-seconds on one L4, estimated)."""
        parts = [f"start-up {self.startup_s:,.0f}"]
        per = f"{self.seconds_per_image:,.2f}".rstrip("0").rstrip(".")
        if self.regeneration_images:
            cost = self.regeneration_images * self.seconds_per_image
            parts.append(f"regeneration {self.regeneration_images:,} images x {per} s = {cost:,.0f}")
        if self.fresh_images:
            cost = self.fresh_images * self.seconds_per_image
            parts.append(f"fresh draw {self.fresh_images:,} images x {per} s = {cost:,.0f}")
        if self.rescore_images:
            parts.append(
                f"re-score {self.rescore_images:,} images x {SCORE_SECONDS_PER_IMAGE:g} s = {self.rescore_s:,.0f}"
            )
        return f"plan: {self.total_s:,.0f} GPU-seconds on one L4, estimated ({'; '.join(parts)}); model: {self.model}"


def recorded_model(record: GenerationRecord | None) -> tuple[str, float | None]:
    """(what the record names, GPU-seconds per image) for a model the job can regenerate with;
    (why not, None) otherwise."""
    if record is None:
        return "not read yet (the images were not reachable)", None
    from generation.registry import image_seconds
    from generation.reproduce import NotReproducible, recorded_spec

    if record.params_problem:
        return f"none ({record.params_problem})", None
    try:
        spec = recorded_spec(record.model_id, record.model_key, record.params)
    except NotReproducible as error:
        return f"none ({error.one_line()})", None
    return spec.hub_id + (f"@{spec.revision[:12]}" if spec.revision else ""), image_seconds(spec)


def plan_job(
    mode: Mode, total_images: int, record: GenerationRecord | None, *, per_cell: int = FRESH_PER_CELL
) -> JobPlan:
    """The plan of a `mode` job for an entry of `total_images` images whose first image records `record`."""
    model, seconds = recorded_model(record)
    per_image = seconds or 0.0
    if mode == "full":
        return JobPlan(mode, "none (a full re-score generates nothing)", 0.0, rescore_images=total_images)
    if mode == "fresh":
        images = fresh_images(per_cell) if seconds is not None else 0
        return JobPlan(mode, model, per_image, fresh_images=images, rescore_images=images)
    regenerated = regeneration_plan(total_images).sample_size if seconds is not None else 0
    rescored = spot_check_plan(total_images).sample_size
    return JobPlan(mode, model, per_image, regeneration_images=regenerated, rescore_images=rescored)
