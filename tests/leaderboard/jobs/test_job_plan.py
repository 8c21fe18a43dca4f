"""A verification job's plan in GPU-seconds (`leaderboard.jobs.job_plan`), stated before it runs, and the Space's
daily GPU budget over those plans (`leaderboard.jobs.job_keeper`): a job launched when the budget covers it,
an entry that waits with that reason, a plan too big for any day, and a verified entry's fresh draw."""

from __future__ import annotations

import json

import pytest

from dataset_builder.loading import load_prompts
from evaluator.results import ResultRecord
from generation.registry import REGISTRY
from generation.shards import ImageRecord, ShardWriter
from generation.work import SEED_RULE, image_seed
from leaderboard.checks.full_rescore_run import local_images
from leaderboard.jobs.job_backends import HfJobsBackend
from leaderboard.jobs.job_keeper import JobKeeper, JobPolicy, timeout_for
from leaderboard.jobs.job_plan import plan_job
from leaderboard.store.entries import Regeneration
from leaderboard.store.image_sources import GenerationRecord
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.core.hf_jobs import HfJobs, JobPackage
from tests.helpers.jobs_helpers import JobsHfApi
from tests.helpers.space_helpers import png_bytes as flat_png
from tests.helpers.space_helpers import write_results

SD15 = {**REGISTRY["sd_1_5"].settings(), "backend": "diffusers", "pipeline": "StableDiffusionPipeline"}
SD15_RECORD = GenerationRecord(seed=1, model_id=REGISTRY["sd_1_5"].hub_id, model_key="sd_1_5", params=SD15)


def test_a_spot_job_regenerates_114_images_and_rescores_652():
    plan = plan_job("spot", 19_200, SD15_RECORD)
    # 600 s start-up + 114 x 1.7 s (SD 1.5's estimate) + 652 x 0.06 s = 600 + 193.8 + 39.12
    assert (plan.regeneration_images, plan.rescore_images, plan.fresh_images) == (114, 652, 0)
    assert plan.total_s == pytest.approx(832.92)
    assert plan.describe() == (
        "plan: 833 GPU-seconds on one L4, estimated (start-up 600; regeneration 114 images x 1.7 s = 194; "
        "re-score 652 images x 0.06 s = 39); model: stable-diffusion-v1-5/stable-diffusion-v1-5"
    )


def test_a_fresh_draw_generates_and_rescores_1728_images():
    plan = plan_job("fresh", 19_200, SD15_RECORD)
    assert (plan.fresh_images, plan.rescore_images) == (1728, 1728)
    assert plan.total_s == pytest.approx(600 + 1728 * 1.7 + 1728 * 0.06)  # 3,641 s


def test_a_model_that_cannot_be_regenerated_costs_only_its_rescore():
    imported = GenerationRecord(seed=-1, model_id="x", model_key="x", params={"source": "import-images"})
    plan = plan_job("spot", 19_200, imported)
    assert plan.regeneration_images == 0 and plan.total_s == pytest.approx(600 + 652 * 0.06)
    assert "model: none (imported from a folder of PNGs" in plan.describe()
    assert "model: not read yet" in plan_job("spot", 19_200, None).describe()


def sd15_images(root, prompts, split="sd_1_5"):
    writer = ShardWriter(root / "org" / "sd-images", split)
    for prompt in prompts:
        for sample in range(4):
            seed = image_seed(prompt.prompt_id, sample)
            params = json.dumps({**SD15, "seed_rule": SEED_RULE})
            writer.add(
                ImageRecord(prompt.prompt_id, sample, seed, flat_png(), REGISTRY["sd_1_5"].hub_id, split, params)
            )
    writer.flush()


@pytest.fixture
def keeper_world(tmp_path):
    prompts = load_prompts(None)[:2]
    sd15_images(tmp_path / "hub", prompts)
    lines = write_results(tmp_path / "r.jsonl", prompts, "sd_1_5").read_text().splitlines()
    results = [ResultRecord.model_validate_json(line) for line in lines]
    api = JobsHfApi()
    backend = HfJobsBackend(HfJobs(api, package=JobPackage("9.9.9", None)), "hub:org/results")
    return {"store": SQLiteStore(tmp_path / "lb.sqlite"), "api": api, "backend": backend, "results": results,
            "images": local_images(tmp_path / "hub")}  # fmt: skip


def entry_of(world, name: str, created_at: float, **fields) -> Entry:
    entry = Entry(
        model_name=name, model_key=name.lower(), submitter="alice", images_repo="org/sd-images",
        created_at=created_at, **fields,
    )  # fmt: skip
    return world["store"].add_submission(entry, world["results"])


def keeper(world, clock, **policy) -> JobKeeper:
    return JobKeeper(
        world["store"], world["backend"], policy=JobPolicy(**policy), clock=lambda: clock[0],
        open_images=world["images"], images_per_entry=19_200,
    )  # fmt: skip


def test_the_plan_is_written_on_the_job_and_sets_its_timeout(keeper_world):
    entry = entry_of(keeper_world, "A", 1.0, status="validated")
    keeper(keeper_world, [1e6]).run_pass()
    job = keeper_world["store"].get_entry(entry.submission_id).job
    # the entry's 8 images: all 8 regenerated (8 x 1.7 s) and re-scored (8 x 0.06 s) after the start-up
    assert job.plan.startswith("plan: 614 GPU-seconds on one L4") and "regeneration 8 images x 1.7 s" in job.plan
    assert job.plan_s == pytest.approx(600 + 8 * 1.7 + 8 * 0.06) and job.launch_seconds == [job.plan_s]
    [run] = keeper_world["api"].called("run_uv_job")
    assert run["timeout"] == timeout_for(8, JobPolicy(), 8 * 1.7)


def test_an_entry_waits_for_the_daily_gpu_budget_and_goes_when_it_has_room(keeper_world):
    store, clock = keeper_world["store"], [1e6]
    first = entry_of(keeper_world, "A", 1.0, status="validated")
    second = entry_of(keeper_world, "B", 2.0, status="validated")
    lb = keeper(keeper_world, clock, gpu_seconds_per_day=1000.0)  # room for one plan of 614 GPU-seconds
    lb.run_pass()
    assert store.get_entry(first.submission_id).job.job_id == "job0001"
    waiting = store.get_entry(second.submission_id).job
    assert waiting.job_id == "" and waiting.message.startswith(
        "waits for the Space's daily GPU budget: its plan needs 614 GPU-seconds, 386 of 1,000 are left in the "
        "last 24 hours (enough after"
    )
    clock[0] += 24 * 3600 + 1
    lb.run_pass()
    assert store.get_entry(second.submission_id).job.job_id == "job0002"


def test_a_verified_entry_with_its_images_reproduced_gets_a_fresh_draw_job(keeper_world):
    store = keeper_world["store"]
    reproduced = Regeneration(outcome="reproduced", reason="images regenerated")
    entry = entry_of(keeper_world, "A", 1.0, status="verified", regeneration=reproduced)
    entry_of(keeper_world, "B", 2.0, status="verified")  # never regenerated: no fresh draw
    keeper(keeper_world, [1e6], gpu_seconds_per_day=4000.0).run_pass()
    [run] = keeper_world["api"].called("run_uv_job")
    assert run["script_args"][-1] == "--fresh-draw" and run["labels"]["negt2ibench-check"] == "fresh"
    job = store.get_entry(entry.submission_id).job
    assert job.mode == "fresh" and "fresh draw 1,728 images x 1.7 s = 2,938" in job.plan


def test_the_fresh_draw_goes_as_soon_as_the_verifying_job_completes(keeper_world):
    """The wait before relaunching a job that completed without an outcome is for that job's own check."""
    store, api, clock = keeper_world["store"], keeper_world["api"], [1e6]
    entry = entry_of(keeper_world, "A", 1.0, status="validated")
    lb = keeper(keeper_world, clock)
    lb.run_pass()
    reproduced = Regeneration(outcome="reproduced", reason="images regenerated")
    store.update_entry(entry.submission_id, None, status="verified", regeneration=reproduced)  # what its run wrote
    api.set_stage("job0001", "COMPLETED")
    clock[0] += 60
    lb.run_pass()
    job = store.get_entry(entry.submission_id).job
    assert (job.job_id, job.mode) == ("job0002", "fresh") and job.launches == [1e6, 1e6 + 60]


def test_a_plan_bigger_than_a_days_budget_is_never_launched_and_says_who_runs_it(keeper_world):
    store = keeper_world["store"]
    reproduced = Regeneration(outcome="reproduced", reason="images regenerated")
    entry = entry_of(keeper_world, "A", 1.0, status="verified", regeneration=reproduced)
    keeper(keeper_world, [1e6], gpu_seconds_per_day=3600.0).run_pass()
    assert keeper_world["api"].called("run_uv_job") == []
    job = store.get_entry(entry.submission_id).job
    assert job.message == (
        "its plan needs 3,641 GPU-seconds, more than the Space's daily budget of 3,600: no job is launched for it "
        f"here; a maintainer runs `negt2ibench leaderboard verify-job --entry {entry.submission_id[:8]} --fresh-draw`"
    )


def test_the_gpu_budget_is_a_setting(monkeypatch):
    monkeypatch.setenv("NEGT2I_VERIFY_GPU_SECONDS_PER_DAY", "7200")
    assert JobPolicy.from_env().gpu_seconds_per_day == 7200.0
