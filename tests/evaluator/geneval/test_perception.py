"""GenEval's perception on tiny random models, offline: Mask2Former read as mmdet 2.x reads its Mask2Former
(instance_postprocess and mask2bbox), CLIP colours as clip_benchmark's zero-shot classifier, the crops
as GenEval's ImageCrops, and both presets' detectors (Mask2Former loaded from a Hub-style folder;
RF-DETR Seg, with its own masks or SAM 2.1's) giving detections the rules can read."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from evaluator.geneval import PRESETS, geneval_verdict
from evaluator.geneval.perception import GenEvalPerception
from evaluator.geneval.prompts import load_geneval_prompts, object_names
from evaluator.models.clip_colors import ColorClassifier, colour_crop
from evaluator.models.mask2former import Mask2FormerDetector, class_names_of, mask_box
from negt2ibench.core.errors import UserError
from tests.helpers.geneval_helpers import coco_labels, save_tiny_models, tiny_clip, tiny_mask2former
from tests.helpers.perception_helpers import random_image, tiny_detector, tiny_sam

PROMPTS = load_geneval_prompts()
CPU = torch.device("cpu")
TINY_SIZES = {"detector_short_edge": 64, "detector_long_edge": 96}


def detector() -> Mask2FormerDetector:
    model, processor = tiny_mask2former()
    return Mask2FormerDetector(model, processor, class_names=object_names(), device=CPU, short_edge=64, long_edge=96)


def test_mask2bbox_is_tight_with_plus_one_and_zeros_when_empty():
    mask = np.zeros((20, 30), dtype=bool)
    mask[4:9, 10:13] = True  # rows 4..8, columns 10..12
    # mmdet's mask2bbox: [x[0], y[0], x[-1] + 1, y[-1] + 1]
    assert mask_box(mask) == (10.0, 4.0, 13.0, 9.0)
    assert mask_box(np.zeros((5, 5), dtype=bool)) == (0.0, 0.0, 0.0, 0.0)
    one = np.zeros((5, 5), dtype=bool)
    one[2, 3] = True  # a single pixel, x 3, y 2: a 1×1 box, not an empty one
    assert mask_box(one) == (3.0, 2.0, 4.0, 3.0)


@pytest.mark.slow
def test_instances_follow_mmdets_instance_postprocess():
    found = detector()
    classes = 80
    logits = torch.full((2, classes + 1), -10.0)
    dog = object_names().index("dog")
    logits[0, dog], logits[0, classes] = 3.0, 1.0  # query 0: dog vs no-object
    logits[1, classes] = 10.0  # query 1: no object
    masks = torch.full((2, 8, 12), -4.0)
    masks[0, 2:5, 3:9] = torch.linspace(0.5, 2.0, 18).reshape(3, 6)
    instances = found._instances(logits, masks, (8, 12), (8, 12), (12, 8), min_score=0.3)
    # softmax without the no-object column (scores[:, :-1]); same sizes everywhere: no resampling.
    probability = torch.softmax(logits[0], dim=-1)[dog]
    inside = torch.sigmoid(masks[0, 2:5, 3:9])
    expected = float(probability * (inside.sum() / (18 + 1e-6)))  # class prob × mean sigmoid in the mask
    assert [(i.name, i.box) for i in instances] == [("dog", (3.0, 2.0, 9.0, 5.0))]
    assert instances[0].score == pytest.approx(expected, rel=1e-6) and instances[0].mask.sum() == 18
    assert found._instances(logits, masks, (8, 12), (8, 12), (12, 8), min_score=0.99) == []


def test_images_of_different_sizes_are_detected_as_when_alone():
    found = detector()
    images = [random_image(1, (80, 64)), random_image(2, (64, 64)), random_image(3, (80, 64))]
    together = found.detect(images, min_score=0.3)
    alone = [found.detect([image], min_score=0.3)[0] for image in images]
    for image, batch, single in zip(images, together, alone, strict=True):
        assert batch and [(i.name, i.box) for i in batch] == [(i.name, i.box) for i in single]
        assert [i.score for i in batch] == pytest.approx([i.score for i in single], abs=1e-5)
        assert all(i.mask.shape == (image.height, image.width) for i in batch)


def test_a_checkpoint_without_coco_labels_is_refused():
    assert class_names_of(coco_labels(), object_names())[65] == "tv remote"  # COCO's "remote", GenEval's name
    with pytest.raises(UserError, match="not COCO's 80 instance classes"):
        class_names_of({0: "wall", 1: "sky"}, object_names())


def test_the_colour_classifier_is_clip_benchmarks_zero_shot_classifier():
    model, tokenizer, processor = tiny_clip()
    classifier = ColorClassifier(model, tokenizer, processor, device=CPU)
    colors, templates = ("red", "blue", "green"), PRESETS["geneval"].color_templates
    weights = classifier.classifier("dog", colors, templates)
    with torch.no_grad():
        for row, color in zip(weights, colors, strict=True):
            texts = [template.format(c=color, classname="dog") for template in templates]
            assert texts[1] == f"a photo of a {color}-colored dog"
            embeddings = [model.get_text_features(**tokenizer([text], return_tensors="pt")) for text in texts]
            embeddings = [getattr(e, "pooler_output", e)[0] for e in embeddings]
            mean = torch.stack([e / e.norm() for e in embeddings]).mean(dim=0)  # normalise, average, normalise
            assert torch.allclose(row, mean / mean.norm(), atol=1e-5)
        crops = [random_image(5, (40, 40)), random_image(6, (50, 30))]
        pixels = processor(images=crops, return_tensors="pt")["pixel_values"]
        features = model.get_image_features(pixel_values=pixels)
        features = getattr(features, "pooler_output", features)
        expected = (100 * torch.nn.functional.normalize(features, dim=-1) @ weights.T).argmax(dim=1)
    assert classifier.classify(crops, "dog", colors, templates) == [colors[int(i)] for i in expected]


def test_crops_are_genevals_image_crops():
    image = Image.new("RGB", (6, 4), (10, 200, 30))
    mask = np.zeros((4, 6), dtype=bool)
    mask[1:3, 2:4] = True
    crop = colour_crop(image, mask, (1, 0, 5, 4), bgcolor="#999", crop=True)
    pixels = np.asarray(crop)
    assert crop.size == (4, 4)  # image.crop(box[:4])
    assert tuple(pixels[1, 1]) == (10, 200, 30) and tuple(pixels[0, 0]) == (153, 153, 153)  # #999 outside the mask
    assert np.asarray(colour_crop(image, mask, (1, 0, 5, 4), bgcolor="original", crop=False)).shape == (4, 6, 3)
    with pytest.raises(ValueError, match="mask of shape"):
        colour_crop(image, mask[:2], (0, 0, 1, 1), bgcolor="#999", crop=True)


def test_the_geneval_preset_loads_mask2former_and_clip_from_hub_style_folders(tmp_path):
    detector_folder, clip_folder = save_tiny_models(tmp_path)
    config = PRESETS["geneval"].with_options({"model": str(detector_folder), "clip_model": str(clip_folder)})
    perception = GenEvalPerception(config.replace(**TINY_SIZES), device="cpu")
    perception.load_all()
    prompt = next(p for p in PROMPTS if p.tag == "colors" and p.metadata["include"][0]["class"] == "dog")
    [found] = perception.observe([random_image(7, (80, 64))], [prompt])
    assert set(found) <= set(object_names()) and "dog" in found
    top = max(found["dog"], key=lambda d: d.score)
    assert top.color in config.colors  # the colour clause's top detection got its colour
    verdict = geneval_verdict(prompt.metadata, found, config)
    assert verdict.reason == "" or verdict.reason.startswith("expected")


@pytest.mark.parametrize("preset", ["geneval_rfdetr", "geneval_rfdetr_sam"])
def test_the_rfdetr_presets_give_tight_mask_boxes_of_genevals_classes(preset):
    config = PRESETS[preset].replace(detector_resolution=96)
    sam = tiny_sam() if config.use_sam else None
    perception = GenEvalPerception.from_models(config, detector=tiny_detector(), clip=tiny_clip(), sam=sam)
    image = random_image(3, (80, 64))
    prompt = next(p for p in PROMPTS if p.tag == "two_object")
    [found] = perception.observe([image], [prompt])
    assert found and set(found) <= set(object_names())
    instances = perception.instances([image])[0]
    for instance in instances:
        assert instance.score > 0.3 and instance.mask.shape == (64, 80)
        if instance.mask.any():
            assert instance.box == mask_box(instance.mask)
    assert geneval_verdict(prompt.metadata, found, config).reason.startswith("expected")
