"""`negt2ibench selftest`: real photographs through the real verdict path; random weights must not pass."""

from __future__ import annotations

import numpy as np
import pytest

from dataset_builder.vocabulary import CATEGORY_VOCABULARY
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.selftest import (
    REFERENCE_BOXES,
    box_iou,
    load_photos,
    mask_in_box,
    object_checks,
    spearman,
)
from negt2ibench.cli import main
from tests.helpers.perception_helpers import replace_model_perception, tiny_perception


@pytest.fixture(scope="module")
def photos():
    return load_photos()


def test_the_photographs_come_from_scikit_images_wheel(photos):
    assert (photos.cat.size, photos.cup.size, photos.motorcycle.size) == ((451, 300), (600, 400), (741, 500))
    assert photos.disparity.shape == (500, 741)
    assert 0.8 < np.isfinite(photos.disparity).mean() < 1.0  # the benchmark leaves occluded pixels without a value
    for name, (x0, y0, x1, y1) in REFERENCE_BOXES.items():
        width, height = getattr(photos, name).size
        assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height, name


def test_box_iou_and_mask_measurements():
    assert box_iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert box_iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert box_iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    mask = np.zeros((40, 40), bool)
    mask[10:20, 10:30] = True  # 200 px
    assert mask_in_box(mask, (10, 10, 30, 20), margin=0) == (1.0, 1.0)  # the box itself: fills all of it
    assert mask_in_box(mask, (10, 10, 30, 30), margin=0) == (1.0, 0.5)
    assert mask_in_box(mask, (10, 10, 20, 20), margin=0) == (0.5, 1.0)
    assert mask_in_box(mask, (10, 10, 20, 20), margin=5) == (0.75, 1.0)
    assert mask_in_box(np.zeros((4, 4), bool), (0, 0, 4, 4), margin=0) == (0.0, 0.0)


def test_spearman_ignores_pixels_without_ground_truth():
    truth = np.array([[1.0, 2.0, np.inf], [4.0, np.nan, 6.0]])
    assert spearman(np.exp(truth), truth) == (1.0, 4)  # any increasing function of disparity ranks the same
    assert spearman(-truth, truth) == (-1.0, 4)  # depth instead of disparity: the wrong way round


def _observation(name: str, box, mask, confidence=0.9) -> ImageObservation:
    obj = ObjectObservation(name=name, present=True, confidence=confidence, box=box, mask=mask)
    return ImageObservation(width=mask.shape[1], height=mask.shape[0], objects={name: obj})


def test_object_checks_pass_only_for_a_plausible_detection():
    height, width = 300, 451
    yy, xx = np.mgrid[:height, :width]
    ellipse = ((xx - 200) / 190) ** 2 + ((yy - 150) / 145) ** 2 <= 1
    good = object_checks("cat", _observation("cat", (10.0, 5.0, 390.0, 295.0), ellipse), 0.5)
    assert [check.passed for check in good] == [True, True, True]
    assert good[1].measured.startswith("IoU 0.9")
    boxy = np.zeros((height, width), bool)
    boxy[5:295, 10:390] = True  # SAM gave nothing, the box stood in
    assert [c.passed for c in object_checks("cat", _observation("cat", (10.0, 5.0, 390.0, 295.0), boxy), 0.5)] == [
        True,
        True,
        False,
    ]
    faint = object_checks("cat", _observation("cat", (300.0, 200.0, 450.0, 300.0), ellipse, confidence=0.2), 0.5)
    assert [check.passed for check in faint] == [False, False, False]
    absent = object_checks("cat", ImageObservation(width=width, height=height), 0.5)
    assert [(check.measured, check.passed) for check in absent] == [
        ("not detected", False),
        ("no detection", False),
        ("no detection", False),
    ]


class SeeingPerception:
    """A perception double that sees what the photographs hold: each photo's object in its drawn box,
    an elliptic mask inside it, red the top colour, and the stereo ground truth as disparity."""

    def __init__(self, disparity: np.ndarray):
        self.disparity = np.where(np.isfinite(disparity), disparity, np.nan)

    def observe(self, images, prompts):
        sizes = {(451, 300): "cat", (600, 400): "cup", (741, 500): "motorcycle"}
        observations = []
        for image, prompt in zip(images, prompts, strict=True):
            width, height = image.size
            shown = sizes[image.size]
            objects = {}
            for name in prompt.objects:
                if name != shown:
                    objects[name] = ObjectObservation(name=name, present=False)
                    continue
                x0, y0, x1, y1 = REFERENCE_BOXES[name]
                yy, xx = np.mgrid[:height, :width]
                mask = (
                    ((xx - (x0 + x1) / 2) / ((x1 - x0) / 2)) ** 2 + ((yy - (y0 + y1) / 2) / ((y1 - y0) / 2)) ** 2
                ) <= 1
                scores = None
                if prompt.category == "color":
                    scores = {value: (12.0 if value == "red" else 8.0) for value in CATEGORY_VOCABULARY["color"]}
                box = (float(x0), float(y0), float(x1), float(y1))
                objects[name] = ObjectObservation(name, True, 0.9, box, mask, scores, 1)
            disparity = self.disparity if prompt.category == "depth" else None
            observations.append(ImageObservation(width=width, height=height, objects=objects, disparity=disparity))
        return observations


def _perception_factory(monkeypatch, make):
    def factory(config, device="auto", batch_size=8, dtype=None, weights_dir=None):
        return make(config)

    replace_model_perception(monkeypatch, factory)


def test_selftest_passes_when_the_models_see_what_is_known(photos, monkeypatch, capsys):
    _perception_factory(monkeypatch, lambda config: SeeingPerception(photos.disparity))
    assert main(["selftest", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("selftest: all 13 checks hold")
    assert '"a photo of a non-red motorcycle"  fails: forbidden_rendered' in out
    assert "ρ = 1.00 over" in out


@pytest.mark.slow
def test_selftest_fails_on_random_weights(monkeypatch, capsys):
    _perception_factory(monkeypatch, lambda config: tiny_perception(config, batch_size=1))
    assert main(["selftest", "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    header, rule, *rows = out.split("\n\n")[0].splitlines()
    assert header.split() == ["check", "expected", "measured", "result"] and set(rule) <= {"-", " "}
    assert len(rows) == 13 and all(row.endswith(("ok", "FAIL")) for row in rows)
    assert "motorcycle: detected" in out and "FAIL" in out
    assert "checks FAIL (" in out


def test_selftest_offline_without_weights_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RF_HOME", str(tmp_path / "no_weights"))
    assert main(["selftest", "--device", "cpu", "--weights-dir", str(tmp_path / "none")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: model weights for RFDETRSegXLarge, SAM 2.1, SigLIP 2 and Depth-Anything V2")
    assert f"`negt2ibench download-models --dir {tmp_path / 'none'}`" in captured.err and captured.err.count("\n") == 1
    assert "pass --weights-dir" not in captured.err  # it was passed: the advice is to fill that folder
