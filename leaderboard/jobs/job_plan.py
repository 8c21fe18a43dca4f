"""What a verification job will do, on which machine, and what it costs, stated before it runs; and plans
that fit: a flavour the model fits on, a job split or a fresh draw shrunk to fit, or a reason to wait.

`plan_job(mode, ...)` counts the images the job generates (the regeneration sample, the fresh draw) and
re-scores (the spot check's sample and the regenerated images, the fresh draw's images, every image for
`full`) and prices them: generation at the registry's cost per image on one L4 for the model the images
name (`generation.registry.image_seconds`), re-scoring at `SCORE_SECONDS_PER_IMAGE`, each divided by the
flavour's speed, plus the job's start-up. Every per-image cost is an **estimate** (FLOPs over a peak)
until `benchmarks/gpu.sh` measures it (`ModelSpec.cost_measured`); the plan says which.

**The flavour follows the model's memory** (`flavour_for`): its weights (the registry's parameters x
bytes per parameter of its dtype or quantisation, or the weights' bytes the Hub lists for another
repo) x `RUNTIME_OVERHEAD`, plus `SCORER_GB` for the scorer that runs in the same job, on the flavour
of `FLAVOURS` with the least GPU memory that holds it (a 12B model in bf16 needs about 33 GB: one L40S).
T4s are not among them (no bf16 tensor cores), nor A10Gs (the L4's 24 GB for more money).

**Plans that fit** (`fitted_plan`, over the keeper's `JobPolicy`): a spot job whose timeout would pass
`max_timeout_s`, or whose cost one day's budget cannot hold, is **split** into jobs that each fit (the
job stops at its deadline, `--stop-after`, and keeps its pairs in the entry; the next one goes on); a
fresh draw that does not fit one job is **shrunk** to fewer prompts per cell, its stated half-width
widened (`fresh_half_width`); what fits no way **waits** with that reason. The daily budget counts
each job's GPU-seconds at its flavour's price against an L4's (L4-seconds).
Pure: the recorded model comes in (`GenerationRecord`), nothing is read here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any

from leaderboard.checks.fresh_draw_policy import CELLS, FRESH_PER_CELL, fresh_images
from leaderboard.checks.regeneration_policy import regeneration_plan
from leaderboard.checks.spot_check_policy import spot_check_plan
from leaderboard.jobs.job_backends import DEFAULT_FLAVOR, Mode
from leaderboard.store.image_sources import GenerationRecord

SCORE_SECONDS_PER_IMAGE = 0.06  # the evaluator on one L4 (docs/hub-jobs.md: 0.059 s, estimated)
STARTUP_SECONDS = 600.0  # a job's start: the image, the package and its pins, the weights (docs/hub-jobs.md)
SCORER_GB = 4.0  # the scorer's four models and a batch, in the same job (docs/hub-jobs.md: ~3 GB of weights)
RUNTIME_OVERHEAD = 1.2  # activations and the framework's buffers over the weights
BUDGET_ENV = "NEGT2I_VERIFY_JOBS_PER_DAY"
GPU_BUDGET_ENV = "NEGT2I_VERIFY_GPU_SECONDS_PER_DAY"


@dataclass(frozen=True)
class Flavour:
    """A Hugging Face Jobs flavour (`huggingface_hub.JobHardware`): one GPU, its memory, its dense bf16
    throughput against an L4's, and its price (list prices, as of 2026-12: estimated)."""

    name: str
    gpu: str
    memory_gb: float
    speed: float  # bf16 dense TFLOPS / the L4's 121
    dollars_per_hour: float


FLAVOURS: tuple[Flavour, ...] = (
    Flavour("l4x1", "L4", 24.0, 1.0, 0.80),
    Flavour("l40sx1", "L40S", 48.0, 362 / 121, 1.80),
    Flavour("a100-large", "A100", 80.0, 312 / 121, 2.50),
    Flavour("h200", "H200", 141.0, 989 / 121, 5.00),
)
L4 = FLAVOURS[0]


def flavour_for(memory_gb: float | None, *, avoid: str = "", smallest: str = DEFAULT_FLAVOR) -> Flavour | None:
    """The flavour with the least GPU memory that holds MEMORY_GB (unknown: the smallest), from SMALLEST up.

    Args:
        memory_gb: what the job needs (`job_memory`), or None when it is not known.
        avoid: a flavour to pass over (a rerun on another machine); kept when it is the only one that fits.
        smallest: the Space's configured flavour (NEGT2I_VERIFY_FLAVOR); smaller ones are not chosen.

    Returns:
        The flavour, or None when none holds it.
    """
    names = [flavour.name for flavour in FLAVOURS]
    start = names.index(smallest) if smallest in names else 0
    fitting = [f for f in FLAVOURS[start:] if memory_gb is None or f.memory_gb >= memory_gb]
    others = [f for f in fitting if f.name != avoid]
    chosen = others or fitting
    return chosen[0] if chosen else None


def job_memory(weights_gb: float | None) -> float | None:
    """GPU memory a job with the model needs: its weights x RUNTIME_OVERHEAD + SCORER_GB (None: unknown)."""
    return None if weights_gb is None else weights_gb * RUNTIME_OVERHEAD + SCORER_GB


def fresh_half_width(per_cell: int) -> float:
    """The fresh draw's stated 95% half-width, in points, for PER_CELL prompts in each of the 48 cells:
    1.96 x sqrt(1/4 / N) (`leaderboard.checks.fresh_draw_policy`, *Why 432 prompts*)."""
    return 100 * 1.96 * math.sqrt(0.25 / (per_cell * CELLS))


@dataclass(frozen=True)
class JobPolicy:
    """How far the Space's jobs may go (`leaderboard.jobs.job_keeper`): failures in a row before it gives an
    entry up, launches a day for the whole Space, per entry and per submitter, the wait before a job that
    ended without an outcome is launched again, and the timeout: `startup_s` plus `seconds_per_image` for
    each image the plan re-scores plus `generation_slack` times its generation, within
    [`min_timeout_s`, `max_timeout_s`]."""

    max_failures: int = 3
    per_day: int = 24
    per_entry_per_day: int = 6  # launches for one entry in any 24 hours (a split plan's jobs included)
    per_submitter_per_day: int = 12  # ... for all the entries of one submitter
    retry_after_s: float | None = None  # None: 30 minutes on `local` (free), 3 hours elsewhere (billed)
    startup_s: int = 1200
    seconds_per_image: float = 0.5
    min_timeout_s: int = 1800
    max_timeout_s: int = 6 * 3600
    # GPU-seconds the Space's jobs may plan in any 24 hours, in L4-seconds: one L4 for 8 hours.
    gpu_seconds_per_day: float = 8 * 3600.0
    generation_slack: float = 2.0  # a job's timeout allows this many times its planned generation

    @classmethod
    def from_env(cls) -> JobPolicy:
        """The defaults, with NEGT2I_VERIFY_JOBS_PER_DAY (a positive integer) as the daily budget of
        launches and NEGT2I_VERIFY_GPU_SECONDS_PER_DAY (a positive integer) as that of GPU-seconds."""
        from negt2ibench.core.options import check, positive_int

        changes: dict[str, Any] = {}
        if os.environ.get(BUDGET_ENV):
            changes["per_day"] = check(BUDGET_ENV, os.environ[BUDGET_ENV], positive_int)
        if os.environ.get(GPU_BUDGET_ENV):
            changes["gpu_seconds_per_day"] = float(check(GPU_BUDGET_ENV, os.environ[GPU_BUDGET_ENV], positive_int))
        return cls(**changes)


def timeout_for(images: int, policy: JobPolicy, generation_s: float = 0.0) -> int:
    """The job's timeout in seconds for `images` re-scored images and `generation_s` planned GPU-seconds of
    generation (given `generation_slack` times over)."""
    wanted = policy.startup_s + images * policy.seconds_per_image + generation_s * policy.generation_slack
    return int(min(policy.max_timeout_s, max(policy.min_timeout_s, wanted)))


@dataclass(frozen=True)
class JobPlan:
    """The images a job generates and re-scores, on which flavour, in how many jobs, and their GPU-seconds."""

    mode: Mode
    model: str  # what it generates with, or why it generates nothing
    seconds_per_image: float  # generation, per image, on one L4
    regeneration_images: int = 0
    fresh_images: int = 0
    rescore_images: int = 0
    startup_s: float = STARTUP_SECONDS
    flavour: Flavour = L4
    memory_gb: float | None = None  # what the job needs (None: not known)
    parts: int = 1  # jobs the plan is split into
    per_cell: int = FRESH_PER_CELL  # the fresh draw's prompts per cell
    measured: bool = False  # the per-image cost was measured (benchmarks/gpu.sh), not estimated
    waits: str = ""  # why no job of it is launched ("" when one may be)

    @property
    def generation_s(self) -> float:
        return (self.regeneration_images + self.fresh_images) * self.seconds_per_image / self.flavour.speed

    @property
    def rescore_s(self) -> float:
        return self.rescore_images * SCORE_SECONDS_PER_IMAGE / self.flavour.speed

    @property
    def total_s(self) -> float:
        return self.startup_s * self.parts + self.generation_s + self.rescore_s

    @property
    def budget_s(self) -> float:
        """Its cost against the daily budget, in L4-seconds (GPU-seconds x its flavour's price / an L4's)."""
        return self.total_s * self.flavour.dollars_per_hour / L4.dollars_per_hour

    @property
    def part_budget_s(self) -> float:
        """One of its jobs' cost, in L4-seconds."""
        return self.budget_s / self.parts

    def describe(self) -> str:
        """One line: the total, where and in how many jobs, then each part."""
        per = f"{self.seconds_per_image / self.flavour.speed:,.2f}".rstrip("0").rstrip(".")
        parts = [f"start-up {self.startup_s:,.0f}" + (f" x {self.parts}" if self.parts > 1 else "")]
        for what, images in (("regeneration", self.regeneration_images), ("fresh draw", self.fresh_images)):
            if images:
                cost = images * self.seconds_per_image / self.flavour.speed
                parts.append(f"{what} {images:,} images x {per} s = {cost:,.0f}")
        if self.rescore_images:
            score = f"{SCORE_SECONDS_PER_IMAGE / self.flavour.speed:.3g}"
            parts.append(f"re-score {self.rescore_images:,} images x {score} s = {self.rescore_s:,.0f}")
        where = f"one {self.flavour.gpu} ({self.flavour.name})" + (f", in {self.parts} jobs" if self.parts > 1 else "")
        memory = f"about {self.memory_gb:,.0f} GB of its {self.flavour.memory_gb:g}" if self.memory_gb else "not known"
        shrunk = ""
        if self.fresh_images and self.per_cell < FRESH_PER_CELL:
            half = fresh_half_width(self.per_cell)
            shrunk = f"; fresh draw shrunk to {self.per_cell} prompts per cell (half-width at most {half:.1f} points)"
        how = "measured" if self.measured else "estimated"
        return (
            f"plan: {self.total_s:,.0f} GPU-seconds on {where}, per-image costs {how} ({'; '.join(parts)}); "
            f"memory: {memory}{shrunk}; model: {self.model}"
        )


def recorded_model(record: GenerationRecord | None) -> tuple[str, Any]:
    """(what the record names, its spec) for a model the job can regenerate with; (why not, None) otherwise."""
    if record is None:
        return "not read yet (the images were not reachable)", None
    from generation.reproduce import NotReproducible, recorded_spec

    try:
        spec = recorded_spec(record.model_id, record.model_key, record.params)
    except NotReproducible as error:
        return f"none ({error.one_line()})", None
    return spec.hub_id + (f"@{spec.revision[:12]}" if spec.revision else ""), spec


def plan_job(
    mode: Mode, total_images: int, record: GenerationRecord | None, *, per_cell: int = FRESH_PER_CELL,
    weight_bytes: int | None = None, flavour: Flavour = L4,
) -> JobPlan:  # fmt: skip
    """The plan of a `mode` job for an entry of `total_images` images whose first image records `record`, on
    FLAVOUR, in one job (`fitted_plan` chooses the flavour and splits)."""
    from generation.registry import image_seconds, weight_gigabytes

    model, spec = recorded_model(record)
    if mode == "full":
        return JobPlan(mode, "none (a full re-score generates nothing)", 0.0, rescore_images=total_images)
    seconds = image_seconds(spec) if spec is not None else 0.0
    weights = weight_gigabytes(spec) if spec is not None else None
    if weights is None and weight_bytes:
        weights = weight_bytes / 1e9
    common: dict[str, Any] = {
        "flavour": flavour, "memory_gb": job_memory(weights) if spec is not None else job_memory(0.0),
        "measured": bool(spec is not None and spec.cost_measured),
    }  # fmt: skip
    if mode == "fresh":
        images = fresh_images(per_cell) if spec is not None else 0
        return JobPlan(mode, model, seconds, fresh_images=images, rescore_images=images, per_cell=per_cell, **common)
    regenerated = regeneration_plan(total_images).sample_size if spec is not None else 0
    rescored = spot_check_plan(total_images).sample_size + regenerated  # the regenerated images are scored too
    return JobPlan(mode, model, seconds, regeneration_images=regenerated, rescore_images=rescored, **common)


def _fits(plan: JobPlan, policy: JobPolicy) -> bool:
    """Whether one job of the plan (one of its parts) fits a job's time and a day's budget."""
    generation = plan.generation_s / plan.parts
    wanted = policy.startup_s + plan.rescore_images * policy.seconds_per_image + generation * policy.generation_slack
    return wanted <= policy.max_timeout_s and plan.part_budget_s <= policy.gpu_seconds_per_day


def fitted_plan(
    mode: Mode, total_images: int, record: GenerationRecord | None, policy: JobPolicy, *,
    weight_bytes: int | None = None, avoid: str = "", smallest: str = DEFAULT_FLAVOR,
) -> JobPlan:  # fmt: skip
    """The plan on the flavour the model fits on, split (spot) or shrunk (fresh) until one job fits, or
    waiting with the reason (module docstring).

    Args:
        mode: spot, full or fresh.
        total_images: the entry's images.
        record: what its first image records of its making (None: not read).
        policy: the keeper's bounds (a job's time, a day's budget).
        weight_bytes: the weights' bytes the Hub lists, for a model the registry does not know.
        avoid: a flavour to pass over (a rerun on another machine).
        smallest: the Space's configured flavour.

    Returns:
        The plan; its `waits` says why none of its jobs is launched ("" when they may be).
    """
    plan = plan_job(mode, total_images, record, weight_bytes=weight_bytes)
    flavour = flavour_for(plan.memory_gb, avoid=avoid, smallest=smallest) if mode != "full" else L4
    if flavour is None:
        need = f"{plan.memory_gb:,.0f} GB" if plan.memory_gb else "more memory"
        most = FLAVOURS[-1].memory_gb
        return replace(plan, waits=f"its model needs about {need}, more than any flavour here has ({most:g} GB)")
    plan = replace(plan, flavour=flavour)
    if mode == "fresh":
        for per_cell in range(FRESH_PER_CELL, 0, -1):
            shrunk = plan_job(mode, total_images, record, per_cell=per_cell, weight_bytes=weight_bytes, flavour=flavour)
            if _fits(shrunk, policy):
                return shrunk
        why = f"its fresh draw does not fit one job even at 1 prompt per cell ({_limits(policy)})"
        return replace(plan, waits=why)
    for parts in range(1, 65):
        split = replace(plan, parts=parts)
        if _fits(split, policy):
            return split
    return replace(plan, waits=f"its plan does not fit even in 64 jobs ({_limits(policy)})")


def _limits(policy: JobPolicy) -> str:
    hours, budget = policy.max_timeout_s / 3600, policy.gpu_seconds_per_day
    return f"a job runs at most {hours:g} hours and a day's budget is {budget:,.0f} L4-seconds"


def stop_after(plan: JobPlan, policy: JobPolicy) -> float | None:
    """The seconds after which one job of a split plan stops and keeps its progress (None: not split).

    Args:
        plan: the plan.
        policy: the keeper's bounds.

    Returns:
        Its generation share, `generation_slack` times over: what its timeout allows for generation.
    """
    return plan.generation_s / plan.parts * policy.generation_slack if plan.parts > 1 else None
