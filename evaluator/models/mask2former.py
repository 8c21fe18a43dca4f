"""Mask2Former (transformers' `Mask2FormerForUniversalSegmentation`) as an instance detector, read the
way GenEval's mmdet 2.x reads its Mask2Former: every instance with a score, a full-resolution mask and
the tight box of that mask.

The input is GenEval's mmdet test pipeline (the image resized keep-ratio to fit 1333×800, normalised,
padded to a multiple of 32 with zeros after normalising); images whose padded sizes agree share one
forward. The output follows mmdet's `MaskFormerFusionHead.instance_postprocess`: class probabilities
are the softmax without the no-object column, the 100 best (query, class) pairs are kept, each
query's mask logits are upsampled to the padded input, cut to the resized image and upsampled to the
original size (bilinear), the mask is logits > 0, the score is the class probability times the mean
sigmoid inside the mask, and the box is `mask2bbox`'s (x_min, y_min, x_max + 1, y_max + 1), all zeros
for an empty mask. Masks are computed only for pairs whose class probability is above `min_score`
(a score is a class probability times a mean below 1, so no other pair can pass a threshold at or
above it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from evaluator.models.detector import COCO_TO_BENCHMARK_NAME
from evaluator.models.inputs import device_kwargs, image_pixels
from negt2ibench.core.errors import UserError

SIZE_DIVISOR = 32  # mmdet's Pad(size_divisor=32)


@dataclass(frozen=True)
class Instance:
    """One detected instance: its class, score, tight mask box and full-resolution mask."""

    name: str
    score: float
    box: tuple[float, float, float, float]
    mask: np.ndarray  # bool H×W


def mask_box(mask: np.ndarray) -> tuple[float, float, float, float]:
    """mmdet's `mask2bbox` of one mask: (x_min, y_min, x_max + 1, y_max + 1); zeros when it is empty."""
    columns = np.flatnonzero(mask.any(axis=0))
    rows = np.flatnonzero(mask.any(axis=1))
    if columns.size == 0 or rows.size == 0:
        return (0.0, 0.0, 0.0, 0.0)
    return (float(columns[0]), float(rows[0]), float(columns[-1] + 1), float(rows[-1] + 1))


def class_names_of(id2label: Mapping[int, str], wanted: Sequence[str]) -> list[str]:
    """The model's labels as GenEval names them (`mouse` → `computer mouse`, ...), checked to be the
    80 COCO classes GenEval's prompts use, in any order."""
    names = [COCO_TO_BENCHMARK_NAME.get(id2label[index], id2label[index]) for index in sorted(id2label)]
    missing = sorted(set(wanted) - set(names))
    if missing or len(names) != len(wanted):
        raise UserError(
            f"the Mask2Former checkpoint's {len(names)} labels are not COCO's 80 instance classes "
            f"(missing {', '.join(missing[:5]) or 'none'}): GenEval needs a COCO instance model such as "
            "facebook/mask2former-swin-small-coco-instance"
        )
    return names


class Mask2FormerDetector:
    """A loaded Mask2Former model and its image processor, read as mmdet 2.x reads its Mask2Former."""

    def __init__(
        self,
        model,
        processor,
        *,
        class_names: Sequence[str],
        device: torch.device,
        short_edge: int = 800,
        long_edge: int = 1333,
        max_per_image: int = 100,
    ):
        self.model = model.to(device=device, dtype=torch.float32).eval()
        self.processor = processor
        self.device = device
        self.short_edge, self.long_edge = short_edge, long_edge
        self.max_per_image = max_per_image
        self.class_names = class_names_of(model.config.id2label, class_names)

    def _input(self, image: Image.Image) -> torch.Tensor:
        """The normalised image resized keep-ratio (3×h×w), before padding."""
        output = self.processor(
            images=[image_pixels(image, self.device)],
            size={"shortest_edge": self.short_edge, "longest_edge": self.long_edge},
            size_divisor=0,
            do_pad=False,
            return_tensors="pt",
            **device_kwargs(self.device),
        )
        return output["pixel_values"][0].to(self.device, torch.float32)

    @torch.inference_mode()
    def detect(self, images: Sequence[Image.Image], *, min_score: float) -> list[list[Instance]]:
        """Every instance of each image whose class probability is above `min_score` (float32, strict)."""
        inputs = [self._input(image) for image in images]
        results: list[list[Instance]] = [[] for _ in images]
        groups: dict[tuple[int, int], list[int]] = {}
        for index, tensor in enumerate(inputs):
            height, width = tensor.shape[-2:]
            padded = (-(-height // SIZE_DIVISOR) * SIZE_DIVISOR, -(-width // SIZE_DIVISOR) * SIZE_DIVISOR)
            groups.setdefault(padded, []).append(index)
        for (height, width), members in groups.items():
            batch = torch.zeros((len(members), 3, height, width), device=self.device)
            for row, index in enumerate(members):
                batch[row, :, : inputs[index].shape[1], : inputs[index].shape[2]] = inputs[index]
            outputs = self.model(pixel_values=batch)
            for row, index in enumerate(members):
                results[index] = self._instances(
                    outputs.class_queries_logits[row],
                    outputs.masks_queries_logits[row],
                    (height, width),
                    (int(inputs[index].shape[-2]), int(inputs[index].shape[-1])),
                    images[index].size,
                    min_score,
                )
        return results

    def _instances(
        self,
        class_logits: torch.Tensor,
        mask_logits: torch.Tensor,
        padded: tuple[int, int],
        resized: tuple[int, int],
        original: tuple[int, int],
        min_score: float,
    ) -> list[Instance]:
        probabilities = F.softmax(class_logits.float(), dim=-1)[:, :-1]  # (queries, classes)
        classes = probabilities.shape[1]
        scores, flat = probabilities.flatten().topk(min(self.max_per_image, probabilities.numel()), sorted=False)
        keep = scores > torch.tensor(min_score, dtype=torch.float32)
        scores, flat = scores[keep], flat[keep]
        if flat.numel() == 0:
            return []
        queries = flat // classes
        unique, inverse = torch.unique(queries, return_inverse=True)
        width, height = original
        logits = F.interpolate(mask_logits[unique][None].float(), size=padded, mode="bilinear", align_corners=False)
        logits = logits[:, :, : resized[0], : resized[1]]
        logits = F.interpolate(logits, size=(height, width), mode="bilinear", align_corners=False)[0]
        binary = logits > 0
        mask_scores = (logits.sigmoid() * binary).flatten(1).sum(1) / (binary.flatten(1).sum(1) + 1e-6)
        detection_scores = (scores * mask_scores[inverse]).tolist()  # float32, as mmdet's det_scores
        masks = binary.cpu().numpy()
        return [
            Instance(self.class_names[pair % classes], score, mask_box(masks[position]), masks[position])
            for score, pair, position in zip(detection_scores, flat.tolist(), inverse.tolist(), strict=True)
        ]
