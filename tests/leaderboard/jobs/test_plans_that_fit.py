"""Plans that fit (`leaderboard.jobs.job_plan.fitted_plan`) and bounded launches (`leaderboard.jobs.job_keeper`),
the flavour follows the model's memory; a plan over a job's time or a day's budget is split into
jobs that fit, each stopping at its deadline and the next going on; a fresh draw is shrunk or waits with
the reason; a job that ends without an outcome is a failed attempt; launches are capped per entry and per
submitter; a regeneration inconclusive on one machine is rerun on another flavour.

The stated numbers are docs/leaderboard.md's (*Plans that fit*): the flavours' GPU memory (L4 24 GB, L40S
48, A100 80, H200 141), a job's memory as weights x 1.2 + 4 GB, a job at most 6 hours, a day 28,800
L4-seconds."""

from __future__ import annotations

import json

import pytest
from huggingface_hub import JobHardware

from dataset_builder.loading import load_prompts
from evaluator.results import ResultRecord
from generation.registry import REGISTRY
from generation.shards import ImageRecord, ShardWriter
from generation.work import SEED_RULE, image_seed
from leaderboard.checks.full_rescore_run import local_images
from leaderboard.jobs.job_backends import HfJobsBackend
from leaderboard.jobs.job_keeper import JobKeeper, JobPolicy
from leaderboard.jobs.job_plan import FLAVOURS, fitted_plan, flavour_for, job_memory, stop_after
from leaderboard.store.entries import Regeneration
from leaderboard.store.image_sources import GenerationRecord
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.core.hf_jobs import HfJobs, JobPackage
from tests.helpers.jobs_helpers import JobsHfApi
from tests.helpers.space_helpers import png_bytes as flat_png
from tests.helpers.space_helpers import write_results

DOCS_MEMORY = {"l4x1": 24, "l40sx1": 48, "a100-large": 80, "h200": 141}  # docs/leaderboard.md, the flavour table


def record_of(key: str) -> GenerationRecord:
    spec = REGISTRY[key]
    backend = "diffusers" if spec.backend == "diffusers" else "transformers"
    return GenerationRecord(seed=1, model_id=spec.hub_id, model_key=key, params={**spec.settings(), "backend": backend})


def test_the_flavours_are_jobs_hardware_with_their_stated_memory():
    assert {f.name: f.memory_gb for f in FLAVOURS} == DOCS_MEMORY
    assert {f.name for f in FLAVOURS} <= {member.value for member in JobHardware}


def test_the_flavour_follows_the_models_memory():
    assert job_memory(24.0) == pytest.approx(32.8)  # a 12B model in bf16: 24 GB of weights x 1.2 + 4 GB
    assert flavour_for(32.8).name == "l40sx1"  # more than an L4's 24 GB
    assert flavour_for(24.0).name == "l4x1" and flavour_for(24.01).name == "l40sx1"  # at its memory: fits
    assert flavour_for(65.2).name == "a100-large" and flavour_for(141.0).name == "h200"
    assert flavour_for(141.1) is None and flavour_for(None).name == "l4x1"  # none holds it; unknown: the smallest
    assert flavour_for(6.6, avoid="l4x1").name == "l40sx1"  # a rerun on another machine
    assert flavour_for(100.0, avoid="h200").name == "h200"  # the only one that holds it
    assert flavour_for(6.6, smallest="a100-large").name == "a100-large"  # the Space's configured flavour


@pytest.mark.parametrize(
    "key, flavour, parts",
    [
        ("sd_1_5", "l4x1", 1),
        ("sd_3_5_large", "l40sx1", 1),
        ("flux_2_dev", "l40sx1", 2),  # 4-bit, 56B parameters: 41 GB; its 252 images need two jobs
        ("hunyuanimage_2_1", "a100-large", 1),
        ("janus_pro_7b", "l4x1", 1),
    ],
)
def test_each_registry_models_verification_fits_its_flavour_and_the_jobs_limits(key, flavour, parts):
    policy = JobPolicy()
    plan = fitted_plan("spot", 19_200, record_of(key), policy)
    assert (plan.flavour.name, plan.parts, plan.waits) == (flavour, parts, "")
    assert plan.memory_gb <= DOCS_MEMORY[flavour]
    each = plan.generation_s / plan.parts
    assert 1200 + plan.rescore_images * 0.5 + 2 * each <= 6 * 3600  # a job: at most 6 hours
    assert plan.part_budget_s <= 28_800  # a day's budget
    if parts > 1:  # one job fewer would not fit
        fewer = plan.generation_s / (parts - 1)
        fits_time = 1200 + plan.rescore_images * 0.5 + 2 * fewer <= 6 * 3600
        assert not (fits_time and plan.budget_s / (parts - 1) <= 28_800)
        assert stop_after(plan, policy) == pytest.approx(2 * each)
    else:
        assert stop_after(plan, policy) is None


def test_a_fresh_draw_is_shrunk_to_fit_or_waits_with_the_reason():
    sd35 = fitted_plan("fresh", 19_200, record_of("sd_3_5_large"), JobPolicy())
    assert (sd35.per_cell, sd35.fresh_images, sd35.waits) == (1, 192, "")
    # 1.96 x sqrt(1/4 / 48) = 14.1 points (docs/leaderboard.md, *Why 432 prompts*)
    assert "fresh draw shrunk to 1 prompts per cell (half-width at most 14.1 points)" in sd35.describe()
    flux = fitted_plan("fresh", 19_200, record_of("flux_2_dev"), JobPolicy())
    assert flux.waits.startswith("its fresh draw does not fit one job even at 1 prompt per cell")
    assert fitted_plan("fresh", 19_200, record_of("sd_1_5"), JobPolicy()).per_cell == 9  # fits as it is


def test_a_model_no_flavour_holds_waits_with_its_memory():
    huge = GenerationRecord(seed=1, model_id="lab/huge", model_key="huge", params={})
    plan = fitted_plan("spot", 19_200, huge, JobPolicy(), weight_bytes=200 * 10**9)
    assert plan.waits == "its model needs about 244 GB, more than any flavour here has (141 GB)"


def test_costs_are_marked_estimated():
    assert "per-image costs estimated" in fitted_plan("spot", 19_200, record_of("sd_1_5"), JobPolicy()).describe()


# -- the keeper ------------------------------------------------------------------------------------


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world(tmp_path):
    prompts = load_prompts(None)[:2]
    writer = ShardWriter(tmp_path / "hub" / "org" / "sd-images", "sd_1_5")
    params = json.dumps({**record_of("sd_1_5").params, "seed_rule": SEED_RULE})
    for prompt in prompts:
        for sample in range(4):
            seed = image_seed(prompt.prompt_id, sample)
            writer.add(
                ImageRecord(prompt.prompt_id, sample, seed, flat_png(), REGISTRY["sd_1_5"].hub_id, "sd_1_5", params)
            )
    writer.flush()
    lines = write_results(tmp_path / "r.jsonl", prompts, "sd_1_5").read_text().splitlines()
    api = JobsHfApi()
    return {
        "store": SQLiteStore(tmp_path / "lb.sqlite"), "api": api, "clock": Clock(),
        "backend": HfJobsBackend(HfJobs(api, package=JobPackage("9.9.9", None)), "hub:org/results"),
        "results": [ResultRecord.model_validate_json(line) for line in lines],
        "images": local_images(tmp_path / "hub"),
    }  # fmt: skip


def entry_of(world, name: str, submitter: str = "alice", **fields) -> Entry:
    entry = Entry(
        model_name=name, model_key=name.lower(), submitter=submitter, images_repo="org/sd-images",
        status="validated", created_at=float(len(world["store"].list_entries()) + 1), **fields,
    )  # fmt: skip
    return world["store"].add_submission(entry, world["results"])


def keeper(world, **policy) -> JobKeeper:
    return JobKeeper(
        world["store"], world["backend"], policy=JobPolicy(**policy), clock=world["clock"],
        open_images=world["images"], images_per_entry=19_200,
    )  # fmt: skip


def test_a_split_plans_jobs_stop_at_their_deadline_and_the_next_goes_at_once(world):
    """8 images of SD 1.5: 8 x 1.7 s of generation; a job here may run 1,230 s, and 1,200 + 16 x 0.5 + 2 x 13.6
    = 1,235.2 do not fit one: two jobs, each stopping after 2 x 6.8 = 13.6 s of generation."""
    store, api = world["store"], world["api"]
    entry = entry_of(world, "A")
    lb = keeper(world, max_timeout_s=1230)
    lb.run_pass()
    [run] = api.called("run_uv_job")
    assert run["script_args"][-2:] == ["--stop-after", "14"] and run["timeout"] == 1230  # at most what a job may run
    assert store.get_entry(entry.submission_id).job.parts == 2
    partial = Regeneration(outcome="partial", reason="4 of 8 compared", checked=4)
    store.update_entry(entry.submission_id, None, status="pending", regeneration=partial)  # what its job wrote
    api.set_stage("job0001", "COMPLETED")
    lb.run_pass()
    job = store.get_entry(entry.submission_id).job
    assert job.job_id == "job0002" and job.failures == 0  # progress: no failure, and at once


def test_a_job_that_ends_without_an_outcome_is_a_failed_attempt_and_the_entry_is_given_up(world):
    store, api, clock = world["store"], world["api"], world["clock"]
    entry = entry_of(world, "A")
    lb = keeper(world)
    lb.run_pass()
    for attempt, job_id in enumerate(["job0001", "job0002", "job0003"], start=1):
        store.update_entry(entry.submission_id, None, status="pending", reason="spot check waits: images not reachable")
        api.set_stage(job_id, "COMPLETED")
        lb.run_pass()
        job = store.get_entry(entry.submission_id).job
        assert job.failures == attempt and job.last_error.startswith("the job ended without an outcome")
        clock.now += lb.retry_after_s + 1
        lb.run_pass()
    stuck = store.get_entry(entry.submission_id)
    assert len(api.called("run_uv_job")) == 3 and stuck.job.given_up  # no fourth job
    assert stuck.reason.startswith("verification job failed 3 times")


def test_launches_are_capped_per_entry_and_per_submitter(world):
    store, api = world["store"], world["api"]
    first = entry_of(world, "A")
    lb = keeper(world, per_entry_per_day=2, max_failures=10)
    lb.run_pass()
    api.set_stage("job0001", "ERROR", "exit code 1")
    lb.run_pass()  # relaunched at once: its second launch today
    api.set_stage("job0002", "ERROR", "exit code 1")
    lb.run_pass()
    job = store.get_entry(first.submission_id).job
    assert len(api.called("run_uv_job")) == 2 and job.message.startswith("waits for this entry's 2 jobs a day")
    others = [entry_of(world, name) for name in ("B", "C")] + [entry_of(world, "D", submitter="bob")]
    keeper(world, per_entry_per_day=2, per_submitter_per_day=3).run_pass()  # alice has 2 launches: one more for her
    launched = {store.get_entry(e.submission_id).model_name: store.get_entry(e.submission_id).job for e in others}
    assert launched["B"].job_id and launched["D"].job_id  # bob's own budget
    assert not launched["C"].job_id and launched["C"].message.startswith("waits for its submitter's 3 jobs a day")


def test_an_inconclusive_regeneration_is_rerun_at_once_on_another_flavour(world):
    store, api = world["store"], world["api"]
    entry = entry_of(world, "A")
    lb = keeper(world)
    lb.run_pass()
    assert api.called("run_uv_job")[0]["flavor"] == "l4x1"
    inconclusive = Regeneration(outcome="inconclusive", reason="drift beyond the bound", inconclusive_runs=1)
    store.update_entry(entry.submission_id, None, status="pending", regeneration=inconclusive)
    api.set_stage("job0001", "COMPLETED")
    lb.run_pass()
    second = api.called("run_uv_job")[1]
    assert second["flavor"] == "l40sx1" and store.get_entry(entry.submission_id).job.failures == 0
