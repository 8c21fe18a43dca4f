"""Perception: what the four models see in an image, for the objects and values a prompt names.

`Perception.observe` is the only call the pipeline and the Space make. `ModelPerception` runs the
real models (docs/scoring.md), each loaded on first need: the detector always (RF-DETR Seg XL, or
Mask R-CNN for the presets c1–c4), SAM 2.1 only when the preset uses it, SigLIP 2 only for
attribute prompts, Depth-Anything V2 only for depth prompts.
Tests build it with `ModelPerception.from_models` from tiny random models. What scoring asks of a
perception (any object, a test double too) is in `evaluator.perception_types`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from dataset_builder.records import PromptRecord
from evaluator.config import PRESETS, EvaluatorConfig
from evaluator.models.attributes import AttributeScorer, mask_bounds, masked_crops
from evaluator.models.depth import DepthEstimator
from evaluator.models.detector import Detector, InstanceDetector
from evaluator.models.inputs import Frame, InputPreparer, PreparedImage, frame_pixels, frame_size, stacked, to_host
from evaluator.models.maskrcnn import MaskRCNNDetector, is_maskrcnn, load_maskrcnn
from evaluator.models.masks import BoxSegmenter
from evaluator.models.weight_files import detector_weights_path, download_command, how_to_get, weights_layout
from evaluator.observation import (
    ImageObservation,
    ObjectObservation,
    best_instances,
    class_names,
    detection_rows,
    instance_masks,
)
from evaluator.perception_types import MASKS, MaskChoice
from negt2ibench.core.errors import MissingWeightsError, UserError, brief
from negt2ibench.core.launch import select_device, select_dtype
from negt2ibench.core.local_files import local_model
from negt2ibench.core.options import DEVICE_CHOICES as DEVICE_CHOICES
from negt2ibench.core.options import check, positive_int

if TYPE_CHECKING:
    import supervision as sv

    from evaluator.geneval.config import GenEvalConfig


def load_rfdetr(config: EvaluatorConfig | GenEvalConfig, weights_dir: str | Path | None = None):
    """The rfdetr model object with the preset's weights file, read from this machine only: a missing
    file is a `MissingWeightsError` naming `download-models` at once (rfdetr would try to download it)."""
    path = detector_weights_path(config, weights_dir)
    if not path.is_file():
        raise MissingWeightsError(config.detector, f"{path} does not exist", how_to_get=how_to_get(config, weights_dir))
    import rfdetr

    model_class = getattr(rfdetr, config.detector)
    try:
        return model_class(pretrain_weights=str(path), resolution=config.detector_resolution, device="cpu")
    except Exception as error:  # noqa: BLE001 - a file rfdetr cannot load raises anything from OSError to MD5 errors
        raise UserError(
            f"{path} could not be loaded as {config.detector} weights ({type(error).__name__}: {brief(error)}); "
            f"delete it and run `{download_command(config, weights_dir)}` again"
        ) from None


def load_hf(
    model_class,
    processor_class,
    model_id: str,
    *,
    dtype: torch.dtype,
    weights_dir: str | Path | None = None,
    config: EvaluatorConfig | GenEvalConfig | None = None,
):
    """(model, processor) from a local folder or the Hugging Face cache, never the network: a model that
    is not there is a `MissingWeightsError` naming the `download-models` command of CONFIG's preset."""
    cache_dir = str(weights_layout(weights_dir)[0]) if weights_dir is not None else None
    folder = local_model(model_id, cache_dir=cache_dir)
    how = how_to_get(config or PRESETS["current"], weights_dir)
    if folder is None:
        where = f"the Hugging Face cache{f' {cache_dir}' if cache_dir else ''}"
        raise MissingWeightsError(model_id, f"not in {where}", how_to_get=how)
    try:
        processor = processor_class.from_pretrained(folder, local_files_only=True)
        model = model_class.from_pretrained(folder, local_files_only=True, dtype=dtype)
    except (OSError, ValueError) as error:  # an interrupted download: a file of the model is missing
        raise MissingWeightsError(model_id, f"incomplete in {folder}: {brief(error)}", how_to_get=how) from None
    return model, processor


class ModelPerception:
    """The real perception stack, batched across images, each model loaded on its first use."""

    def __init__(
        self,
        config: EvaluatorConfig = PRESETS["current"],
        device: str = "auto",
        batch_size: int = 8,
        dtype: torch.dtype | None = None,
        weights_dir: str | Path | None = None,
    ):
        self.batch_size = check("batch_size", batch_size, positive_int)
        self.config = config
        self.device = select_device(device)
        self.dtype = dtype or select_dtype(self.device)  # bf16 on CUDA, float32 on the CPU and MPS
        self.weights_dir = weights_dir
        self._detector: InstanceDetector | None = None
        self._segmenter: BoxSegmenter | None = None
        self._attributes: AttributeScorer | None = None
        self._depth: DepthEstimator | None = None

    @classmethod
    def from_models(
        cls,
        config: EvaluatorConfig,
        *,
        detector,
        sam: tuple | None = None,
        siglip: tuple | None = None,
        depth: tuple | None = None,
        device: str = "cpu",
        batch_size: int = 8,
        dtype: torch.dtype = torch.float32,
    ) -> ModelPerception:
        """Wrap already built models (an rfdetr object, or a torchvision Mask R-CNN for the Mask R-CNN
        presets, and (model, processor) pairs), e.g. tiny test ones."""
        perception = cls(config, device=device, batch_size=batch_size, dtype=dtype)
        perception._detector = perception._wrap_detector(detector)
        if sam is not None:
            perception._segmenter = BoxSegmenter(*sam, device=perception.device, dtype=dtype)
        if siglip is not None:
            perception._attributes = AttributeScorer(
                *siglip, device=perception.device, dtype=perception.attribute_dtype
            )
        if depth is not None:
            perception._depth = DepthEstimator(*depth, device=perception.device, dtype=dtype)
        return perception

    @property
    def attribute_dtype(self) -> torch.dtype:
        """SigLIP 2's dtype: float32 unless the config's `attribute_dtype` asks for bf16 (β is 0.005 in cosine)."""
        return torch.float32 if self.config.attribute_dtype == "float32" else self.dtype

    # -- lazy model access ------------------------------------------------------------------
    def _wrap_detector(self, model) -> InstanceDetector:
        """The preset's detector around a built model: an rfdetr object, or a torchvision Mask R-CNN
        for the Mask R-CNN presets (c1–c4); both give the same `sv.Detections`."""
        if is_maskrcnn(self.config):
            return MaskRCNNDetector(
                model,
                presence_threshold=self.config.presence_threshold,
                per_class_cap=self.config.per_class_cap,
                device=self.device,
            )
        return Detector(
            model,
            presence_threshold=self.config.presence_threshold,
            per_class_cap=self.config.per_class_cap,
            device=self.device,
            autocast_dtype=self.dtype if self.dtype != torch.float32 else None,
        )

    @property
    def detector(self) -> InstanceDetector:
        if self._detector is None:
            if is_maskrcnn(self.config):
                model = load_maskrcnn(self.config, self.weights_dir)
            else:
                model = load_rfdetr(self.config, self.weights_dir)
            self._detector = self._wrap_detector(model)
        return self._detector

    @property
    def segmenter(self) -> BoxSegmenter:
        if self._segmenter is None:
            from transformers import Sam2Model, Sam2Processor

            model, processor = load_hf(
                Sam2Model,
                Sam2Processor,
                self.config.sam_model_id,
                dtype=self.dtype,
                weights_dir=self.weights_dir,
                config=self.config,
            )
            self._segmenter = BoxSegmenter(model, processor, device=self.device, dtype=self.dtype)
        return self._segmenter

    @property
    def attributes(self) -> AttributeScorer:
        if self._attributes is None:
            from transformers import AutoProcessor, SiglipModel

            model, processor = load_hf(
                SiglipModel,
                AutoProcessor,
                self.config.attribute_model_id,
                dtype=self.attribute_dtype,
                weights_dir=self.weights_dir,
                config=self.config,
            )
            self._attributes = AttributeScorer(model, processor, device=self.device, dtype=self.attribute_dtype)
        return self._attributes

    @property
    def depth(self) -> DepthEstimator:
        if self._depth is None:
            from transformers import AutoImageProcessor, DepthAnythingForDepthEstimation

            model, processor = load_hf(
                DepthAnythingForDepthEstimation,
                AutoImageProcessor,
                self.config.depth_model_id,
                dtype=self.dtype,
                weights_dir=self.weights_dir,
                config=self.config,
            )
            self._depth = DepthEstimator(model, processor, device=self.device, dtype=self.dtype)
        return self._depth

    def load_all(self, prompts: Sequence[PromptRecord] = ()) -> None:
        """Load every model these prompts (all, when none given) need, e.g. to fail early when offline."""
        categories = {prompt.category for prompt in prompts} or {"color", "depth"}
        needed = ["detector"] + (["segmenter"] if self.config.use_sam else [])
        needed += ["attributes"] if categories & {"color", "material"} else []
        needed += ["depth"] if "depth" in categories else []
        for name in needed:
            getattr(self, name)  # each property loads its model on first access

    # -- inputs ------------------------------------------------------------------------------
    def input_preparer(self, categories: Iterable[str] = ("color", "depth")) -> InputPreparer:
        """What makes the models' inputs for prompts of these categories: the detector's, SAM's when
        the preset uses it, Depth-Anything's for depth prompts (their models load now if not yet)."""
        return InputPreparer(
            detector=self.detector.inputs,  # None: the detector makes its own (Mask R-CNN)
            sam_processor=self.segmenter.processor if self.config.use_sam else None,
            depth_processor=self.depth.processor if "depth" in set(categories) else None,
        )

    def worker_preparer(self, categories: Iterable[str]) -> InputPreparer | None:
        """The preparer for the loader's worker processes on the CPU; None on a GPU (or MPS), where
        `observe` uploads each image once and the preprocessing runs on the device."""
        return self.input_preparer(categories) if self.device.type == "cpu" else None

    def _prepared(
        self, images: Sequence[Frame], prompts: Sequence[PromptRecord], given: Sequence[PreparedImage | None] | None
    ) -> tuple[list[PreparedImage], list[torch.Tensor | None]]:
        """Each image's inputs: the ones given (made by a worker), the rest made here on the device
        from the image uploaded once, the whole batch at once; and those uploaded pixels (None
        for an image whose inputs were given)."""
        inputs: list[PreparedImage | None] = list(given) if given is not None else [None] * len(images)
        pixels: list[torch.Tensor | None] = [None] * len(images)
        missing = [index for index, prepared in enumerate(inputs) if prepared is None]
        if missing:
            preparer = self.input_preparer({prompt.category for prompt in prompts})
            uploaded = [frame_pixels(images[index], self.device) for index in missing]
            made = preparer.prepare_batch(uploaded, [prompts[i].category for i in missing])
            for index, upload, prepared in zip(missing, uploaded, made, strict=True):
                pixels[index], inputs[index] = upload, prepared
        return [prepared for prepared in inputs if prepared is not None], pixels

    # -- observation ------------------------------------------------------------------------
    def observe(
        self,
        images: Sequence[Frame],
        prompts: Sequence[PromptRecord],
        *,
        prepared: Sequence[PreparedImage | None] | None = None,
        masks: MaskChoice = "all",
    ) -> list[ImageObservation]:
        """One observation per (image, prompt), in order.

        `images`: PIL images, or their uint8 H×W×3 pixels (the loader's workers send those).
        `prepared`: the models' inputs per image, as `input_preparer` makes them (the scoring loop's
        workers do); made here where missing. `masks="rules"` brings only the masks a rule reads to
        full resolution (attribute objects, and relation objects whose partner is present), the
        others stay None; the default `"all"` gives every present object its mask, for drawing.
        """
        if len(images) != len(prompts):
            raise ValueError(f"{len(images)} images but {len(prompts)} prompts")
        if masks not in MASKS:
            raise ValueError(f"masks must be one of {', '.join(MASKS)}, got {masks!r}")
        if prepared is not None and len(prepared) != len(images):
            raise ValueError(f"{len(images)} images but {len(prepared)} prepared inputs")
        observations: list[ImageObservation] = []
        for start in range(0, len(images), self.batch_size):
            end = start + self.batch_size
            chunk = prepared[start:end] if prepared is not None else None
            observations += self._observe_batch(images[start:end], prompts[start:end], chunk, masks)
        return observations

    @torch.inference_mode()
    def _observe_batch(
        self,
        images: Sequence[Frame],
        prompts: Sequence[PromptRecord],
        prepared: Sequence[PreparedImage | None] | None = None,
        masks: MaskChoice = "all",
    ) -> list[ImageObservation]:
        config = self.config
        inputs, pixels = self._prepared(images, prompts, prepared)
        names = [list(dict.fromkeys(prompt.objects)) for prompt in prompts]
        batch = stacked([entry.detector for entry in inputs])
        found = self.detector.detect(images, names, with_masks=not config.use_sam, pixel_values=batch)
        objects = [
            {
                name: ObjectObservation.from_detections(name, detections, counting_threshold=config.counting_threshold)
                for name in image_names
            }
            for image_names, detections in zip(names, found, strict=True)
        ]
        used = [best_instances(detections, image_names) for detections, image_names in zip(found, names, strict=True)]
        if masks == "rules":
            used = [detection_rows(rows, rule_rows(prompt, rows)) for prompt, rows in zip(prompts, used, strict=True)]

        sizes = [frame_size(image) for image in images]
        if config.use_sam:
            boxes = [[(float(x0), float(y0), float(x1), float(y1)) for x0, y0, x1, y1 in rows.xyxy] for rows in used]
            found_masks, device_masks = self.segmenter.segment_arrays(
                images, boxes, pixel_values=[entry.sam for entry in inputs]
            )
        else:
            detector = self.detector
            if isinstance(detector, Detector):  # RF-DETR's masks stay on the device, for the attribute crops
                device_masks = [detector.mask_tensors(rows, *size) for rows, size in zip(used, sizes, strict=True)]
                found_masks = to_host(device_masks)
            else:
                found_masks = [self.detector.masks(rows, *size) for rows, size in zip(used, sizes, strict=True)]
                device_masks = None
        observations = []
        for (width, height), image_objects, rows, image_masks in zip(sizes, objects, used, found_masks, strict=True):
            # An empty mask (SAM or the detector found no pixel in the box) stays empty: the object is
            # present but unmeasurable (evaluator.verdict: no relation predicate for its pairs).
            rows = dataclasses.replace(rows, mask=image_masks)
            for name, mask in zip(class_names(rows), instance_masks(rows), strict=True):
                image_objects[str(name)].mask = mask
            observations.append(ImageObservation(width=width, height=height, objects=image_objects, detections=rows))

        self._score_attributes(images, prompts, observations, pixels, device_masks)
        depth_indices = [index for index, prompt in enumerate(prompts) if prompt.category == "depth"]
        if depth_indices:
            depth_inputs = [inputs[index].depth for index in depth_indices]
            disparities = self.depth.disparity([images[index] for index in depth_indices], pixel_values=depth_inputs)
            for index, disparity in zip(depth_indices, disparities, strict=False):
                observations[index].disparity = disparity
        return observations

    def _score_attributes(
        self,
        images: Sequence[Frame],
        prompts: Sequence[PromptRecord],
        observations: list[ImageObservation],
        pixels: list[torch.Tensor | None],
        device_masks: list[torch.Tensor] | None,
    ) -> None:
        """SigLIP's value scores of each present object of an attribute prompt, on its masked crop cut
        on the device (`masked_crops`); an object whose mask is empty is read from its box crop."""
        crop_pixels: list[torch.Tensor] = []
        crop_masks: list[torch.Tensor] = []
        requests: list[tuple[str, str]] = []
        targets: list[tuple[ObjectObservation, tuple[float, float, float, float]]] = []
        for index, (prompt, observation) in enumerate(zip(prompts, observations, strict=True)):
            if prompt.kind != "attribute":
                continue
            rows = {str(name): row for row, name in enumerate(class_names(observation.as_detections()))}
            for name, obj in observation.objects.items():
                if obj.present:
                    if obj.box is None or obj.mask is None:  # `_observe_batch` gives both to every present object
                        raise ValueError(f"present object {name!r} has no box or no mask")
                    image_pixels = pixels[index]
                    if image_pixels is None:  # inputs made by a worker: the pixels come now, once
                        image_pixels = pixels[index] = frame_pixels(images[index], self.device)
                    crop_pixels.append(image_pixels)
                    held = device_masks[index][rows[name]] if device_masks is not None else None
                    crop_masks.append(held if held is not None else torch.from_numpy(obj.mask).to(self.device))
                    requests.append((prompt.category, name))
                    targets.append((obj, obj.box))
        if not targets:
            return
        bounds: list[tuple[int, int, int, int]] = []
        for position, ((_, box), found) in enumerate(zip(targets, mask_bounds(crop_masks), strict=True)):
            if found is None:  # an empty mask has no pixels to crop: the attributes are read from the box crop
                height, width = crop_masks[position].shape
                crop_masks[position] = torch.from_numpy(box_mask(box, width, height)).to(self.device)
                found = box_bounds(box, width, height)
            bounds.append(found)
        crops = masked_crops(crop_pixels, crop_masks, bounds, self.config.attribute_background_gray)
        for (obj, _), scores in zip(targets, self.attributes.score(crops, requests, self.config), strict=True):
            obj.value_scores = scores


def rule_rows(prompt: PromptRecord, rows: sv.Detections) -> list[int]:
    """The rows (one per present object, `best_instances`) whose masks a rule reads: every object of
    an attribute prompt (its crop), and for a relation the subject and target of each statement
    whose two objects are both present; a relation with an absent partner measures nothing."""
    present = {str(name) for name in class_names(rows)}
    if prompt.kind == "attribute":
        needed = present
    else:
        needed = {
            name
            for statement in prompt.statements
            if statement.subject in present and statement.target in present
            for name in (statement.subject, statement.target)
        }
    return [index for index, name in enumerate(class_names(rows)) if str(name) in needed]


def box_bounds(box: tuple[float, float, float, float], width: int, height: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of the box in whole pixels (at least one, clamped to the image)."""
    x0 = min(max(int(np.floor(box[0])), 0), width - 1)
    y0 = min(max(int(np.floor(box[1])), 0), height - 1)
    x1 = max(min(int(np.ceil(box[2])), width), x0 + 1)
    y1 = max(min(int(np.ceil(box[3])), height), y0 + 1)
    return y0, y1, x0, x1


def box_mask(box: tuple[float, float, float, float], width: int, height: int) -> np.ndarray:
    """A bool H×W mask filling the box (at least one pixel, clamped to the image)."""
    mask = np.zeros((height, width), dtype=bool)
    top, bottom, left, right = box_bounds(box, width, height)
    mask[top:bottom, left:right] = True
    return mask
