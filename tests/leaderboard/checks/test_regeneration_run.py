"""The regeneration check (`leaderboard.checks.regeneration_run`) as a step of `verify-job`, on tiny random diffusers
pipelines saved in the Hugging Face cache as pinned Hub repos, on the CPU, against the cheats a submitter would use:
an honest entry's images are the model's own and it is verified, drift within the calibrated bound too;
images edited (recoloured at equal lightness, pasted into, erased, another picture nudged to the own
layout) are rejected at once; best-of-4 over other seeds and another model's images are rejected on the
second machine (the first finds the entry's drift beyond the bound); edits too small for the measure
that turn failed statements into passed ones are rejected by the verdict test; unusable recorded
parameters of an open model do not opt out; a closed or private model gets the mark *images not
reproduced*, saying which; a split plan's job keeps its pairs and the next one goes on."""

from __future__ import annotations

import pytest

from leaderboard.checks.regeneration_policy import DRIFT_BOUND, THRESHOLD, regeneration_plan
from leaderboard.checks.regeneration_run import NOT_REPRODUCED
from tests.helpers import image_cheats as cheats
from tests.helpers.generation_helpers import tiny_sd_pipeline
from tests.helpers.regen_helpers import (
    COMMIT_A,
    DRIFT_WITHIN_BOUND,
    REPO_A,
    DriftedGenerator,
    best_of_four_split,
    edited_split,
    honest_split,
    light_absent_objects,
    load_tiny,
    other_model_split,
    pixel_perception,
    regen_world,
    stored,
    submit_and_verify,
    tiny_spec,
    verify,
    with_params,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return regen_world(tmp_path_factory.mktemp("regen"))


def test_the_plan_regenerates_every_image_of_a_small_file():
    # 40 images: every one, at most 4 not the model's own (binom.sf(4, 40, 0.03) <= 1% < binom.sf(3, 40, 0.03))
    assert regeneration_plan(40).sample_size == 40 and regeneration_plan(40).max_not_own == 4


def test_an_honest_entry_is_the_models_own_and_is_verified(world, tmp_path):
    said: list[str] = []
    entry = submit_and_verify(world, tmp_path, "honest", said=said)
    assert entry.status == "verified", entry.reason
    check = entry.regeneration
    assert check is not None and check.outcome == "reproduced"
    assert (check.checked, check.not_own, check.allowed) == (40, 0, 4)
    assert check.model_id == REPO_A and check.commit == COMMIT_A
    assert all(pair.difference == 0.0 and pair.similarity == 1.0 for pair in check.pairs)  # the same CPU
    assert (check.favourable, check.unfavourable, check.sign_p, check.drift) == (0, 0, 1.0, 0.0)
    assert sum(bool(pair.regenerated_jpeg and pair.submitted_jpeg) for pair in check.pairs) == 8  # shown pairs
    assert said[0].startswith(f"{entry.submission_id[:8]}  honest: plan: ")  # before the first step
    assert "regeneration 40 images x 0.01 s" in said[0] and "model: test-regen/tiny-a@aaaaaaaaaaaa" in said[0]
    assert "per-image costs estimated" in said[0] and "one L4 (l4x1)" in said[0]


def test_images_with_drift_within_the_calibrated_bound_pass(world, tmp_path):
    drifted = DriftedGenerator(load_tiny(world["spec"]), DRIFT_WITHIN_BOUND)
    honest_split(world["images"] / "org" / "drifted", world["prompts"], world["spec"], drifted)
    entry = submit_and_verify(world, tmp_path, "drifted", perception=pixel_perception())
    check = entry.regeneration
    assert entry.status == "verified" and check.outcome == "reproduced" and check.not_own == 0, entry.reason
    differences = [pair.difference for pair in check.pairs]
    assert max(differences) <= THRESHOLD and min(differences) > 0  # drifted, yet the model's own
    assert check.drift is not None and 0 < check.drift <= DRIFT_BOUND
    assert check.sign_p is not None and check.sign_p > 0.01  # whatever moved, moved both ways


def edit_of(world, share: float):
    """Each image edited by one of the cheats in turn, at SHARE of its area (another picture: the next
    prompt's image, its colours turned)."""
    from PIL import ImageOps

    honest = world["images"] / "org" / "honest"
    from leaderboard.store.image_sources import ParquetImages

    keys = [(p.prompt_id, s) for p in world["prompts"] for s in range(4)]
    found = dict(ParquetImages.from_folder(honest, world["spec"].key).images(keys))

    def edit(prompt_id: str, sample: int, image):
        position = keys.index((prompt_id, sample))
        other = ImageOps.invert(found[keys[(position + 5) % len(keys)]].convert("RGB"))
        kind = position % 4
        if kind == 0:
            return cheats.recolour(image, share)
        if kind == 1:
            return cheats.paste(image, other, share, seed=position)
        if kind == 2:
            return cheats.erase(image, share, "flat" if position % 8 == 2 else "blur")
        return cheats.nudge(other, image)

    return edit


def test_an_entry_of_edited_images_is_rejected_at_once_with_the_pairs_shown(world, tmp_path):
    org = world["images"] / "org"
    edited_split(org / "edited", org / "honest", world["spec"].key, edit_of(world, 0.02))
    entry = submit_and_verify(world, tmp_path, "edited")
    check = entry.regeneration
    assert entry.status == "rejected" and check.outcome == "rejected", entry.reason
    assert entry.reason.startswith(f"regeneration check: {check.not_own} of {check.checked} sampled images")
    assert check.not_own > check.allowed == 4 and check.not_own == check.checked  # every edited image caught
    assert check.drift is not None and check.drift <= DRIFT_BOUND  # the edits are local: no drift
    shown = [pair for pair in check.pairs if pair.submitted_jpeg]
    assert shown and all(not pair.own and pair.regenerated_jpeg for pair in shown)
    assert all(pair.difference > THRESHOLD and "its worst region of 2% of the image" in pair.why for pair in shown)


@pytest.mark.parametrize("cheat", ["best4", "other"])
def test_other_pictures_are_rejected_on_a_second_machine(world, tmp_path, cheat):
    """Best-of-4 over other seeds, and another model's images under the model's name: every region differs,
    so the entry's drift is far beyond the bound. One machine cannot tell that from its own drift: the
    first run is inconclusive and waits; a rerun on another machine sees the same, and rejects."""
    org = world["images"] / "org"
    if cheat == "best4":
        best_of_four_split(org / cheat, world["prompts"], world["spec"], org / "honest")
    else:
        other_model_split(org / cheat, world["prompts"], world["spec"], tiny_sd_pipeline(1), COMMIT_A)
    store, entry = stored(world, tmp_path, cheat)
    first = verify(world, tmp_path, store, entry)
    assert first.status == "pending" and first.regeneration.outcome == "inconclusive", first.reason
    assert "inconclusive on this machine" in first.reason and "waits for a rerun on another machine" in first.reason
    assert first.regeneration.drift > DRIFT_BOUND and first.regeneration.inconclusive_runs == 1
    second = verify(world, tmp_path, store, entry)
    check = second.regeneration
    assert second.status == "rejected" and check.outcome == "rejected" and check.not_own > check.allowed
    # rejected as soon as more than 4 of the 40 are not the model's own: two batches of 4 settle it
    assert (check.checked, check.not_own) == (8, 8) and "the pairs are on its page" in second.reason


def test_edits_too_small_to_see_that_turn_failures_into_passes_are_rejected_by_the_verdict_test(world, tmp_path):
    """One pixel per missing object lit: every region stays within t, but the verdicts moved only toward
    the submission."""
    org = world["images"] / "org"
    by_id = {p.prompt_id: p for p in world["prompts"]}
    edited_split(
        org / "lit", org / "honest", world["spec"].key, lambda pid, s, image: light_absent_objects(by_id[pid], image)
    )
    entry = submit_and_verify(world, tmp_path, "lit", perception=pixel_perception())
    check = entry.regeneration
    assert entry.status == "rejected" and check.outcome == "rejected", entry.reason
    assert check.not_own <= check.allowed  # the pixel side alone would have passed it
    assert check.favourable >= 7 and check.unfavourable == 0 and check.sign_p <= 0.01
    assert "the verdict test rejects" in entry.reason and "favour the submission" in entry.reason


def test_unusable_parameters_recorded_for_an_open_model_do_not_opt_out(world, tmp_path):
    """Its params say the images were made by a function (the mark a closed model's images carry): the
    model's id names a public repo, so it is regenerated with diffusers' defaults for it, and images made
    with other settings are not the model's own."""
    org = world["images"] / "org"
    honest_split(org / "oddparams", world["prompts"], world["spec"])
    with_params(org / "oddparams", world["spec"].key, {"backend": "callable", "callable": "lab.api_model"})
    loads: list = []

    def load(spec):
        loads.append(spec)
        return load_tiny(spec)

    store, entry = stored(world, tmp_path, "oddparams")
    first = verify(world, tmp_path, store, entry, load=load)  # every region differs: inconclusive on one machine
    assert loads and loads[0].hub_id == REPO_A and loads[0].revision == COMMIT_A  # regenerated anyway
    assert first.regeneration.outcome == "inconclusive", first.reason
    entry = verify(world, tmp_path, store, entry, load=load)
    assert entry.status == "rejected" and entry.regeneration.outcome == "rejected", entry.reason
    assert "its recorded settings cannot be used (made by a function" in entry.reason
    assert "regenerated with diffusers' defaults for that repo" in entry.reason


def test_a_private_model_is_verified_with_the_mark_saying_so(world, tmp_path):
    """Its commit is recorded, but the repo is not public (the Hub does not show it to anyone): not loaded,
    verified by the spot check, and marked."""
    unknown = tiny_spec("private-org/checkpoint", "c" * 40)
    honest_split(world["images"] / "org" / "private", world["prompts"], unknown, load_tiny(world["spec"]))
    loads: list = []
    entry = submit_and_verify(world, tmp_path, "private", load=loads.append)
    assert entry.status == "verified" and loads == []
    assert entry.regeneration.outcome == "not_reproduced" and entry.regeneration.checked == 0
    assert entry.regeneration.reason == (
        f"{NOT_REPRODUCED}: private-org/checkpoint is not a public model on the Hub (it does not exist, or it is "
        "private)"
    )
    assert entry.regeneration.model_id == "private-org/checkpoint"  # the record names the model it could not load


def test_a_closed_model_made_by_a_function_is_not_regenerated(world, tmp_path):
    from generation.runner import generate_with

    def api_model(prompts, seeds):  # a closed model behind an API: only its images come back
        generated = load_tiny(world["spec"])(prompts, seeds)
        return [g.image for g in generated]

    folder = world["images"] / "org" / "closed"
    generate_with(api_model, key=world["spec"].key, out=folder, prompts=world["prompts"], progress=False)
    loads: list = []
    entry = submit_and_verify(world, tmp_path, "closed", load=loads.append)
    assert entry.status == "verified" and loads == []  # nothing was loaded
    assert entry.regeneration.outcome == "not_reproduced"
    assert "made by a function (`generate_with`)" in entry.regeneration.reason
    assert "tiny_model names no model on the Hub" in entry.regeneration.reason


def counting_loader(calls: list[int], stop_at: int | None):
    def load(spec):
        generator = load_tiny(spec)

        def counted(prompts, seeds):
            calls.append(len(prompts))
            if len(calls) == stop_at:
                raise KeyboardInterrupt  # the job is stopped mid-run
            return generator(prompts, seeds)

        counted.params = generator.params  # type: ignore[attr-defined]
        return counted

    return load


def test_an_interrupted_check_is_resumed_without_regenerating_what_it_kept(world, tmp_path):
    store, entry = stored(world, tmp_path, "honest")
    calls: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        verify(world, tmp_path, store, entry, load=counting_loader(calls, 3))
    stuck = store.get_entry(entry.submission_id)
    assert stuck.status == "pending" and stuck.reason.startswith("regeneration check running since")
    calls.clear()
    said: list[str] = []
    done = verify(world, tmp_path, store, entry, load=counting_loader(calls, None), said=said)
    assert done.status == "verified" and done.regeneration.checked == 40
    assert sum(calls) == 32  # the two batches of 4 compared before the stop are read back
    assert f"{entry.submission_id[:8]}: 8 compared images read back" in " ".join(said)


def test_a_split_plans_job_keeps_its_pairs_in_the_entry_and_the_next_job_goes_on(world, tmp_path):
    """A job on another machine has none of the first job's files: only what the entry keeps."""
    store, entry = stored(world, tmp_path, "honest")
    ticks = iter([0.0] * 5)  # the clock passes the deadline at the sixth row: one batch of 4 is compared

    def clock() -> float:
        return next(ticks, 100.0)

    calls: list[int] = []
    part = verify(world, tmp_path, store, entry, load=counting_loader(calls, None), deadline=50.0, clock=clock)
    check = part.regeneration
    assert part.status == "pending" and check.outcome == "partial" and check.checked == 4, part.reason
    assert "4 of 40 images compared so far" in part.reason and "the next one goes on" in part.reason
    calls.clear()
    done = verify(world, tmp_path / "another machine", store, entry, load=counting_loader(calls, None))
    assert done.status == "verified" and done.regeneration.checked == 40 and sum(calls) == 36


def test_images_that_cannot_be_read_leave_the_check_for_the_next_run(world, tmp_path):
    store, entry = stored(world, tmp_path, "honest")
    store.update_entry(entry.submission_id, None, images_repo="org/gone")  # the repo was deleted meanwhile
    waits = verify(world, tmp_path, store, entry)
    assert waits.status == "pending" and waits.regeneration is None and waits.run is None
    assert waits.reason.startswith("spot check waits (attempt 1): images not reachable")
