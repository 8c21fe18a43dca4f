"""The regeneration check (`leaderboard.checks.regeneration_run`) as a step of `verify-job`, on tiny random diffusers
pipelines saved in the Hugging Face cache as pinned Hub repos, on the CPU: an honest entry's images are
the model's own and it is verified; best-of-4 over other seeds and another model's images are rejected,
with the pairs kept for the page; images carrying drift within the calibrated bound pass; a model that
cannot be loaded is verified and ranked with the mark *images not reproduced*, everywhere it shows."""

from __future__ import annotations

import pytest

from leaderboard.checks.regeneration_policy import regeneration_plan
from leaderboard.checks.regeneration_run import NOT_REPRODUCED
from tests.helpers.generation_helpers import tiny_sd_pipeline
from tests.helpers.regen_helpers import (
    COMMIT_A,
    DRIFT_WITHIN_BOUND,
    REPO_A,
    DriftedGenerator,
    best_of_four_split,
    honest_split,
    load_tiny,
    other_model_split,
    regen_world,
    stored,
    submit_and_verify,
    tiny_spec,
    verify,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return regen_world(tmp_path_factory.mktemp("regen"))


def test_the_plan_regenerates_every_image_of_a_small_file():
    assert regeneration_plan(40).sample_size == 40 and regeneration_plan(40).max_not_own == 2


def test_an_honest_entry_is_the_models_own_and_is_verified(world, tmp_path):
    said: list[str] = []
    entry = submit_and_verify(world, tmp_path, "honest", said=said)
    assert entry.status == "verified", entry.reason
    check = entry.regeneration
    assert check is not None and check.outcome == "reproduced"
    assert (check.checked, check.not_own, check.allowed) == (40, 0, 2)
    assert check.model_id == REPO_A and check.commit == COMMIT_A
    assert all(pair.similarity is not None and pair.similarity > 0.99 for pair in check.pairs)  # the same CPU
    assert sum(bool(pair.regenerated_jpeg and pair.submitted_jpeg) for pair in check.pairs) == 8  # shown pairs
    assert said[0].startswith(f"{entry.submission_id[:8]}  honest: plan: ")  # before the first step
    assert "regeneration 40 images x 0.01 s" in said[0] and "model: test-regen/tiny-a@aaaaaaaaaaaa" in said[0]


def test_best_of_four_over_other_seeds_is_rejected_with_the_pairs_kept(world, tmp_path):
    org = world["images"] / "org"
    best_of_four_split(org / "best4", world["prompts"], world["spec"], org / "honest")
    entry = submit_and_verify(world, tmp_path, "best4")
    assert entry.status == "rejected"
    check = entry.regeneration
    assert check is not None and check.outcome == "rejected" and check.not_own > check.allowed == 2
    assert entry.reason.startswith(f"regeneration check: {check.not_own} of {check.checked} sampled images")
    assert "the pairs are on its page" in entry.reason
    shown = [pair for pair in check.pairs if pair.submitted_jpeg]
    assert shown and all(not pair.own and pair.regenerated_jpeg for pair in shown)
    assert all(pair.similarity < 0.5 and "below 0.5" in pair.why for pair in shown)


def test_images_of_another_model_under_its_name_are_rejected(world, tmp_path):
    other_model_split(world["images"] / "org" / "other", world["prompts"], world["spec"], tiny_sd_pipeline(1), COMMIT_A)
    entry = submit_and_verify(world, tmp_path, "other")
    assert entry.status == "rejected" and entry.regeneration.outcome == "rejected"
    # rejected as soon as more than 2 of the 40 are not the model's own: the first batch of 4 settles it
    assert entry.regeneration.checked == 4 and entry.regeneration.not_own == 4


def test_images_with_drift_within_the_calibrated_bound_pass(world, tmp_path):
    drifted = DriftedGenerator(load_tiny(world["spec"]), DRIFT_WITHIN_BOUND)
    honest_split(world["images"] / "org" / "drifted", world["prompts"], world["spec"], drifted)
    entry = submit_and_verify(world, tmp_path, "drifted")
    check = entry.regeneration
    assert entry.status == "verified" and check.outcome == "reproduced" and check.not_own == 0
    similarities = [pair.similarity for pair in check.pairs]
    assert min(similarities) >= 0.5 and max(similarities) < 0.99  # drifted, yet the model's own


def test_a_model_that_cannot_be_loaded_is_verified_with_the_mark(world, tmp_path):
    """A private checkpoint: its commit is recorded, but this machine cannot load it (not in its cache,
    no download): verified by the spot check, and marked."""
    unknown = tiny_spec("private-org/checkpoint", "c" * 40)
    honest_split(world["images"] / "org" / "private", world["prompts"], unknown, load_tiny(world["spec"]))
    entry = submit_and_verify(world, tmp_path, "private")
    assert entry.status == "verified"
    assert entry.regeneration.outcome == "not_reproduced" and entry.regeneration.checked == 0
    assert entry.regeneration.reason.startswith(f"{NOT_REPRODUCED}: the model could not be loaded")
    assert "private-org/checkpoint" in entry.regeneration.reason
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


def test_an_interrupted_check_is_resumed_without_regenerating_what_it_kept(world, tmp_path):
    store, entry = stored(world, tmp_path, "honest")
    calls: list[int] = []

    def loader(stop_at: int | None):
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

    with pytest.raises(KeyboardInterrupt):
        verify(world, tmp_path, store, entry, load=loader(3))
    stuck = store.get_entry(entry.submission_id)
    assert stuck.status == "pending" and stuck.reason.startswith("regeneration check running since")
    calls.clear()
    said: list[str] = []
    done = verify(world, tmp_path, store, entry, load=loader(None), said=said)
    assert done.status == "verified" and done.regeneration.checked == 40
    assert sum(calls) == 32  # the two batches of 4 compared before the stop are read back
    assert f"{entry.submission_id[:8]}: 8 compared images read from" in " ".join(said)


def test_images_that_cannot_be_read_leave_the_check_for_the_next_run(world, tmp_path):
    store, entry = stored(world, tmp_path, "honest")
    store.update_entry(entry.submission_id, None, images_repo="org/gone")  # the repo was deleted meanwhile
    waits = verify(world, tmp_path, store, entry)
    assert waits.status == "pending" and waits.regeneration is None and waits.run is None
    assert waits.reason.startswith("spot check waits (attempt 1): images not reachable")
