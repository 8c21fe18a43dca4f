"""Mask R-CNN (presets c1-c4), tested offline on torchvision's architecture with random weights.

Random weights make detections arbitrary; these tests check the contract shared with RF-DETR's
`Detector` (classes, cap, threshold, order, boxes, masks only for the rows asked) and loading.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dataset_builder.vocabulary import OBJECT_CLASSES
from evaluator.config import PRESETS
from evaluator.models.detector import benchmark_class_ids
from evaluator.models.maskrcnn import (
    MaskRCNNDetector,
    build_maskrcnn,
    coco_class_ids,
    is_maskrcnn,
    load_maskrcnn,
    maskrcnn_weights_path,
)
from evaluator.observation import best_instances
from evaluator.perception import ModelPerception
from negt2ibench.core.errors import MissingWeightsError, UserError
from tests.helpers.perception_helpers import VISIBLE_CLASSES, make_prompt, random_image, tiny_maskrcnn, tiny_models

CPU = torch.device("cpu")


def _detector(cap: int = 16, threshold: float = 0.03) -> MaskRCNNDetector:
    return MaskRCNNDetector(tiny_maskrcnn(), presence_threshold=threshold, per_class_cap=cap, device=CPU)


@pytest.mark.slow
def test_coco_labels_map_to_the_benchmark_names_as_for_rfdetr():
    ids = coco_class_ids()
    assert list(ids) == list(OBJECT_CLASSES)
    assert ids == benchmark_class_ids()  # torchvision's 91 labels are COCO's sparse ids, as RF-DETR's
    assert (ids["computer mouse"], ids["tv remote"], ids["computer keyboard"], ids["bicycle"]) == (74, 75, 76, 2)
    assert "person" not in ids


def test_only_the_c1_to_c4_presets_use_mask_rcnn():
    assert [name for name, config in PRESETS.items() if is_maskrcnn(config)] == ["c1", "c2", "c3", "c4"]


@pytest.mark.slow
def test_detections_keep_prompt_classes_capped_ordered_and_in_bounds():
    images = [random_image(1, (90, 70)), random_image(2, (64, 120))]
    wanted = [["cup", "zebra", "cat"], ["dog"]]
    found = _detector(cap=3).detect(images, wanted, with_masks=False)
    assert len(found) == 2
    for image, names, detections in zip(images, wanted, found, strict=True):
        classes = list(detections.data["class_name"])
        assert set(classes) <= set(names) - {"zebra"}  # zebra is not among the visible classes
        assert classes == sorted(classes, key=names.index)  # class by class, in the order asked
        for name in set(classes):
            scores = detections.confidence[detections.data["class_name"] == name]
            assert 0 < len(scores) <= 3 and np.all(np.diff(scores) <= 0) and scores.min() >= 0.03
        assert np.all(detections.xyxy >= 0)
        assert np.all(detections.xyxy[:, [0, 2]] <= image.width) and np.all(detections.xyxy[:, [1, 3]] <= image.height)
        assert list(detections.class_id) == [coco_class_ids()[n] for n in classes]
        assert "mask_probs" not in detections.data
    assert len(found[0]) >= 1 and len(found[1]) >= 1


def test_a_greyscale_or_rgba_picture_is_detected_as_its_rgb_conversion():
    grey = random_image(5, (80, 60)).convert("L")
    for picture in (grey, grey.convert("RGBA")):
        found, expected = _detector().detect([picture, picture.convert("RGB")], [["cup"], ["cup"]], with_masks=False)
        assert np.array_equal(found.xyxy, expected.xyxy) and np.array_equal(found.confidence, expected.confidence)


@pytest.mark.slow
def test_a_higher_threshold_keeps_fewer_and_an_unknown_class_is_refused():
    image = [random_image(3)]
    low = _detector().detect(image, [list(VISIBLE_CLASSES)], with_masks=False)[0]
    high = _detector(threshold=float(np.median(low.confidence))).detect(
        image, [list(VISIBLE_CLASSES)], with_masks=False
    )[0]
    assert 0 < len(high) < len(low) and high.confidence.min() >= np.median(low.confidence)
    with pytest.raises(ValueError, match="not a benchmark class: person"):
        _detector().detect(image, [["person"]], with_masks=False)


@pytest.mark.slow
def test_masks_only_for_the_rows_asked_at_full_resolution():
    detector = _detector()
    image = random_image(4, (96, 72))
    detections = detector.detect([image], [["cup", "cat"]], with_masks=True)[0]
    assert detections.data["mask_probs"].shape == (len(detections), 28, 28)
    used = best_instances(detections, ["cup", "cat"])
    masks = detector.masks(used, image.width, image.height)
    assert masks.shape == (len(used), 72, 96) and masks.dtype == bool
    x0, y0, x1, y1 = used.xyxy[0]
    outside = np.ones((72, 96), bool)
    outside[max(int(y0) - 2, 0) : int(np.ceil(y1)) + 2, max(int(x0) - 2, 0) : int(np.ceil(x1)) + 2] = False
    assert not masks[0][outside].any()  # pasted into its box
    with pytest.raises(ValueError, match="with_masks=True"):
        detector.masks(detector.detect([image], [["cup"]], with_masks=False)[0], 96, 72)


@pytest.mark.parametrize("preset", ["c2", "c4"])
@pytest.mark.slow
def test_perception_with_mask_rcnn(preset):
    _, sam, siglip, depth = tiny_models()
    config = PRESETS[preset]
    perception = ModelPerception.from_models(
        config, detector=tiny_maskrcnn(), sam=sam if config.use_sam else None, siglip=siglip, depth=depth
    )
    assert isinstance(perception.detector, MaskRCNNDetector)
    prompts = [make_prompt("proximity", ["cup", "cat"]), make_prompt("color", ["dog"])]
    observations = perception.observe([random_image(5), random_image(6)], prompts)
    assert (perception._segmenter is None) is (preset == "c4")  # c4: Mask R-CNN's own masks, SAM never loaded
    present = [o for obs in observations for o in obs.objects.values() if o.present]
    assert present
    for obs, prompt in zip(observations, prompts, strict=True):
        for obj in obs.objects.values():
            if obj.present:
                assert obj.mask.shape == (64, 80) and obj.mask.dtype == bool
                assert (obj.value_scores is not None) == (prompt.kind == "attribute")


def test_missing_weights_offline_say_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    path = maskrcnn_weights_path(PRESETS["c2"])
    assert path == tmp_path / "torch_home" / "hub" / "checkpoints" / "maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth"
    with pytest.raises(MissingWeightsError) as caught:
        load_maskrcnn(PRESETS["c2"])
    message = str(caught.value)
    assert caught.value.exit_code == 2 and str(path) in message
    assert "negt2ibench download-models --preset c2" in message and "TORCH_HOME" in message
    with pytest.raises(MissingWeightsError):  # the perception's lazy detector goes the same way
        ModelPerception(PRESETS["c4"], device="cpu").load_all()
    assert not path.exists()


@pytest.mark.slow
def test_weights_in_a_weights_dir_load_offline_and_a_broken_file_is_a_user_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = PRESETS["c3"]
    path = maskrcnn_weights_path(config, tmp_path)
    assert path == tmp_path / "torch" / "hub" / "checkpoints" / "maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth"
    path.parent.mkdir(parents=True)
    torch.manual_seed(1)
    saved = build_maskrcnn(config).state_dict()
    torch.save(saved, path)
    perception = ModelPerception(config, device="cpu", weights_dir=tmp_path)
    detector = perception.detector
    assert isinstance(detector, MaskRCNNDetector)
    assert detector.network.transform.min_size == (800,) and detector.network.transform.max_size == 1333
    loaded = detector.network.state_dict()
    assert all(torch.equal(loaded[key], saved[key]) for key in ("roi_heads.box_predictor.cls_score.bias",))
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="could not be loaded as MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1"):
        load_maskrcnn(config, tmp_path)
