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


def test_a_spot_job_regenerates_252_images_and_rescores_them_with_the_spot_checks_652():
    plan = plan_job("spot", 19_200, SD15_RECORD)
    # 600 s start-up + 252 x 1.7 s (SD 1.5's estimate) + (652 + 252) x 0.06 s = 600 + 428.4 + 54.24
    assert (plan.regeneration_images, plan.rescore_images, plan.fresh_images) == (252, 904, 0)
    assert plan.total_s == pytest.approx(1082.64)
    assert plan.describe() == (
        "plan: 1,083 GPU-seconds on one L4 (l4x1), per-image costs estimated (start-up 600; regeneration 252 "
        "images x 1.7 s = 428; re-score 904 images x 0.06 s = 54); memory: about 7 GB of its 24; "
        "model: stable-diffusion-v1-5/stable-diffusion-v1-5"
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
    # the entry's 8 images: all 8 regenerated (8 x 1.7 s), and re-scored with the 8 regenerated (16 x 0.06 s)
    assert job.plan.startswith("plan: 615 GPU-seconds on one L4 (l4x1)") and "regeneration 8 images x 1.7 s" in job.plan
    assert job.plan_s == pytest.approx(600 + 8 * 1.7 + 16 * 0.06) and job.launch_seconds == [job.plan_s]
    assert (job.flavor, job.parts) == ("l4x1", 1)
    [run] = keeper_world["api"].called("run_uv_job")
    assert run["timeout"] == timeout_for(16, JobPolicy(), 8 * 1.7) and run["flavor"] == "l4x1"


def test_an_entry_waits_for_the_daily_gpu_budget_and_goes_when_it_has_room(keeper_world):
    store, clock = keeper_world["store"], [1e6]
    first = entry_of(keeper_world, "A", 1.0, status="validated")
    second = entry_of(keeper_world, "B", 2.0, status="validated")
    lb = keeper(keeper_world, clock, gpu_seconds_per_day=1000.0)  # room for one plan of 615 GPU-seconds
    lb.run_pass()
    assert store.get_entry(first.submission_id).job.job_id == "job0001"
    waiting = store.get_entry(second.submission_id).job
    assert waiting.job_id == "" and waiting.message.startswith(
        "waits for the Space's daily GPU budget: its plan needs 615 GPU-seconds, 385 of 1,000 are left in the "
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


def test_a_fresh_draw_bigger_than_a_days_budget_is_shrunk_with_its_half_width_stated(keeper_world):
    store = keeper_world["store"]
    reproduced = Regeneration(outcome="reproduced", reason="images regenerated")
    entry = entry_of(keeper_world, "A", 1.0, status="verified", regeneration=reproduced)
    # 9 per cell: 600 + 1,728 x 1.76 = 3,641 > 3,600; 8 per cell: 600 + 1,536 x 1.76 = 3,303.4 fits
    keeper(keeper_world, [1e6], gpu_seconds_per_day=3600.0).run_pass()
    [run] = keeper_world["api"].called("run_uv_job")
    assert run["script_args"][-3:] == ["--fresh-per-cell", "8", "--fresh-draw"]
    job = store.get_entry(entry.submission_id).job
    # 1.96 x sqrt(1/4 / 384) = 5.0 points (docs/leaderboard.md, *Why 432 prompts*)
    assert "fresh draw shrunk to 8 prompts per cell (half-width at most 5.0 points)" in job.plan
    assert job.plan_s == pytest.approx(600 + 1536 * 1.76)


def test_a_plan_that_fits_no_job_waits_and_says_who_runs_it(keeper_world):
    store = keeper_world["store"]
    reproduced = Regeneration(outcome="reproduced", reason="images regenerated")
    entry = entry_of(keeper_world, "A", 1.0, status="verified", regeneration=reproduced)
    # 1 per cell: 600 + 192 x 1.76 = 937.9 > 900: no fresh draw fits a day
    keeper(keeper_world, [1e6], gpu_seconds_per_day=900.0).run_pass()
    assert keeper_world["api"].called("run_uv_job") == []
    job = store.get_entry(entry.submission_id).job
    assert job.message == (
        "its fresh draw does not fit one job even at 1 prompt per cell (a job runs at most 6 hours and a day's "
        "budget is 900 L4-seconds): no job is launched for it here; a maintainer runs "
        f"`negt2ibench leaderboard verify-job --entry {entry.submission_id[:8]} --fresh-draw`"
    )


def test_the_gpu_budget_is_a_setting(monkeypatch):
    monkeypatch.setenv("NEGT2I_VERIFY_GPU_SECONDS_PER_DAY", "7200")
    assert JobPolicy.from_env().gpu_seconds_per_day == 7200.0
