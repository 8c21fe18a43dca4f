"""GenEval's perception on this project's models: every instance of GenEval's 80 classes with a score
and a tight mask box, and the CLIP colour of the detections a colour clause reads.

`GenEvalPerception.observe(images, prompts)` gives, per image, class → every detection (unselected:
the rules select), the top `count` of a colour clause's class carrying its colour. The detector is
the preset's: Mask2Former through transformers (`evaluator.models.mask2former`), or RF-DETR Seg XL
(`evaluator.models.detector`) with its own masks or SAM 2.1's (`evaluator.models.masks`); boxes are
always the tight boxes of the masks, as mmdet's `mask2bbox` makes GenEval's (an RF-DETR detection
whose mask is empty keeps its own box). Models load on first use; tests build it from tiny models
with `from_models`. Everything runs in float32.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from evaluator.models.clip_colors import ColorClassifier, colour_crop
from evaluator.models.mask2former import Instance, Mask2FormerDetector, mask_box
from evaluator.models.masks import BoxSegmenter
from negt2ibench.core.launch import select_device

from .config import MASK2FORMER, GenEvalConfig
from .prompts import GenEvalPrompt, object_names
from .rules import GenEvalDetection, colour_requests, select_detections

Detections = dict[str, list[GenEvalDetection]]


def _load_clip(config: GenEvalConfig, weights_dir: str | Path | None, device: torch.device) -> ColorClassifier:
    """CLIP, its tokenizer and its PIL image processor (the bicubic resize open_clip's transform makes)."""
    from transformers import CLIPImageProcessorPil, CLIPModel, CLIPProcessor

    from evaluator.models.weight_files import weights_layout
    from evaluator.perception import load_hf
    from negt2ibench.core.local_files import local_model

    model_id = config.clip_model_id
    model, processor = load_hf(
        CLIPModel, CLIPProcessor, model_id, dtype=torch.float32, weights_dir=weights_dir, config=config
    )
    cache_dir = str(weights_layout(weights_dir)[0]) if weights_dir is not None else None
    folder = local_model(model_id, cache_dir=cache_dir)  # found by load_hf: read from there, never the network
    assert folder is not None  # load_hf raised MissingWeightsError otherwise
    image_processor = CLIPImageProcessorPil.from_pretrained(folder, local_files_only=True)
    return ColorClassifier(model, processor.tokenizer, image_processor, device=device)


class GenEvalPerception:
    """The detector and the colour classifier of one GenEval preset, each loaded on first use."""

    def __init__(
        self,
        config: GenEvalConfig,
        *,
        device: str = "auto",
        weights_dir: str | Path | None = None,
    ):
        self.config = config
        self.device = select_device(device)
        self.weights_dir = weights_dir
        self._detector = None
        self._segmenter: BoxSegmenter | None = None
        self._colors: ColorClassifier | None = None

    @classmethod
    def from_models(
        cls,
        config: GenEvalConfig,
        *,
        detector,
        clip: tuple,
        sam: tuple | None = None,
        device: str = "cpu",
    ) -> GenEvalPerception:
        """Wrap built models (tests: tiny random ones): `detector` is a (Mask2Former model, processor)
        pair for the `geneval` preset or an rfdetr model object for the RF-DETR presets; `clip` is
        (CLIPModel, tokenizer, image processor); `sam` a (Sam2Model, processor) pair when `use_sam`."""
        perception = cls(config, device=device)
        perception._detector = perception._wrap_detector(detector)
        perception._colors = ColorClassifier(*clip, device=perception.device)
        if sam is not None:
            perception._segmenter = BoxSegmenter(*sam, device=perception.device)
        return perception

    # -- models ------------------------------------------------------------------------------
    def _wrap_detector(self, built):
        config = self.config
        if config.detector == MASK2FORMER:
            model, processor = built
            return Mask2FormerDetector(
                model,
                processor,
                class_names=object_names(),
                device=self.device,
                short_edge=config.detector_short_edge,
                long_edge=config.detector_long_edge,
                max_per_image=config.detector_max_per_image,
            )
        from evaluator.models.detector import Detector, benchmark_class_ids

        return Detector(
            built,
            presence_threshold=min(config.threshold, config.counting_threshold),
            per_class_cap=config.max_objects,
            device=self.device,
            class_ids=benchmark_class_ids(names=object_names()),
        )

    @property
    def detector(self):
        if self._detector is None:
            if self.config.detector == MASK2FORMER:
                from transformers import Mask2FormerForUniversalSegmentation, Mask2FormerImageProcessor

                from evaluator.perception import load_hf

                built = load_hf(
                    Mask2FormerForUniversalSegmentation,
                    Mask2FormerImageProcessor,
                    self.config.detector_model_id,
                    dtype=torch.float32,
                    weights_dir=self.weights_dir,
                    config=self.config,
                )
            else:
                from evaluator.perception import load_rfdetr

                built = load_rfdetr(self.config, self.weights_dir)
            self._detector = self._wrap_detector(built)
        return self._detector

    @property
    def segmenter(self):
        if self._segmenter is None:
            from transformers import Sam2Model, Sam2Processor

            from evaluator.models.masks import BoxSegmenter
            from evaluator.perception import load_hf

            model, processor = load_hf(
                Sam2Model,
                Sam2Processor,
                self.config.sam_model_id,
                dtype=torch.float32,
                weights_dir=self.weights_dir,
                config=self.config,
            )
            self._segmenter = BoxSegmenter(model, processor, device=self.device)
        return self._segmenter

    @property
    def colors(self) -> ColorClassifier:
        if self._colors is None:
            self._colors = _load_clip(self.config, self.weights_dir, self.device)
        return self._colors

    def load_all(self) -> None:
        """Load every model now (a missing weight fails here with `MissingWeightsError`, which names
        the `download-models --preset` that fetches this preset's weights)."""
        self.detector  # noqa: B018 - each property loads its model on first access
        if self.config.detector != MASK2FORMER and self.config.use_sam:
            self.segmenter  # noqa: B018
        self.colors  # noqa: B018

    # -- observation -------------------------------------------------------------------------
    def instances(self, images: Sequence[Image.Image]) -> list[list[Instance]]:
        """Every instance above the lower of the two thresholds, with its mask and tight box."""
        config = self.config
        if config.detector == MASK2FORMER:
            return self.detector.detect(images, min_score=min(config.threshold, config.counting_threshold))
        names = [list(object_names())] * len(images)
        found = self.detector.detect(images, names, with_masks=not config.use_sam)
        if config.use_sam:
            boxes = [[tuple(map(float, box)) for box in rows.xyxy] for rows in found]
            masks = self.segmenter.segment(images, boxes)
        else:
            masks = [
                self.detector.masks(rows, image.width, image.height) for rows, image in zip(found, images, strict=True)
            ]
        results = []
        for rows, image_masks in zip(found, masks, strict=True):
            image_instances = []
            for name, score, box, mask in zip(rows["class_name"], rows.confidence, rows.xyxy, image_masks, strict=True):
                x0, y0, x1, y1 = (float(v) for v in box)
                tight = mask_box(mask) if mask.any() else (x0, y0, x1, y1)  # empty: the detector's box
                image_instances.append(Instance(str(name), float(np.float32(score)), tight, np.asarray(mask, bool)))
            results.append(image_instances)
        return results

    def observe(self, images: Sequence[Image.Image], prompts: Sequence[GenEvalPrompt]) -> list[Detections]:
        """Per image: class → its detections (in the detector's order), colours on those a clause reads."""
        if len(images) != len(prompts):
            raise ValueError(f"{len(images)} images but {len(prompts)} prompts")
        config = self.config
        found = self.instances(images)
        observations: list[Detections] = []
        crops: dict[str, list[tuple[int, int, Image.Image]]] = defaultdict(list)  # class → (image, row, crop)
        for position, (image, prompt, instances) in enumerate(zip(images, prompts, found, strict=True)):
            detections: Detections = defaultdict(list)
            masks: dict[str, list[np.ndarray]] = defaultdict(list)
            for instance in instances:
                detections[instance.name].append(GenEvalDetection(instance.box, instance.score))
                masks[instance.name].append(instance.mask)
            selected = select_detections(detections, prompt.tag, config)
            for name, count in colour_requests(prompt.metadata, selected).items():
                for detection in selected[name][:count]:
                    row = next(i for i, d in enumerate(detections[name]) if d is detection)
                    crop = colour_crop(image, masks[name][row], detection.box, bgcolor=config.bgcolor, crop=config.crop)
                    crops[name].append((position, row, crop))
            observations.append(dict(detections))
        for name, entries in crops.items():
            colors = self.colors.classify([crop for *_, crop in entries], name, config.colors, config.color_templates)
            for (position, row, _), color in zip(entries, colors, strict=True):
                detection = observations[position][name][row]
                observations[position][name][row] = dataclasses.replace(detection, color=color)
        return observations
