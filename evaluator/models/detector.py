"""RF-DETR Seg detection, filtered to the prompt's classes before any full-resolution mask work.

`rfdetr`'s `predict` upsamples a mask for every detection above its threshold (hundreds at the
benchmark's 0.03), so this module runs the model's forward itself, selects the top query/class
pairs the same way rfdetr's `PostProcess` does, keeps only the prompt's classes (at most
`per_class_cap` each), and upsamples a mask only for the instances a statement uses (`masks`).
Its output is one `supervision.Detections` per image, the type every later step reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F

from dataset_builder.vocabulary import OBJECT_CLASSES
from evaluator.models.inputs import DetectorInputs, Frame, frame_pixels, frame_size, one_thread
from negt2ibench.core.errors import UserError

if TYPE_CHECKING:
    import supervision as sv


class InstanceDetector(Protocol):
    """What perception uses of a detector: RF-DETR's `Detector` below, Mask R-CNN's
    `evaluator.models.maskrcnn.MaskRCNNDetector` (presets c1–c4)."""

    @property
    def inputs(self) -> DetectorInputs | None:
        """The batch input a loader worker can make (None: the detector makes its own in `detect`)."""
        ...

    def detect(
        self,
        images: Sequence[Frame],
        wanted: Sequence[Sequence[str]],
        *,
        with_masks: bool,
        pixel_values: torch.Tensor | None = None,
    ) -> list[sv.Detections]:
        """One `sv.Detections` per image: the kept detections of that image's wanted classes."""
        ...

    def masks(self, detections: sv.Detections, width: int, height: int) -> np.ndarray:
        """Full-resolution masks (bool, rows × height × width) of detections `detect` gave with masks."""
        ...


# COCO names (as in rfdetr.assets.coco_classes) that the benchmark spells differently (GenEval's names).
COCO_TO_BENCHMARK_NAME: dict[str, str] = {
    "mouse": "computer mouse",
    "remote": "tv remote",
    "keyboard": "computer keyboard",
}


def benchmark_class_ids(
    coco_classes: dict[int, str] | None = None, names: Sequence[str] = OBJECT_CLASSES
) -> dict[str, int]:
    """Benchmark class name → RF-DETR's (sparse COCO) class id, for NAMES (the 79 benchmark classes;
    GenEval's 80, `person` too)."""
    if coco_classes is None:
        from rfdetr.assets.coco_classes import COCO_CLASSES

        coco_classes = COCO_CLASSES
    by_name = {COCO_TO_BENCHMARK_NAME.get(name, name): class_id for class_id, name in coco_classes.items()}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise ValueError(f"benchmark classes without a COCO id: {', '.join(missing)}")
    return {name: by_name[name] for name in names}


def select_class_detections(
    probabilities: np.ndarray,
    class_ids: dict[str, int],
    *,
    num_select: int,
    threshold: float,
    per_class_cap: int,
) -> dict[str, list[tuple[int, float]]]:
    """Pick (query, score) pairs per wanted class from one image's sigmoid scores (queries × classes).

    Same selection as rfdetr's PostProcess (top `num_select` query/class pairs overall, ties by
    flat index), then only the wanted classes strictly above `threshold` (rfdetr's `predict` keeps
    `scores > threshold`), at most `per_class_cap` each.
    """
    num_classes = probabilities.shape[1]
    flat = probabilities.reshape(-1)
    order = np.argsort(-flat, kind="stable")[: min(num_select, flat.size)]
    return pick_classes(order, flat[order], num_classes, class_ids, threshold=threshold, per_class_cap=per_class_cap)


def top_pairs(probabilities: torch.Tensor, num_select: int) -> tuple[np.ndarray, np.ndarray]:
    """The top `num_select` query/class pairs of each image of a batch of sigmoid scores
    (B × queries × classes), sorted where the scores are (the device): their flat indices and
    scores, best first, ties by flat index, as `select_class_detections` orders them; only these
    B × num_select pairs come to the host."""
    flat = probabilities.flatten(1)
    order = torch.sort(flat.neg(), dim=1, stable=True).indices[:, : min(num_select, flat.shape[1])]
    return order.cpu().numpy(), flat.gather(1, order).cpu().numpy()


def pick_classes(
    order: np.ndarray,
    scores: np.ndarray,
    num_classes: int,
    class_ids: dict[str, int],
    *,
    threshold: float,
    per_class_cap: int,
) -> dict[str, list[tuple[int, float]]]:
    """From one image's top pairs (flat indices and scores, best first): per wanted class its
    (query, score) pairs, in that order, until the first score at or below `threshold`, at most
    `per_class_cap` each."""
    below = np.flatnonzero(scores <= threshold)
    stop = int(below[0]) if below.size else len(scores)  # sorted: nothing after it is above
    classes = order[:stop] % num_classes
    selected: dict[str, list[tuple[int, float]]] = {}
    for name, class_id in class_ids.items():
        rows = np.flatnonzero(classes == class_id)[:per_class_cap]
        selected[name] = [(int(order[row] // num_classes), float(scores[row])) for row in rows]
    return selected


COCO_LOGITS = 91  # RF-DETR's COCO head: sparse category ids 1..90 plus slot 0


def check_coco_checkpoint(rfdetr_model) -> None:
    """Refuse a loaded RF-DETR that is not the COCO model the benchmark's class ids assume.

    Class ids here are rfdetr's sparse COCO ids, read straight off the logit index; a checkpoint
    fine-tuned on other classes (another head size, or other class names in its `args`) would
    silently map its logits onto the wrong objects. rfdetr itself resizes the head to whatever
    the checkpoint holds, so this is checked after loading.
    """
    from rfdetr.assets.coco_classes import COCO_CLASS_NAMES

    head = rfdetr_model.model.model.class_embed
    logits = int(head.bias.shape[0]) if getattr(head, "bias", None) is not None else int(head.out_features)
    if logits != COCO_LOGITS:
        raise UserError(
            f"the RF-DETR checkpoint has {logits} class logits, not COCO's {COCO_LOGITS}: the benchmark needs "
            f"the COCO model (rf-detr-seg-xlarge.pt from `negt2ibench download-models`), not a fine-tuned one"
        )
    names = list(rfdetr_model.class_names)
    if names != list(COCO_CLASS_NAMES):
        different = [
            f"{ours!r}≠{theirs!r}" for ours, theirs in zip(names, COCO_CLASS_NAMES, strict=False) if ours != theirs
        ]
        detail = ", ".join(different[:3]) if different else f"{len(names)} names instead of {len(COCO_CLASS_NAMES)}"
        raise UserError(
            f"the RF-DETR checkpoint's class names are not COCO's ({detail}): the benchmark needs the COCO model "
            f"(rf-detr-seg-xlarge.pt from `negt2ibench download-models`)"
        )


def _cxcywh_to_xyxy(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    cx, cy, w, h = boxes.T
    xyxy = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1) * np.array([width, height, width, height])
    return np.clip(xyxy, 0, [width, height, width, height])


class Detector:
    """A loaded `rfdetr.RFDETRSeg*` model used below `predict`."""

    def __init__(
        self,
        rfdetr_model,
        *,
        presence_threshold: float,
        per_class_cap: int,
        device: torch.device,
        autocast_dtype: torch.dtype | None = None,
        class_ids: dict[str, int] | None = None,
    ):
        check_coco_checkpoint(rfdetr_model)
        self.rfdetr = rfdetr_model
        self.presence_threshold = presence_threshold
        self.per_class_cap = per_class_cap
        self.device = device
        self.autocast_dtype = autocast_dtype
        context = rfdetr_model.model
        context.device = device
        self.network = context.model.to(device).eval()
        self.resolution = int(context.resolution)
        self.num_select = int(getattr(context.postprocess, "num_select", 300))
        self.means = list(rfdetr_model.means)
        self.stds = list(rfdetr_model.stds)
        # The input as rfdetr's predict makes it; picklable, so loader workers can make it too.
        self.inputs = DetectorInputs(self.resolution, tuple(self.means), tuple(self.stds))
        self.class_ids = class_ids if class_ids is not None else benchmark_class_ids()  # GenEval's: 80

    def _preprocess(self, images: Sequence[Frame]) -> torch.Tensor:
        with one_thread(self.device):  # the floats of `InputPreparer`, whatever the thread count
            return torch.stack([self.inputs(frame_pixels(image, self.device)) for image in images])

    def _forward(self, batch: torch.Tensor) -> dict:
        """The network on a batch of inputs (bf16 autocast off the CPU when asked)."""
        if self.autocast_dtype is not None and self.device.type != "cpu":
            with torch.autocast(self.device.type, dtype=self.autocast_dtype):
                return self.network(batch)
        return self.network(batch)

    def _top_pairs(self, outputs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The top query/class pairs per image (`top_pairs`) and every query's box, on the host."""
        order, scores = top_pairs(outputs["pred_logits"].float().sigmoid(), self.num_select)
        return order, scores, outputs["pred_boxes"].float().cpu().numpy()

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

        Rows come class by class in the order of `wanted`, most confident first within a class:
        `xyxy` in pixels, `confidence`, `class_id` (RF-DETR's COCO id), `data["class_name"]`
        (the benchmark's class name) and `data["query"]` (the decoder query). `with_masks` adds
        `data["mask_logits"]`, RF-DETR's low-resolution mask logits of each row, so that
        `masks` can upsample the instances a statement uses, and only those. `pixel_values`: the
        batch as `self.inputs` makes it (e.g. in a loader worker); made here from `images` when None.
        """
        import supervision as sv  # imported on use: it is slow to import and rfdetr loads it anyway

        if not images:
            return []
        batch = self._preprocess(images) if pixel_values is None else pixel_values.to(self.device)
        outputs = self._forward(batch)
        order, scores, boxes_normalised = self._top_pairs(outputs)
        num_classes = int(outputs["pred_logits"].shape[-1])
        results = []
        for index, (image, names) in enumerate(zip(images, wanted, strict=False)):
            width, height = frame_size(image)
            unknown = [name for name in names if name not in self.class_ids]
            if unknown:
                raise ValueError(f"not a benchmark class: {', '.join(unknown)}")
            picked = pick_classes(
                order[index],
                scores[index],
                num_classes,
                {name: self.class_ids[name] for name in names},
                threshold=self.presence_threshold,
                per_class_cap=self.per_class_cap,
            )
            rows = [(name, query, score) for name, pairs in picked.items() for query, score in pairs]
            queries = [query for _, query, _ in rows]
            data: dict[str, Any] = {
                "class_name": np.array([name for name, _, _ in rows], dtype=str),
                "query": np.array(queries, dtype=int),
            }
            if with_masks:
                logits = outputs["pred_masks"][index, queries].float().cpu().numpy()
                data["mask_logits"] = logits.reshape(len(rows), *outputs["pred_masks"].shape[-2:])
            results.append(
                sv.Detections(
                    xyxy=_cxcywh_to_xyxy(boxes_normalised[index, queries], width, height) if rows else np.zeros((0, 4)),
                    confidence=np.array([score for _, _, score in rows], dtype=np.float64),
                    class_id=np.array([self.class_ids[name] for name, _, _ in rows], dtype=int),
                    data=data,
                )
            )
        return results

    @torch.inference_mode()
    def mask_tensors(self, detections: sv.Detections, width: int, height: int) -> torch.Tensor:
        """RF-DETR's own full-resolution masks (bool, rows × height × width, on the device) of these
        detections, upsampled from `data["mask_logits"]` (kept by `detect(..., with_masks=True)`)."""
        if "mask_logits" not in detections.data:
            raise ValueError("these detections carry no mask logits; detect them with with_masks=True")
        if not len(detections):
            return torch.zeros((0, height, width), dtype=torch.bool, device=self.device)
        low = torch.from_numpy(np.ascontiguousarray(detections.data["mask_logits"])).to(self.device)[:, None]
        upsampled = F.interpolate(low, size=(height, width), mode="bilinear", align_corners=False)
        return upsampled[:, 0] > 0

    def masks(self, detections: sv.Detections, width: int, height: int) -> np.ndarray:
        """`mask_tensors` on the host (numpy bool, rows × height × width)."""
        return self.mask_tensors(detections, width, height).cpu().numpy()
