"""The pure views the Gallery and Compare tabs share: rows, captions, and drawing a record (hostile ones too)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from space.verified_images import verified_views
from tests.helpers.gallery_helpers import some_prompts, varied_record
from tests.helpers.space_helpers import result_line


@pytest.fixture(scope="module")
def corpus():
    prompts = load_prompts(None)
    return PromptIndex(prompts), some_prompts(prompts, per_setting=1)


def test_rows_say_verdict_and_causes_once_each_in_the_causes_order(corpus):
    index, prompts = corpus
    prompt = index["directional_pos1_neg1_000"]  # a positive and a negated statement
    passing, failing, missing = (varied_record(prompt, s, "m", 0) for s in range(3))
    assert verified_views.gallery_row(passing) == verified_views.GalleryRow("directional_pos1_neg1_000", 0, "pass", ())
    assert verified_views.gallery_row(failing).causes == (
        "forbidden_rendered",
        "dead_zone",
    )  # CAUSES order, not statement order
    assert verified_views.gallery_row(missing).causes == ("subject_missing",)
    assert verified_views.gallery_row(varied_record(prompt, 3, "m", 1)).verdict == "error"


def test_captions():
    row = verified_views.GalleryRow("color_pos0_neg1_000", 2, "fail", ("forbidden_rendered",))
    assert verified_views.caption(row) == "FAIL: forbidden_rendered · color_pos0_neg1_000 #2"
    assert (
        verified_views.caption(row, "offline", model="M")
        == "FAIL: forbidden_rendered · M · #2 · image unavailable: offline"
    )
    assert verified_views.caption(verified_views.GalleryRow("p", 0, "pass", ())) == "PASS · p #0"


def test_a_record_is_drawn_with_its_boxes_and_banner_shrunk_to_a_thumbnail(corpus):
    index, _ = corpus
    prompt = index["directional_pos1_neg0_000"]
    line = result_line(prompt, 0, "m", passed=True)
    line["objects"][0]["box"] = [100.0, 200.0, 500.0, 600.0]
    record = ResultRecord.model_validate(line)
    image = Image.new("RGB", (1024, 768), (250, 250, 250))
    thumb = verified_views.drawn(image, record, verified_views.THUMB_SIDE)
    assert thumb.size == (320, 240)
    pixels = np.asarray(thumb)
    # the box, scaled by 320/1024, is drawn around (31, 62)-(156, 187); its inside stays white
    assert (pixels[100, 30:34] != 250).any(axis=-1).any() and (pixels[120, 90] == 250).all()
    assert (pixels[16, 40:60] != 250).any()  # the PASS banner
    full = verified_views.drawn(image, record)
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
    drawn = verified_views.drawn(Image.new("RGB", (64, 64), "white"), record)
    assert drawn.size == (64, 64)
    observation = verified_views.record_observation(record, 64, 64)
    [obj] = observation.objects.values()
    assert obj.box is None or all(0 <= v <= 63 for v in obj.box)
    assert len(obj.name) < 100


@pytest.mark.parametrize("side", [200, 320, 512])
def test_placeholder_says_why_inside_its_square(side):
    reason = "images not reachable: OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/datasets/x " * 3
    image = verified_views.placeholder(reason, side=side)
    pixels = np.asarray(image)
    assert image.size == (side, side) and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 2  # text on grey
    assert (pixels[:, -side // 20 :] == pixels[0, -1]).all()  # nothing runs off the right edge
