"""The regeneration check's policy (`leaderboard.checks.regeneration_policy`): k and m from the error budget with
a per-machine miss rate of 3%, checked exactly against the binomial; the sample's seed in its own domain;
the measure (`own_image`) on real photographs, against every cheat a submitter would use and against drift; the
verdict test at its boundaries; the decision of both sides with the entry's drift; and what an image's row
records of its making (`leaderboard.store.image_sources.GenerationRecord`).

The stated numbers are docs/leaderboard.md's (*The regeneration check*): k = 252, m = 14 for 19,200 images
with 10% not the model's own caught and 3% of honest images missing t, each at 1%; t = 5 (CIEDE2000, the
worst region of 2% of the area at 256 px); the sign test rejects at p <= 1%."""

from __future__ import annotations

import json

import pytest
from PIL import Image
from scipy.stats import binom

from evaluator.results import ObjectResult, ResultRecord, StatementResult
from leaderboard.checks.regeneration_policy import (
    DRIFT_BOUND,
    THRESHOLD,
    RegenerationPlan,
    draw_regeneration_sample,
    entry_drift,
    image_flip,
    own_image,
    regeneration_plan,
    regeneration_seed,
    regeneration_verdict,
    sign_test,
    verdict_flips,
    verdict_moves,
)
from leaderboard.checks.spot_check_policy import sample_seed
from leaderboard.store.image_sources import GenerationRecord
from tests.helpers import image_cheats as cheats

STATED_T = 5.0  # docs/leaderboard.md: "An image is the model's own when ... at most t = 5"


def test_the_plan_meets_both_bounds_at_a_3_percent_miss_rate_and_is_the_smallest_that_does():
    plan = regeneration_plan(19_200)
    assert (plan.sample_size, plan.max_not_own, plan.threshold) == (252, 14, STATED_T)
    # 10% not the model's own, each reaching t by chance at most 1%: each sampled image fails with 0.099;
    # an honest image misses t with probability 0.03 (per pair of machines)
    assert binom.cdf(14, 252, 0.099) <= 0.01 and binom.sf(14, 252, 0.03) <= 0.01
    assert plan.false_accept() == pytest.approx(binom.cdf(14, 252, 0.099)) and plan.false_reject() <= 0.01
    # 251 images: 14 tolerated misses leave a cheat at > 1%, 13 leave an honest file at > 1%
    assert binom.cdf(14, 251, 0.099) > 0.01 and binom.sf(13, 251, 0.03) > 0.01
    assert regeneration_plan(4_800) == plan and regeneration_plan(252) == plan
    small = regeneration_plan(40)  # every image, with the tolerance an honest file needs
    assert (small.sample_size, small.max_not_own) == (40, 4) and binom.sf(4, 40, 0.03) <= 0.01 < binom.sf(3, 40, 0.03)
    with pytest.raises(ValueError):
        regeneration_plan(0)


@pytest.mark.parametrize(
    "rates",
    [
        {"miss": 0.0},  # an honest file never missing: no tolerance to size
        {"miss": 0.099},  # as often as a cheat is caught: no plan tells them apart
        {"share": 1.0, "impostor": 0.0},  # caught = 1: every cheat image fails, a plan of nothing
        {"error": 0.0},
        {"error": 1.0},
        {"error": 1.5},  # the other rates valid: each bound refused on its own
    ],
)
def test_rates_outside_their_stated_ranges_are_refused(rates):
    # the docstring's ranges: 0 < miss < share x (1 - impostor) < 1 and 0 < error < 1
    with pytest.raises(ValueError, match="need 0 < miss < share x"):
        regeneration_plan(19_200, **rates)


def test_correlated_drift_the_old_plan_failed_honest_files_the_new_one_holds_for_every_machine_up_to_3_percent():
    """The earlier plan (k 114, m 4, misses <= 1%) rejected an honest file drifting 2% of its
    images 7.9% of the time, at 3% 25.8%. Misses are independent given the two machines, and P(reject)
    grows with the machines' rate: so the plan holds for any pair of machines up to 3%."""
    old = RegenerationPlan(114, 4)
    assert old.false_reject(0.02) == pytest.approx(0.0794, abs=5e-4)
    assert old.false_reject(0.03) == pytest.approx(0.2579, abs=5e-4)
    plan = regeneration_plan(19_200)
    rates = [0.0, 0.005, 0.01, 0.02, 0.03]
    rejections = [plan.false_reject(rate) for rate in rates]
    assert rejections == sorted(rejections) and rejections[-1] <= 0.01


def test_accepts_and_is_own_at_their_exact_boundaries():
    plan = regeneration_plan(19_200)
    assert plan.accepts(14) and not plan.accepts(15)  # m = 14: at most 14 images not the model's own
    assert plan.is_own(STATED_T) and not plan.is_own(STATED_T + 1e-9)  # t = 5: at most t is the model's own
    assert plan.is_own(0.0)


def test_the_sample_has_its_own_seed_and_draws_without_replacement():
    seed = regeneration_seed(b"secret", "entry", "digest")
    assert seed == regeneration_seed(b"secret", "entry", "digest") != sample_seed(b"secret", "entry", "digest")
    assert seed != regeneration_seed(b"other", "entry", "digest")
    drawn = draw_regeneration_sample(19_200, regeneration_plan(19_200), seed)
    assert len(drawn) == len(set(drawn)) == 252 and drawn == sorted(drawn) and drawn[-1] < 19_200


@pytest.fixture(scope="module")
def photos() -> dict[str, Image.Image]:
    return cheats.photographs()


PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")


def test_the_same_picture_is_the_models_own_at_any_size(photos):
    picture = photos["astronaut"]
    same = own_image(picture, picture.copy())
    assert same.own and same.difference == 0.0 and same.within == 1.0
    at_zero = own_image(picture, picture.copy(), threshold=0.0)  # every region at t exactly: within it, own
    assert at_zero.own and at_zero.within == 1.0
    assert own_image(picture.resize((1024, 1024)), picture).own  # compared at one size


def test_own_image_decides_at_its_threshold_exactly(photos):
    edited = cheats.erase(photos["coffee"], 0.02)
    measured = own_image(edited, photos["coffee"])
    assert own_image(edited, photos["coffee"], threshold=measured.difference).own  # at t: own
    assert not own_image(edited, photos["coffee"], threshold=measured.difference - 1e-9).own  # just above t: not


@pytest.mark.parametrize("name", PHOTOS)
@pytest.mark.parametrize(
    "drift",
    [lambda p: cheats.noisy(p, 1.0), lambda p: cheats.noisy(p, 2.0), cheats.blurred, cheats.reencoded],
    ids=["noise 1/255", "noise 2/255", "blur 0.5 px", "lossless WebP"],
)
def test_hardware_drift_stand_ins_are_the_models_own(photos, name, drift):
    measured = own_image(drift(photos[name]), photos[name])
    assert measured.own, measured
    assert measured.median <= DRIFT_BOUND  # and the image's drift is within the bound


@pytest.mark.parametrize("name", PHOTOS)
@pytest.mark.parametrize("share", [0.02, 0.05, 0.10])
def test_every_cheat_of_an_object_is_not_the_models_own(photos, name, share):
    own, other = photos[name], photos["hubble_deep_field" if name != "rocket" else "retina"]
    for edit in (
        cheats.recolour(own, share),  # at equal lightness: grey SSIM sees nothing
        cheats.paste(own, other, share, seed=3),
        cheats.erase(own, share, "flat"),
        cheats.erase(own, share, "blur"),
    ):
        measured = own_image(edit, own)
        assert not measured.own and measured.difference > STATED_T, measured
        assert measured.median <= DRIFT_BOUND  # the rest of the picture is untouched: no drift


@pytest.mark.parametrize("name", PHOTOS)
def test_another_picture_nudged_to_the_own_layout_is_not_the_models_own(photos, name):
    other = photos["motorcycle_left" if name != "coffee" else "chelsea"]
    measured = own_image(cheats.nudge(other, photos[name]), photos[name])
    assert not measured.own and measured.median > DRIFT_BOUND  # the whole picture differs


def test_the_worst_region_is_where_the_edit_is(photos):
    own = photos["astronaut"]
    x, y, width, height = cheats.seeded_region(own, 0.02, seed=5)
    measured = own_image(cheats.paste(own, photos["coffee"], 0.02, seed=5), own)
    left, top, right, bottom = measured.region
    assert left * own.width < x + width and right * own.width > x  # the boxes overlap
    assert top * own.height < y + height and bottom * own.height > y
    assert right - left == pytest.approx(36 / 256)  # a region of 2% of the area: 36 x 36 px at 256


@pytest.mark.parametrize("corner", ["top left", "bottom right"])
def test_an_edit_in_a_corner_is_measured_whole_there(photos, corner):
    # The cheat an edge invites: the object drawn against the image's border. At 256 px the region is
    # 36 x 36 (2% of the area); an edit of exactly that block in a corner is found by the window that
    # covers it whole, its region reaching the image's edge, and its difference is the edit's own.
    from PIL import ImageDraw

    own = photos["chelsea"].convert("RGB").resize((256, 256))
    edited = own.copy()
    start = 0 if corner == "top left" else 256 - 36
    ImageDraw.Draw(edited).rectangle((start, start, start + 35, start + 35), fill=(0, 200, 255))
    measured = own_image(edited, own)
    assert measured.region == pytest.approx((start / 256, start / 256, (start + 36) / 256, (start + 36) / 256))
    import numpy as np
    from skimage.color import deltaE_ciede2000, rgb2lab

    block = (start, start, start + 36, start + 36)
    lab = [rgb2lab(np.asarray(image.crop(block), dtype=np.float64) / 255.0) for image in (edited, own)]
    assert measured.difference == pytest.approx(float(deltaE_ciede2000(*lab).mean()))  # the block's mean, whole


@pytest.mark.parametrize("edge", ["left", "right", "top", "bottom"])
def test_an_edit_along_the_border_is_measured_by_windows_inside_the_image(photos, edge):
    # A strip 3 px wide painted along one border: the worst window is the one inside the image that
    # reaches that border; a window reaching past it (the filter pads with the border's own pixels,
    # the strip again) must never be measured, or the strip would count more than it covers.
    from PIL import ImageDraw

    own = photos["chelsea"].convert("RGB").resize((256, 256))
    edited = own.copy()
    strip = {"left": (0, 0, 2, 255), "right": (253, 0, 255, 255), "top": (0, 0, 255, 2), "bottom": (0, 253, 255, 255)}
    ImageDraw.Draw(edited).rectangle(strip[edge], fill=(0, 255, 0))
    left, top, right, bottom = own_image(edited, own).region
    assert 0.0 <= left < right <= 1.0 and 0.0 <= top < bottom <= 1.0
    assert {"left": left == 0.0, "right": right == 1.0, "top": top == 0.0, "bottom": bottom == 1.0}[edge]


def record(statements: list[bool], present: list[bool], error: str | None = None) -> ResultRecord:
    """A result record with these statements' verdicts and objects' presence."""
    return ResultRecord(
        prompt_id="color_pos1_neg0_000", model_key="m", sample_index=0, passed=all(statements) and not error,
        objects=[ObjectResult(name=f"o{i}", present=p, confidence=0.9) for i, p in enumerate(present)],
        statements=[
            StatementResult(index=i, polarity="positive", satisfied=s, cause=None if s else "wrong_value")
            for i, s in enumerate(statements)
        ],
        evaluator_version="0", config_hash="c", error=error,
    )  # fmt: skip


def test_verdict_moves_count_toward_and_against_the_submission_and_an_image_counts_once():
    passed, failed = record([True, True], [True]), record([False, True], [True])
    assert verdict_moves(passed, failed) == (1, 0) and image_flip(passed, failed) == 1  # submitted passed
    assert verdict_moves(failed, passed) == (0, 1) and image_flip(failed, passed) == -1
    gone = record([False, False], [False])  # the object absent: its presence and both statements move
    assert verdict_moves(passed, gone) == (3, 0) and image_flip(passed, gone) == 1
    mixed = record([False, True], [True]), record([True, False], [True])
    assert verdict_moves(*mixed) == (1, 1) and image_flip(*mixed) == 0  # they cancel
    assert verdict_moves(passed, record([False], [False], error="not scored")) == (0, 0)  # the spot check's
    flips = verdict_flips([passed, failed, passed, passed], [gone, passed, passed, failed])
    assert flips == (2, 1)
    with pytest.raises(ValueError):
        verdict_flips([passed], [])


@pytest.mark.parametrize(
    "favourable, unfavourable, p, rejects",
    [
        (7, 0, 1 / 128, True),  # the smallest rejection: 2^-7 = 0.0078 <= 0.01
        (6, 0, 1 / 64, False),  # 0.0156 > 0.01
        (10, 1, 12 / 2048, True),  # (1 + 11) / 2^11 = 0.00586
        (9, 1, 11 / 1024, False),  # (1 + 10) / 2^10 = 0.01074, just above 1%
        (10, 10, None, False),  # symmetric: what drift does
        (0, 5, 1.0, False),
        (0, 0, 1.0, False),  # nothing moved
    ],
)
def test_the_sign_test_at_its_boundaries(favourable, unfavourable, p, rejects):
    tested = sign_test(favourable, unfavourable)
    assert tested.rejects is rejects
    if p is not None:
        assert tested.p_value == pytest.approx(p, rel=1e-12)


def test_the_sign_test_rejects_at_p_equal_to_its_error():
    assert sign_test(7, 0, error=1 / 128).rejects and not sign_test(7, 0, error=1 / 128 - 1e-12).rejects
    # one image moved, in the submission's favour: p = 1/2, rejected at an error of 1/2 (a single
    # favourable flip is a test of one image, not "nothing moved")
    assert sign_test(1, 0, error=0.5).rejects and not sign_test(0, 1, error=0.5).rejects


@pytest.mark.parametrize(
    "favourable, unfavourable, error",
    [(-1, 0, 0.01), (0, -1, 0.01), (3, 1, 0.0), (3, 1, 1.0), (3, 1, 1.5), (3, 1, -0.01)],
)
def test_the_sign_test_refuses_a_negative_count_and_an_error_outside_0_to_1(favourable, unfavourable, error):
    # the docstring: "a negative count, or `error` outside (0, 1)"; each bound on its own
    with pytest.raises(ValueError, match="need counts >= 0 and 0 < error < 1"):
        sign_test(favourable, unfavourable, error=error)
    assert sign_test(0, 0, error=0.5).p_value == 1.0  # zero counts are counts


def test_the_entry_drift_is_the_median_of_the_agreeing_images():
    assert entry_drift([]) is None
    assert entry_drift([3.0, 1.0, 2.0]) == 2.0 and entry_drift([1.0, 2.0, 3.0, 10.0]) == 2.5


def test_the_decision_of_both_sides_with_the_entrys_drift():
    plan = regeneration_plan(19_200)
    fair, biased = sign_test(3, 3), sign_test(8, 0)
    assert regeneration_verdict(plan, 14, fair, 0.5).outcome == "reproduced"
    assert regeneration_verdict(plan, 15, fair, 0.5).outcome == "rejected"  # the pixel side
    assert regeneration_verdict(plan, 0, biased, 0.5).outcome == "rejected"  # the verdict test alone
    drifting = regeneration_verdict(plan, 15, fair, DRIFT_BOUND + 0.1)
    assert (drifting.outcome, drifting.pixel) == ("inconclusive", "inconclusive")  # this machine's drift: rerun
    assert regeneration_verdict(plan, 15, fair, DRIFT_BOUND).outcome == "rejected"  # at the bound: decides
    assert regeneration_verdict(plan, 15, biased, DRIFT_BOUND + 0.1).outcome == "rejected"  # the test still decides
    # a second machine saw the same excess: it is the images', and the pixel side decides
    assert regeneration_verdict(plan, 15, fair, DRIFT_BOUND + 0.1, inconclusive_before=1).outcome == "rejected"
    assert regeneration_verdict(plan, 3, None, None).outcome == "reproduced"  # no scorer: the pixel side alone


@pytest.mark.parametrize(
    "cells, expected",
    [
        (
            {"seed": 7, "model_id": "a/b", "model_key": "k", "params": json.dumps({"steps": 2})},
            (7, "a/b", {"steps": 2}, ""),
        ),
        ({"seed": True, "params": "not json"}, (None, "", {}, "its params are not JSON")),
        ({"params": "[1, 2]"}, (None, "", {}, "its params are not a JSON object")),
        ({"params": "x" * 70_000}, (None, "", {}, "its params are not JSON")),
        ({}, (None, "", {}, "")),
    ],
)
def test_a_rows_generation_record_is_read_whatever_it_holds(cells, expected):
    record = GenerationRecord.from_cells(cells)
    assert (record.seed, record.model_id, record.params, record.params_problem) == expected


def test_the_threshold_is_the_stated_one():
    assert STATED_T == THRESHOLD
