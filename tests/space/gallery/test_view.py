"""The Gallery's pure views: rows, filters, pages, captions, and drawing a record (hostile ones too)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from space.gallery import view
from tests.helpers.gallery_helpers import some_prompts, varied_record, varied_results
from tests.helpers.space_helpers import result_line


@pytest.fixture(scope="module")
def corpus():
    prompts = load_prompts(None)
    return PromptIndex(prompts), some_prompts(prompts, per_setting=1)


def test_rows_say_verdict_and_causes_once_each_in_the_causes_order(corpus):
    index, prompts = corpus
    prompt = index["directional_pos1_neg1_000"]  # a positive and a negated statement
    passing, failing, missing = (varied_record(prompt, s, "m", 0) for s in range(3))
    assert view.gallery_row(passing) == view.GalleryRow("directional_pos1_neg1_000", 0, "pass", ())
    assert view.gallery_row(failing).causes == ("forbidden_rendered", "dead_zone")  # CAUSES order, not statement order
    assert view.gallery_row(missing).causes == ("subject_missing",)
    assert view.gallery_row(varied_record(prompt, 3, "m", 1)).verdict == "error"


def test_filters_keep_exactly_the_matching_rows(corpus):
    index, prompts = corpus
    rows = [view.gallery_row(r) for r in varied_results(prompts, "m")]
    depth = view.matching_rows(rows, index, view.GalleryFilter(category="depth", verdict="fail"))
    assert depth and {index[r.prompt_id].category for r in depth} == {"depth"}
    assert {r.verdict for r in depth} == {"fail"}
    # 1:0, 2:0 and 2:1 prompts have positive relations that fail as dead zones in sample 1
    dead = view.matching_rows(rows, index, view.GalleryFilter(cause="dead_zone", load=2))
    assert {index[r.prompt_id].setting for r in dead} == {"pos2_neg0", "pos1_neg1"}
    assert all("dead_zone" in r.causes and r.sample_index == 1 for r in dead)
    unknown = view.GalleryRow("nope_pos1_neg0_000", 0, "pass", ())
    assert view.matching_rows([unknown, *rows], index, view.GalleryFilter()) == rows  # an unknown prompt is left out


@pytest.mark.parametrize(
    "wanted, problem",
    [
        (view.GalleryFilter(), ""),
        (view.GalleryFilter(category="colour"), "unknown category 'colour'"),
        (view.GalleryFilter(cause="<b>x</b>"), "unknown cause '<b>x</b>'"),
        (view.GalleryFilter(load=5), "unknown load '5'"),
        (view.GalleryFilter(load=2, verdict="fail", setting="pos0_neg2"), ""),
    ],
)
def test_filter_values_are_checked(wanted, problem):
    assert wanted.problem().startswith(problem) if problem else wanted.problem() == ""


@pytest.mark.parametrize(
    "number, expected",
    [(1, 1), (2, 2), (3, 3), (4, 3), (0, 1), (-5, 1), (None, 1), (math.nan, 1), (math.inf, 1), ("2", 2), ("x", 1)],
)
def test_pages_are_clamped(number, expected):
    rows = [view.GalleryRow(f"p{i}", 0, "pass", ()) for i in range(50)]  # 24 + 24 + 2
    page = view.page_of(rows, number)
    assert (page.number, page.pages, page.total) == (expected, 3, 50)
    assert len(page.rows) == (2 if expected == 3 else 24) and page.first == (expected - 1) * 24 + 1
    assert view.page_of([], 7) == view.Page(1, 1, 0, ())


def test_captions():
    row = view.GalleryRow("color_pos0_neg1_000", 2, "fail", ("forbidden_rendered",))
    assert view.caption(row) == "FAIL: forbidden_rendered · color_pos0_neg1_000 #2"
    assert view.caption(row, "offline", model="M") == "FAIL: forbidden_rendered · M · #2 · image unavailable: offline"
    assert view.caption(view.GalleryRow("p", 0, "pass", ())) == "PASS · p #0"


def test_a_record_is_drawn_with_its_boxes_and_banner_shrunk_to_a_thumbnail(corpus):
    index, _ = corpus
    prompt = index["directional_pos1_neg0_000"]
    line = result_line(prompt, 0, "m", passed=True)
    line["objects"][0]["box"] = [100.0, 200.0, 500.0, 600.0]
    record = ResultRecord.model_validate(line)
    image = Image.new("RGB", (1024, 768), (250, 250, 250))
    thumb = view.drawn(image, record, view.THUMB_SIDE)
    assert thumb.size == (320, 240)
    pixels = np.asarray(thumb)
    # the box, scaled by 320/1024, is drawn around (31, 62)-(156, 187); its inside stays white
    assert (pixels[100, 30:34] != 250).any(axis=-1).any() and (pixels[120, 90] == 250).all()
    assert (pixels[16, 40:60] != 250).any()  # the PASS banner
    full = view.drawn(image, record)
    assert full.size == (1024, 768)


@pytest.mark.parametrize(
    "box",
    [
        [math.nan, 0.0, 10.0, 10.0],
        [0.0, 0.0, math.inf, 10.0],
        [1e308, -1e308, 1e308, 1e308],
        [50.0, 50.0, 10.0, 10.0],  # corners swapped
        [1.0, 2.0],  # not four numbers
    ],
)
def test_a_hostile_box_never_breaks_the_drawing(corpus, box):
    index, _ = corpus
    prompt = index["color_pos1_neg0_000"]
    line = result_line(prompt, 0, "m", passed=True)
    line["objects"][0]["box"] = box
    line["objects"][0]["name"] = "x" * 5000  # a name from a submitted file, drawn clipped
    record = ResultRecord.model_validate(line)
    drawn = view.drawn(Image.new("RGB", (64, 64), "white"), record)
    assert drawn.size == (64, 64)
    observation = view.record_observation(record, 64, 64)
    [obj] = observation.objects.values()
    assert obj.box is None or all(0 <= v <= 63 for v in obj.box)
    assert len(obj.name) < 100


@pytest.mark.parametrize("side", [200, 320, 512])
def test_placeholder_says_why_inside_its_square(side):
    reason = "images not reachable: OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/datasets/x " * 3
    image = view.placeholder(reason, side=side)
    pixels = np.asarray(image)
    assert image.size == (side, side) and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 2  # text on grey
    assert (pixels[:, -side // 20 :] == pixels[0, -1]).all()  # nothing runs off the right edge
