"""The device path on the tiny random models: the records of a frozen run, byte for byte, on the
CPU path, with loader workers and on the device path (inputs made in `observe`); and each step done
with batched tensor ops against its per-image reference: the batch's inputs, the top query/class
pairs, SAM's decoder across images, the crops and SigLIP's inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from evaluator.config import PRESETS
from evaluator.models.attributes import mask_bounds, masked_crop, masked_crops
from evaluator.models.detector import pick_classes, select_class_detections, top_pairs
from evaluator.models.inputs import frame_pixels, frame_size, one_thread
from evaluator.models.masks import BoxSegmenter
from tests.helpers.frozen_records import BATCH_SIZE, FROZEN, PRESETS_FROZEN, fingerprint, score, write_folder
from tests.helpers.perception_helpers import random_image, tiny_models, tiny_perception


@pytest.fixture(scope="module")
def frozen_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("frozen") / "images"
    write_folder(folder)
    return folder


@pytest.fixture(scope="module")
def same_floats_as_frozen() -> bool:
    """Whether this CPU's kernels give the tiny models the floats of the machine that froze the records."""
    with one_thread(None):
        return fingerprint() == (FROZEN / "fingerprint.txt").read_text(encoding="utf-8").strip()


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS_FROZEN)
def test_records_equal_the_frozen_run_on_every_path(frozen_folder, same_floats_as_frozen, tmp_path, preset):
    device_path = tiny_perception(PRESETS[preset], batch_size=BATCH_SIZE)
    device_path.worker_preparer = lambda categories: None  # as on a GPU: the inputs are made in `observe`
    with one_thread(None):  # the frozen run's thread count (some CPU kernels round by it)
        cpu = score(preset, frozen_folder, tmp_path / "cpu.jsonl")
        if same_floats_as_frozen:  # else the frozen records' floats cannot be had here; the paths still must agree
            assert cpu == (FROZEN / f"{preset}.jsonl").read_bytes()
        assert score(preset, frozen_folder, tmp_path / "workers.jsonl", num_workers=2) == cpu
        assert score(preset, frozen_folder, tmp_path / "device.jsonl", num_workers=2, perception=device_path) == cpu


def test_a_batchs_inputs_made_at_once_equal_each_images_own():
    perception = tiny_perception(PRESETS["current"])
    preparer = perception.input_preparer({"depth", "color"})
    images = [random_image(1, (120, 90)), random_image(2, (96, 96)), random_image(3, (120, 90)), random_image(4)]
    categories = ["depth", "color", "depth", "depth"]
    batch = preparer.prepare_batch([frame_pixels(image) for image in images], categories)
    for image, category, made in zip(images, categories, batch, strict=True):
        alone = preparer(image, category)
        for field in ("detector", "sam", "depth"):
            ours, theirs = getattr(made, field), getattr(alone, field)
            assert (ours is None) == (theirs is None), field
            if ours is not None:
                assert torch.equal(ours, theirs), field
    assert batch[1].depth is None


def test_a_tensor_frame_is_the_pil_images_pixels():
    image = random_image(5, (70, 50))
    frame = torch.from_numpy(np.array(image))
    assert frame_size(frame) == frame_size(image) == (70, 50)
    assert torch.equal(frame_pixels(frame), frame_pixels(image))
    with pytest.raises(ValueError, match="uint8 H×W×3"):
        frame_pixels(frame.float())


def test_top_pairs_on_the_device_order_as_numpys_stable_argsort_ties_included():
    generator = torch.Generator().manual_seed(0)
    # Scores on a coarse grid: many exact ties, which both orders break by the flat index.
    probabilities = (torch.randint(0, 40, (3, 50, 91), generator=generator) / 40.0).float()
    order, scores = top_pairs(probabilities, num_select=300)
    ids = {"a": 1, "b": 17, "c": 90}
    for image in range(3):
        flat = probabilities[image].numpy().reshape(-1)
        expected = np.argsort(-flat, kind="stable")[:300]
        assert np.array_equal(order[image], expected) and np.array_equal(scores[image], flat[expected])
        picked = pick_classes(order[image], scores[image], 91, ids, threshold=0.3, per_class_cap=4)
        assert picked == select_class_detections(
            probabilities[image].numpy(), ids, num_select=300, threshold=0.3, per_class_cap=4
        )


def _per_image_masks(model, processor, embeddings, boxes, size):
    """The per-image reference decoder: one image, its boxes, the processor's post-processing."""
    masks = []
    for position, image_boxes in enumerate(boxes):
        prompt = processor(
            input_boxes=[[list(box) for box in image_boxes]], original_sizes=[list(size)], return_tensors="pt"
        )
        outputs = model(
            image_embeddings=[level[position : position + 1] for level in embeddings],
            input_boxes=prompt["input_boxes"],
            multimask_output=False,
        )
        masks.append(processor.post_process_masks(outputs.pred_masks.float(), prompt["original_sizes"])[0][:, 0])
    return masks


def test_sams_decoder_across_a_batch_gives_the_masks_of_one_call_per_image():
    _, (model, processor), _, _ = tiny_models()
    segmenter = BoxSegmenter(model, processor, device=torch.device("cpu"))
    images = [random_image(20 + n, (150, 100)) for n in range(4)]
    boxes = [
        [(10.0, 10.0, 80.0, 60.0), (40.0, 20.0, 140.0, 95.0)],
        [(0.0, 0.0, 150.0, 100.0)],
        [],  # no box: skipped
        [(5.0, 50.0, 60.0, 99.0), (70.0, 5.0, 120.0, 45.0), (30.0, 30.0, 31.0, 31.0)],
    ]
    with one_thread(None), torch.inference_mode():
        host, device = segmenter.segment_arrays(images, boxes)
        todo = [0, 1, 3]
        inputs = torch.stack([segmenter.pixel_values(images[index]) for index in todo])
        embeddings = model.get_image_embeddings(inputs)
        expected = _per_image_masks(model, processor, embeddings, [list(boxes[index]) for index in todo], (100, 150))
    assert host[2].shape == (0, 100, 150)
    for index, masks in zip(todo, expected, strict=True):
        assert host[index].shape == (len(boxes[index]), 100, 150) and host[index].dtype == bool
        assert np.array_equal(host[index], masks.numpy()) and torch.equal(device[index], masks)
    assert sum(int(mask.sum()) for mask in host) > 0  # masks with pixels were compared


def test_crops_cut_on_the_device_are_the_pil_crops_and_give_siglip_the_same_input():
    _, _, (_, processor), _ = tiny_models()
    image = random_image(9, (64, 48))
    masks = np.zeros((4, 48, 64), bool)
    masks[0, 5:30, 10:50] = True
    masks[0, 6, 11] = False
    masks[1, 40:48, 61:64] = True  # 3 px wide, 8 tall: a crop whose shape is not channels-last
    masks[2, 3, 3] = True
    masks[3, :, :] = np.random.default_rng(0).random((48, 64)) > 0.5
    tensors = [torch.from_numpy(mask) for mask in masks]
    bounds = mask_bounds(tensors)
    assert bounds[0] == (5, 30, 10, 50) and bounds[1] == (40, 48, 61, 64) and bounds[2] == (3, 4, 3, 4)
    assert mask_bounds([torch.zeros((48, 64), dtype=torch.bool)]) == [None]
    crops = masked_crops([frame_pixels(image)] * 4, tensors, bounds, gray=153)
    pil = [masked_crop(image, mask, 153) for mask in masks]
    for crop, reference in zip(crops, pil, strict=True):
        assert torch.equal(crop, frame_pixels(reference))
    ours = processor(images=crops, return_tensors="pt", input_data_format="channels_first")["pixel_values"]
    theirs = processor(images=pil, return_tensors="pt")["pixel_values"]
    assert torch.equal(ours, theirs)


def test_the_value_scores_of_tensor_crops_equal_those_of_pil_crops():
    perception = tiny_perception(PRESETS["current"])
    image = random_image(11, (80, 64))
    mask = np.zeros((64, 80), bool)
    mask[10:50, 20:70] = True
    tensor = masked_crops([frame_pixels(image)], [torch.from_numpy(mask)], mask_bounds([torch.from_numpy(mask)]), 153)
    requests = [("color", "cup")]
    assert perception.attributes.score(tensor, requests, perception.config) == perception.attributes.score(
        [masked_crop(image, mask, 153)], requests, perception.config
    )
