"""SAM 2.1 (transformers `Sam2Model`) masks from box prompts: one image embedding per image, and
one decoder call per batch.

The decoder takes every image of a batch at once, each image's box list padded to the longest
with copies of its last box (the processor refuses ragged box lists; a box's mask does not
depend on the other boxes, and the copies' masks are dropped). Batched, the decoder's logits
move by float rounding only (≈1e-11 on the tests' tiny model, 1e-8 on the full-size one, on
this CPU); masks are those logits thresholded at 0, so they stay the same unless a pixel's
logit sits that close to 0 (tests/test_device_path.py compares the masks with per-image calls).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from evaluator.models.inputs import Frame, frame_pixels, frame_size, one_thread, processor_pixels, to_host

Box = tuple[float, float, float, float]
UPSAMPLE_PLANES = 32  # masks brought to full resolution at once (float32 planes: 128 MiB at 1024²)


class BoxSegmenter:
    """Refines detector boxes into masks: image embeddings batched, then all images' boxes at once."""

    def __init__(self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype

    def pixel_values(self, image: Frame) -> torch.Tensor:
        """SAM's input for one image (3×S×S float32), made on this segmenter's device."""
        with one_thread(self.device):  # the floats of `InputPreparer`, whatever the thread count
            return processor_pixels(self.processor, frame_pixels(image, self.device))

    def segment(
        self,
        images: Sequence[Frame],
        boxes: Sequence[Sequence[Box]],
        *,
        pixel_values: Sequence[torch.Tensor | None] | None = None,
    ) -> list[list[np.ndarray]]:
        """For each image, one bool H×W mask per box (in the order given). Images without boxes are skipped.

        `pixel_values`: each image's input as `pixel_values(image)` makes it (e.g. in a loader worker);
        made here where missing. Masks are upsampled to the image's size on the model's device.
        """
        return [list(masks) for masks in self.segment_arrays(images, boxes, pixel_values=pixel_values)[0]]

    def segment_arrays(
        self,
        images: Sequence[Frame],
        boxes: Sequence[Sequence[Box]],
        *,
        pixel_values: Sequence[torch.Tensor | None] | None = None,
    ) -> tuple[list[np.ndarray], list[torch.Tensor]]:
        """`segment`'s masks as one bool (boxes × H × W) array per image (on the host, all copied in
        one transfer), and the same masks where the model runs (for the crops made there)."""
        sizes = [frame_size(image)[::-1] for image in images]  # (height, width)
        device_masks = [torch.zeros((0, *size), dtype=torch.bool, device=self.device) for size in sizes]
        todo = [index for index, image_boxes in enumerate(boxes) if image_boxes]
        if todo:
            given = [pixel_values[index] if pixel_values is not None else None for index in todo]
            inputs = [
                tensor if tensor is not None else self.pixel_values(images[index])
                for index, tensor in zip(todo, given, strict=True)
            ]
            low = self._decode(self._embed(torch.stack(inputs)), [boxes[index] for index in todo], sizes, todo)
            for position, masks in enumerate(self._upsample(low, [sizes[index] for index in todo])):
                device_masks[todo[position]] = masks[: len(boxes[todo[position]])]
        return to_host(device_masks), device_masks

    @torch.inference_mode()
    def _embed(self, inputs: torch.Tensor) -> list[torch.Tensor]:
        return self.model.get_image_embeddings(inputs.to(self.device, self.dtype))

    @torch.inference_mode()
    def _decode(
        self,
        embeddings: list[torch.Tensor],
        boxes: Sequence[Sequence[Box]],
        sizes: Sequence[tuple[int, int]],
        indices: Sequence[int],
    ) -> torch.Tensor:
        """Low-resolution mask logits (images × longest box list × 1 × h × w) of every box at once."""
        longest = max(len(image_boxes) for image_boxes in boxes)
        padded = [
            [list(map(float, box)) for box in image_boxes]
            + [list(map(float, image_boxes[-1]))] * (longest - len(image_boxes))
            for image_boxes in boxes
        ]
        prompt = self.processor(  # the processor scales the boxes to SAM's input size, per image
            input_boxes=padded, original_sizes=[list(sizes[index]) for index in indices], return_tensors="pt"
        )
        outputs = self.model(
            image_embeddings=embeddings,
            input_boxes=prompt["input_boxes"].to(self.device, self.dtype),
            multimask_output=False,
        )
        return outputs.pred_masks

    @torch.inference_mode()
    def _upsample(self, low: torch.Tensor, sizes: Sequence[tuple[int, int]]) -> list[torch.Tensor]:
        """Each image's masks (longest × H × W bool) from its logits: bilinear to its size and > 0, as
        the processor's `post_process_masks`, images of one size together (at most UPSAMPLE_PLANES
        planes at a time)."""
        results: list[torch.Tensor | None] = [None] * len(sizes)
        by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
        for index, size in enumerate(sizes):
            by_size[size].append(index)
        per_image = max(1, UPSAMPLE_PLANES // low.shape[1])
        for size, indices in by_size.items():
            for start in range(0, len(indices), per_image):
                chunk = indices[start : start + per_image]
                planes = low[chunk].float().flatten(0, 1)  # (images × boxes) × 1 × h × w
                masks = F.interpolate(planes, size, mode="bilinear", align_corners=False) > 0.0
                for position, index in enumerate(chunk):
                    results[index] = masks.view(len(chunk), low.shape[1], *size)[position]
        return results  # type: ignore[return-value]
