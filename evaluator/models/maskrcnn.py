"""Mask R-CNN (torchvision's COCO `maskrcnn_resnet50_fpn_v2`): the detector of Table 17's C1–C4.

`MaskRCNNDetector` keeps the contract of `evaluator.models.detector.Detector`, so perception and
everything after it cannot tell the two apart:

- `detect(images, wanted, with_masks=...)` gives one `supervision.Detections` per image: only the
  prompt's classes, each at or above the presence threshold, at most `per_class_cap` per class,
  class by class in the order of `wanted` and most confident first within a class; `xyxy` in
  pixels of the original image, `confidence`, `class_id` (COCO's sparse id, the same ids as
  RF-DETR's) and the benchmark's name in `data["class_name"]`;
- `masks(detections, width, height)` brings the masks of the rows given (the instances a
  statement uses), and only those, to full resolution.

It runs torchvision's stages itself (resize + normalise, backbone, RPN, box head) instead of the
model's `forward`, so that class scores are filtered to the prompt's classes *before* the
per-class NMS (the model's own, IoU `roi_heads.nms_thresh` = 0.5) and the mask head runs only for
the kept rows, at its 28 × 28 resolution; `masks` pastes them into the image
(`paste_masks_in_image`, as torchvision's post-processing) and thresholds at 0.5. Class scores
are the softmax over the 91 COCO labels (background included), as torchvision scores them. The
model runs in float32 (no autocast), whatever the evaluator's dtype.

Weights: `MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1` through torchvision, cached as
`$TORCH_HOME/hub/checkpoints/maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth` (or under
`WEIGHTS_DIR/torch/` with `--weights-dir`); `load_maskrcnn` reads them from there only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from PIL import Image

from evaluator.config import MASK_RCNN, EvaluatorConfig
from evaluator.models.detector import benchmark_class_ids
from evaluator.models.inputs import DetectorInputs, Frame, frame_pixels, frame_size
from evaluator.models.weight_files import how_to_get, torchvision_weights, torchvision_weights_path
from negt2ibench.core.errors import MissingWeightsError, UserError

if TYPE_CHECKING:
    import supervision as sv

MAX_SIZE = 1333  # torchvision's default cap on the longer side
MASK_THRESHOLD = 0.5  # on the pasted mask probabilities, as torchvision's documentation advises
_MIN_BOX_SIDE = 1e-2  # torchvision's remove_small_boxes in its post-processing
# One image's kept rows: class names, COCO labels, scores, boxes in the resized image.
_Kept = tuple[list[str], list[int], torch.Tensor, torch.Tensor]


def is_maskrcnn(config: EvaluatorConfig) -> bool:
    """Whether the config's detector is Mask R-CNN (else an rfdetr class)."""
    return config.detector == MASK_RCNN


def coco_class_ids() -> dict[str, int]:
    """Benchmark class name → Mask R-CNN label, from the weights' 91 COCO categories (`mouse` is
    `computer mouse`, etc., as for RF-DETR); needs no download."""
    from torchvision.models.detection import MaskRCNN_ResNet50_FPN_V2_Weights

    categories = MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1.meta["categories"]
    return benchmark_class_ids(dict(enumerate(categories)))


def maskrcnn_weights_path(config: EvaluatorConfig, weights_dir: str | Path | None = None) -> Path:
    """Where the weights file is cached: `TORCH_HOME/hub/checkpoints/<file of the weights' URL>`."""
    return torchvision_weights_path(config, weights_dir)


def download_maskrcnn_weights(config: EvaluatorConfig, weights_dir: str | Path | None = None) -> Path:
    """Fetch the weights file into its cache (hash-checked by torch.hub) and return its path."""
    path = maskrcnn_weights_path(config, weights_dir)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        found = torch.hub.HASH_REGEX.search(path.name)  # torchvision's file names end in -<sha256 prefix>.pth
        prefix = found.group(1) if found else None
        torch.hub.download_url_to_file(torchvision_weights(config).url, str(path), hash_prefix=prefix, progress=True)
    return path


def build_maskrcnn(config: EvaluatorConfig, **kwargs):
    """The network with random weights, sized by the config (`kwargs` go to torchvision's MaskRCNN)."""
    from torchvision.models.detection import maskrcnn_resnet50_fpn_v2

    options = {"min_size": config.detector_resolution, "max_size": MAX_SIZE} | kwargs
    return maskrcnn_resnet50_fpn_v2(weights=None, weights_backbone=None, num_classes=91, **options)


def load_maskrcnn(config: EvaluatorConfig, weights_dir: str | Path | None = None):
    """The model with its COCO weights, read from this machine only (`download-models --preset` fetches
    them); a missing file is a `MissingWeightsError` at once."""
    path = maskrcnn_weights_path(config, weights_dir)
    if not path.is_file():
        label = f"Mask R-CNN ({config.detector_weights})"
        raise MissingWeightsError(label, f"{path} does not exist", how_to_get=how_to_get(config, weights_dir))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = build_maskrcnn(config)
        model.load_state_dict(state)
    except Exception as error:  # noqa: BLE001 - a truncated or foreign file
        raise UserError(
            f"{path} could not be loaded as {config.detector_weights} ({type(error).__name__}); delete it and run "
            f"`negt2ibench download-models --preset {config.name}` again"
        ) from None
    return model


class MaskRCNNDetector:
    """A loaded torchvision Mask R-CNN used stage by stage (see the module docstring)."""

    def __init__(self, model, *, presence_threshold: float, per_class_cap: int, device: torch.device):
        self.network = model.to(device).eval()
        self.presence_threshold = presence_threshold
        self.per_class_cap = per_class_cap
        self.device = device
        self.class_ids = coco_class_ids()
        self.inputs: DetectorInputs | None = None  # torchvision's own transform makes the input, in `detect`

    @torch.inference_mode()
    def detect(
        self,
        images: Sequence[Frame],
        wanted: Sequence[Sequence[str]],
        *,
        with_masks: bool,
        pixel_values: torch.Tensor | None = None,
    ) -> list[sv.Detections]:
        """One `sv.Detections` per image: the kept detections of that image's wanted classes.

        `with_masks` adds `data["mask_probs"]` (rows × 28 × 28 mask probabilities of each row's
        class), from which `masks` pastes the instances a statement uses. `pixel_values` must be
        None: the model makes its own input (`inputs` is None, so no worker makes one).
        """
        if pixel_values is not None:
            raise ValueError("Mask R-CNN makes its own input from the images: pixel_values must be None")
        if not images:
            return []
        for names in wanted:
            unknown = [name for name in names if name not in self.class_ids]
            if unknown:
                raise ValueError(f"not a benchmark class: {', '.join(unknown)}")
        net = self.network
        tensors = [frame_pixels(_rgb(image), self.device).float().div_(255.0) for image in images]
        batch, _ = net.transform(tensors)
        features = net.backbone(batch.tensors)
        proposals, _ = net.rpn(batch, features)
        heads = net.roi_heads
        box_features = heads.box_head(heads.box_roi_pool(features, proposals, batch.image_sizes))
        class_logits, box_regression = heads.box_predictor(box_features)
        boxes_all = heads.box_coder.decode(box_regression, proposals).split([len(p) for p in proposals])
        scores_all = torch.softmax(class_logits.float(), -1).split([len(p) for p in proposals])

        kept = [  # per image: (names, labels, scores, boxes in the resized image)
            self._keep(boxes, scores, size, names, heads.nms_thresh)
            for boxes, scores, size, names in zip(boxes_all, scores_all, batch.image_sizes, wanted, strict=True)
        ]
        probabilities: list[np.ndarray | None] = [None] * len(images)
        if with_masks and any(names for names, *_ in kept):
            probabilities = self._mask_probabilities(features, kept, batch.image_sizes)
        return _detections(images, kept, batch.image_sizes, probabilities, with_masks)

    def _keep(
        self, boxes: torch.Tensor, scores: torch.Tensor, size: tuple[int, int], names: Sequence[str], nms_iou: float
    ) -> _Kept:
        """One image's rows: per wanted class, its confident boxes after NMS, at most `per_class_cap`."""
        from torchvision.ops import boxes as box_ops

        boxes = box_ops.clip_boxes_to_image(boxes, size)
        rows_names: list[str] = []
        rows_labels: list[int] = []
        rows_scores, rows_boxes = [], []
        for name in dict.fromkeys(names):
            label = self.class_ids[name]
            class_scores, class_boxes = scores[:, label], boxes[:, label]
            widths = class_boxes[:, 2] - class_boxes[:, 0]
            heights = class_boxes[:, 3] - class_boxes[:, 1]
            candidates = torch.nonzero(
                (class_scores >= self.presence_threshold) & (widths >= _MIN_BOX_SIDE) & (heights >= _MIN_BOX_SIDE)
            ).flatten()
            order = box_ops.nms(class_boxes[candidates], class_scores[candidates], nms_iou)
            chosen = candidates[order][: self.per_class_cap]
            rows_names += [name] * len(chosen)
            rows_labels += [label] * len(chosen)
            rows_scores.append(class_scores[chosen])
            rows_boxes.append(class_boxes[chosen])
        empty = torch.zeros((0, 4), device=self.device)
        return (
            rows_names,
            rows_labels,
            torch.cat(rows_scores) if rows_scores else torch.zeros(0, device=self.device),
            torch.cat(rows_boxes) if rows_boxes else empty,
        )

    def _mask_probabilities(
        self, features: Any, kept: list[_Kept], image_sizes: list[tuple[int, int]]
    ) -> list[np.ndarray | None]:
        """Per image: the 28 × 28 mask probabilities of each kept row's class (the mask head runs on those only)."""
        heads = self.network.roi_heads
        mask_features = heads.mask_head(heads.mask_roi_pool(features, [boxes for *_, boxes in kept], image_sizes))
        logits = heads.mask_predictor(mask_features).float()
        row_labels = torch.tensor([label for _, rows, _, _ in kept for label in rows], device=self.device)
        chosen = logits[torch.arange(len(row_labels), device=self.device), row_labels].sigmoid().cpu().numpy()
        return [part for part in np.split(chosen, np.cumsum([len(names) for names, *_ in kept])[:-1])]

    @torch.inference_mode()
    def masks(self, detections: sv.Detections, width: int, height: int) -> np.ndarray:
        """Mask R-CNN's own full-resolution masks (bool, rows × height × width) of these detections,
        pasted from `data["mask_probs"]` (kept by `detect(..., with_masks=True)`) into their boxes."""
        from torchvision.models.detection.roi_heads import paste_masks_in_image

        if "mask_probs" not in detections.data:
            raise ValueError("these detections carry no mask probabilities; detect them with with_masks=True")
        if len(detections) == 0:
            return np.zeros((0, height, width), dtype=bool)
        probs = torch.from_numpy(np.ascontiguousarray(detections.data["mask_probs"], dtype=np.float32))[:, None]
        boxes = torch.from_numpy(np.asarray(detections.xyxy, dtype=np.float32))
        pasted = paste_masks_in_image(probs, boxes, (height, width))
        return (pasted[:, 0] > MASK_THRESHOLD).numpy()


def _detections(
    images: Sequence[Frame],
    kept: list[_Kept],
    image_sizes: list[tuple[int, int]],
    probabilities: list[np.ndarray | None],
    with_masks: bool,
) -> list[sv.Detections]:
    """Each image's kept rows as `sv.Detections`, boxes in pixels of the original image."""
    import supervision as sv
    from torchvision.models.detection.transform import resize_boxes

    results = []
    for image, (names, labels, scores, boxes), size, probs in zip(
        images, kept, image_sizes, probabilities, strict=True
    ):
        xyxy = resize_boxes(boxes, list(size), list(frame_size(image)[::-1])).cpu().numpy().astype(np.float64)
        data: dict[str, Any] = {"class_name": np.array(names, dtype=str)}
        if with_masks:
            data["mask_probs"] = probs if probs is not None else np.zeros((0, 28, 28), np.float32)
        results.append(
            sv.Detections(
                xyxy=xyxy.reshape(-1, 4),
                confidence=scores.cpu().numpy().astype(np.float64),
                class_id=np.array(labels, dtype=int),
                data=data,
            )
        )
    return results


def _rgb(frame: Frame) -> Frame:
    return frame.convert("RGB") if isinstance(frame, Image.Image) and frame.mode != "RGB" else frame
