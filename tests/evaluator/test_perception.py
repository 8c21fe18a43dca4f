"""Perception mechanics with tiny random models: class mapping and filtering, batching, laziness, offline errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from dataset_builder.vocabulary import CATEGORY_VOCABULARY, OBJECT_CLASSES
from evaluator.config import PRESETS
from evaluator.models.attributes import attribute_texts, masked_crop
from evaluator.models.detector import COCO_TO_BENCHMARK_NAME, Detector, benchmark_class_ids, select_class_detections
from evaluator.perception import ModelPerception, box_mask, load_hf
from negt2ibench.core.errors import MissingWeightsError, UserError
from negt2ibench.core.launch import select_device
from tests.helpers.perception_helpers import VISIBLE_CLASSES, make_prompt, random_image, tiny_models, tiny_perception

# -- class mapping ---------------------------------------------------------------------------


def test_every_benchmark_class_maps_to_a_distinct_coco_id():
    from rfdetr.assets.coco_classes import COCO_CLASSES

    ids = benchmark_class_ids()
    assert set(ids) == set(OBJECT_CLASSES) and len(ids) == 79
    assert len(set(ids.values())) == 79
    for name, class_id in ids.items():
        coco_name = COCO_CLASSES[class_id]
        assert COCO_TO_BENCHMARK_NAME.get(coco_name, coco_name) == name
    assert COCO_CLASSES[ids["computer mouse"]] == "mouse"
    assert COCO_CLASSES[ids["tv remote"]] == "remote"
    assert COCO_CLASSES[ids["computer keyboard"]] == "keyboard"
    assert "person" not in ids


def test_mapping_reports_a_class_missing_from_the_detector():
    with pytest.raises(ValueError, match="tv remote"):
        benchmark_class_ids({1: "person", 2: "bicycle"})


# -- selection (pure) -------------------------------------------------------------------------


def test_selection_keeps_wanted_classes_above_threshold_and_caps_them():
    probabilities = np.zeros((10, 5))
    probabilities[:, 1] = np.linspace(0.9, 0.5, 10)  # 10 queries of class 1
    probabilities[0, 2] = 0.95  # unwanted class, highest score
    probabilities[3, 3] = 0.04  # wanted, just above threshold
    probabilities[4, 3] = 0.02  # wanted, below threshold
    picked = select_class_detections(probabilities, {"a": 1, "c": 3}, num_select=300, threshold=0.03, per_class_cap=4)
    assert set(picked) == {"a", "c"}
    assert [query for query, _ in picked["a"]] == [0, 1, 2, 3]
    assert [score for _, score in picked["a"]] == sorted((score for _, score in picked["a"]), reverse=True)
    assert picked["c"] == [(3, pytest.approx(0.04))]


def test_selection_is_limited_to_the_top_query_class_pairs_like_rfdetr():
    probabilities = np.zeros((4, 3))
    probabilities[:, 0] = [0.9, 0.8, 0.7, 0.6]
    probabilities[0, 2] = 0.5
    picked = select_class_detections(probabilities, {"x": 2}, num_select=4, threshold=0.03, per_class_cap=16)
    assert picked["x"] == []  # the pair (0, 2) ranks fifth: outside the top 4
    picked = select_class_detections(probabilities, {"x": 2}, num_select=5, threshold=0.03, per_class_cap=16)
    assert picked["x"] == [(0, pytest.approx(0.5))]


# -- the detector on a tiny random RF-DETR ----------------------------------------------------


def _detector(cap: int = 16, threshold: float = 0.03) -> Detector:
    detector, *_ = tiny_models()
    return Detector(detector, presence_threshold=threshold, per_class_cap=cap, device=torch.device("cpu"))


def _of_class(detections, name):
    return detections[detections["class_name"] == name]


@pytest.mark.slow
def test_detector_returns_only_prompt_classes_capped_and_in_bounds():
    images = [random_image(1, (90, 70)), random_image(2, (64, 120))]
    wanted = [["cup", "dog", "bicycle"], ["bus", "car"]]
    detector = _detector(cap=3)
    results = detector.detect(images, wanted, with_masks=True)
    ids = benchmark_class_ids()
    seen_any = False
    for image, names, found in zip(images, wanted, results, strict=True):
        assert set(found["class_name"]) <= set(names)
        assert [ids[name] for name in found["class_name"]] == list(found.class_id)
        order = [names.index(name) for name in found["class_name"]]
        assert order == sorted(order)  # class by class, in the prompt's order
        for name in names:
            rows = _of_class(found, name)
            assert len(rows) <= 3 and all(score >= 0.03 for score in rows.confidence)
            assert list(rows.confidence) == sorted(rows.confidence, reverse=True)
            for x0, y0, x1, y1 in rows.xyxy:
                assert 0 <= x0 <= x1 <= image.width and 0 <= y0 <= y1 <= image.height
            if len(rows):
                seen_any = True
                masks = detector.masks(rows[:1], image.width, image.height)
                assert masks.shape == (1, image.height, image.width) and masks.dtype == bool
    assert seen_any
    assert len(_of_class(results[0], "bicycle")) == 0  # the tiny detector never sees bicycles


@pytest.mark.slow
def test_detections_equal_rfdetr_predict_filtered_to_the_prompt_classes():
    detector, *_ = tiny_models()
    images = [random_image(1, (90, 70)), random_image(2, (64, 120))]
    names = ["cup", "dog", "bus"]
    ours = _detector(cap=300)
    mine = ours.detect(images, [names] * 2, with_masks=True)
    reference = detector.predict(images, threshold=0.03)
    ids = benchmark_class_ids()
    compared = 0
    for image, found, theirs in zip(images, mine, reference, strict=True):
        for name in names:
            rows = _of_class(found, name)
            selected = theirs.class_id == ids[name]
            assert list(rows.confidence) == pytest.approx(sorted(theirs.confidence[selected], reverse=True), abs=1e-5)
            if selected.any():
                top = int(np.argmax(np.where(selected, theirs.confidence, -1.0)))
                assert np.allclose(rows.xyxy[0], theirs.xyxy[top], atol=1e-2)
                assert np.array_equal(ours.masks(rows[:1], image.width, image.height)[0], theirs.mask[top])
                compared += 1
    assert compared >= 2


@pytest.mark.slow
def test_detector_cap_and_threshold_apply():
    image = [random_image(3)]
    uncapped = _detector(cap=100).detect(image, [list(VISIBLE_CLASSES)], with_masks=False)[0]
    capped = _detector(cap=2).detect(image, [list(VISIBLE_CLASSES)], with_masks=False)[0]
    assert max(len(_of_class(uncapped, name)) for name in VISIBLE_CLASSES) > 2
    for name in VISIBLE_CLASSES:
        assert list(_of_class(capped, name).confidence) == list(_of_class(uncapped, name).confidence[:2])
    strict = _detector(threshold=0.999).detect(image, [list(VISIBLE_CLASSES)], with_masks=False)[0]
    assert len(strict) == 0 and strict["class_name"].shape == (0,)


@pytest.mark.slow
def test_masks_need_the_logits_kept_by_detect():
    found = _detector().detect([random_image(3)], [list(VISIBLE_CLASSES)], with_masks=False)[0]
    assert "mask_logits" not in found.data
    with pytest.raises(ValueError, match="with_masks=True"):
        _detector().masks(found, 80, 64)


@pytest.mark.slow
def test_detector_rejects_a_non_benchmark_class():
    with pytest.raises(ValueError, match="not a benchmark class"):
        _detector().detect([random_image(0)], [["person"]], with_masks=False)


# -- ModelPerception -------------------------------------------------------------------------

PROMPTS = [
    make_prompt("color", ["tv remote", "cup"]),
    make_prompt("depth", ["dog", "cat"]),
    make_prompt("proximity", ["car", "bus"]),
    make_prompt("material", ["bench", "bowl"]),
    make_prompt("comparative", ["sheep", "dog"]),
]
IMAGES = [random_image(10 + i, (96 + 8 * i, 80)) for i in range(len(PROMPTS))]


def _assert_same_observations(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=False):
        assert (a.width, a.height) == (b.width, b.height)
        assert set(a.objects) == set(b.objects)
        for name in a.objects:
            x, y = a.objects[name], b.objects[name]
            assert (x.present, x.count) == (y.present, y.count)
            assert x.confidence == pytest.approx(y.confidence, abs=1e-5)
            if x.present:
                assert np.allclose(x.box, y.box, atol=1e-3)
                assert np.mean(x.mask != y.mask) < 1e-3
            if x.value_scores is not None:
                assert y.value_scores is not None
                for value in x.value_scores:
                    assert x.value_scores[value] == pytest.approx(y.value_scores[value], abs=1e-3)
        assert (a.disparity is None) == (b.disparity is None)
        if a.disparity is not None:
            assert np.allclose(a.disparity, b.disparity, atol=1e-4)


@pytest.mark.slow
def test_observations_cover_each_prompt_object_with_the_right_extras():
    observations = tiny_perception().observe(IMAGES, PROMPTS)
    assert len(observations) == len(PROMPTS)
    present = 0
    for image, prompt, observation in zip(IMAGES, PROMPTS, observations, strict=False):
        assert (observation.width, observation.height) == image.size
        assert list(observation.objects) == prompt.objects
        for obj in observation.objects.values():
            if obj.present:
                present += 1
                assert obj.mask.shape == (image.height, image.width) and obj.mask.any()
                assert 0.03 <= obj.confidence <= 1 and obj.count <= 16
                if prompt.kind == "attribute":
                    assert set(obj.value_scores) == set(CATEGORY_VOCABULARY[prompt.category])
                    assert all(-100 <= score <= 100 for score in obj.value_scores.values())
                else:
                    assert obj.value_scores is None
            else:
                assert obj.mask is None and obj.box is None and obj.confidence == 0
        if prompt.category == "depth":
            assert observation.disparity.shape == (image.height, image.width)
        else:
            assert observation.disparity is None
    assert present >= 4


@pytest.mark.slow
def test_batched_observations_equal_unbatched_ones():
    batched = tiny_perception(batch_size=len(PROMPTS)).observe(IMAGES, PROMPTS)
    one_by_one = tiny_perception(batch_size=1).observe(IMAGES, PROMPTS)
    _assert_same_observations(batched, one_by_one)


@pytest.mark.slow
def test_no_sam_preset_uses_rfdetr_masks_without_loading_sam():
    detector, _, siglip, depth = tiny_models()
    perception = ModelPerception.from_models(PRESETS["no_sam"], detector=detector, siglip=siglip, depth=depth)
    observations = perception.observe(IMAGES[:3], PROMPTS[:3])
    assert perception._segmenter is None  # never loaded
    masks = [obj.mask for obs in observations for obj in obs.objects.values() if obj.present]
    assert masks and all(mask.dtype == bool and mask.any() for mask in masks)


@pytest.mark.slow
def test_models_a_prompt_does_not_need_are_not_loaded(monkeypatch, tmp_path):
    detector, sam, _, _ = tiny_models()
    perception = ModelPerception.from_models(PRESETS["current"], detector=detector, sam=sam)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    observations = perception.observe([IMAGES[2]], [PROMPTS[2]])  # proximity: no SigLIP, no depth
    assert perception._attributes is None and perception._depth is None
    assert observations[0].disparity is None
    with pytest.raises(MissingWeightsError, match="siglip2"):  # an attribute prompt would load SigLIP: offline
        perception.observe([IMAGES[0]], [PROMPTS[0]])


def test_missing_detector_weights_offline_name_the_model_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("RF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    perception = ModelPerception(PRESETS["current"], device="cpu")
    with pytest.raises(MissingWeightsError) as caught:
        perception.observe([IMAGES[0]], [PROMPTS[0]])
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert "RFDETRSegXLarge" in message and "negt2ibench download-models" in message and "\n" not in message


def test_missing_hub_weights_offline_raise_missing_weights(tmp_path):
    from transformers import AutoImageProcessor, DepthAnythingForDepthEstimation

    with pytest.raises(MissingWeightsError, match="Depth-Anything-V2-Large-hf"):
        load_hf(
            DepthAnythingForDepthEstimation,
            AutoImageProcessor,
            "depth-anything/Depth-Anything-V2-Large-hf",
            dtype=torch.float32,
            weights_dir=tmp_path,
        )


def test_attribute_text_embeddings_are_computed_once(monkeypatch):
    _, _, siglip, _ = tiny_models()
    from evaluator.models.attributes import AttributeScorer

    scorer = AttributeScorer(*siglip, device=torch.device("cpu"))
    calls = []
    original = scorer.model.get_text_features

    def counting(**kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return original(**kwargs)

    monkeypatch.setattr(scorer.model, "get_text_features", counting)  # the model is shared by other tests
    crops = [random_image(1, (40, 40)), random_image(2, (40, 40))]
    first = scorer.score(crops, [("color", "cup"), ("color", "cup")], PRESETS["current"])
    second = scorer.score(crops[:1], [("color", "cup")], PRESETS["current"])
    assert calls == [
        len(set(s for texts in attribute_texts("color", "cup", PRESETS["current"]).values() for s in texts))
    ]
    assert first[0] == pytest.approx(second[0], abs=1e-4)


def test_attribute_texts_use_every_value_and_template():
    config = PRESETS["current"]
    color = attribute_texts("color", "tv remote", config)
    assert list(color) == list(CATEGORY_VOCABULARY["color"])
    assert color["red"] == [
        "a photo of a red tv remote",
        "a photo of a red-colored tv remote",
        "a photo of a red object",
    ]
    material = attribute_texts("material", "bench", config)
    assert material["wooden"][1] == "a photo of a bench made of wood"
    with pytest.raises(ValueError):
        attribute_texts("depth", "bench", config)


def test_masked_crop_cuts_to_the_mask_box_and_grays_the_rest():
    pixels = np.full((50, 60, 3), 10, dtype=np.uint8)
    mask = np.zeros((50, 60), dtype=bool)
    mask[10:20, 30:45] = True
    mask[10, 30] = False
    crop = np.asarray(masked_crop(Image.fromarray(pixels), mask, gray=153))
    assert crop.shape == (10, 15, 3)
    assert tuple(crop[0, 0]) == (153, 153, 153) and tuple(crop[5, 5]) == (10, 10, 10)


def test_box_mask_is_clamped_and_never_empty():
    mask = box_mask((-5.0, 2.2, 10.0, 2.4), width=8, height=6)
    assert mask.shape == (6, 8) and mask.any() and mask[2, 0] and not mask[4, 0]


def test_device_selection(monkeypatch):
    assert select_device("cpu") == torch.device("cpu")
    with pytest.raises(UserError, match="unknown device"):
        select_device("tpu")
    # `auto` prefers cuda, then mps, then cpu: each machine is simulated.
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    for cuda, mps, expected in [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")]:
        monkeypatch.setattr(torch.cuda, "is_available", lambda cuda=cuda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda mps=mps: mps)
        assert select_device("auto") == torch.device(expected)
    with pytest.raises(UserError, match="no CUDA"):
        select_device("cuda")


@pytest.mark.slow
def test_corrupt_detector_weights_are_a_clear_user_error(monkeypatch, tmp_path):
    (tmp_path / "rf-detr-seg-xlarge.pt").write_bytes(b"not a checkpoint")
    monkeypatch.setenv("RF_HOME", str(tmp_path))
    from evaluator.perception import load_rfdetr

    with pytest.raises(UserError, match="could not be loaded") as caught:
        load_rfdetr(PRESETS["current"])
    assert not isinstance(caught.value, MissingWeightsError)


class _EmptySegmenter:
    """A segmenter double whose every mask comes back empty (as SAM does on some boxes); it makes no
    inputs of its own (`processor` None), so the loop passes `pixel_values` of None."""

    processor = None

    def segment_arrays(self, images, boxes, *, pixel_values=None):
        masks = [
            np.zeros((len(image_boxes), image.height, image.width), bool)
            for image, image_boxes in zip(images, boxes, strict=True)
        ]
        return masks, [torch.from_numpy(mask) for mask in masks]


@pytest.mark.slow
def test_an_empty_sam_mask_stays_empty_and_attributes_use_the_box():
    from evaluator.verdict import decide_statements

    detector, _, siglip, depth = tiny_models()
    perception = ModelPerception.from_models(PRESETS["current"], detector=detector, siglip=siglip, depth=depth)
    perception._segmenter = _EmptySegmenter()
    color = make_prompt("color", ["cup"])
    near = make_prompt("proximity", ["cat", "dog"], polarity="negated")
    image = random_image(5)
    observations = perception.observe([image, image], [color, near])
    cup = observations[0].objects["cup"]
    assert cup.present and not cup.mask.any() and set(cup.value_scores) == set(CATEGORY_VOCABULARY["color"])
    box_crop_scores = perception.attributes.score(
        [masked_crop(image, box_mask(cup.box, image.width, image.height), 153)], [("color", "cup")], PRESETS["current"]
    )[0]
    assert cup.value_scores == pytest.approx(box_crop_scores)  # scored on the box crop
    record = decide_statements(near, observations[1], model_key="toy", sample_index=0)
    present = [o.present for o in record.objects]
    assert present == [True, True]  # the tiny detector sees cats and dogs in this image
    assert [o.mask_empty for o in record.objects] == [True, True]
    statement = record.statements[0]
    assert (statement.satisfied, statement.dead_zone_pass, statement.observed) == (True, True, [])
