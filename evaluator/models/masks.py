"""SAM 2.1 (transformers `Sam2Model`) masks from box prompts: one image embedding per image, and
one decoder call per batch.

The decoder takes every image of a batch at once, each image's box list padded to the longest
with copies of its last box (the processor refuses ragged box lists; a box's mask does not
depend on the other boxes, and the copies' masks are dropped). Batched, the decoder's logits
move by float rounding only (≈1e-11 on the tests' tiny model, 1e-8 on the full-size one, on
this CPU); masks are those logits thresholded at 0, so they stay the same unless a pixel's
logit sits that close to 0 (tests/evaluator/test_device_path.py compares the masks with per-image calls).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from evaluator.models.inputs import Frame, frame_pixels, frame_size, one_thread, processor_pixels, to_host

Box = tuple[float, float, float, float]
# Masks brought to full resolution at once: a few, so the float32 planes (4 MiB each at 1024²)
# stay in the caches between the upsampling and the threshold (32 at once was slower on a CPU).
UPSAMPLE_PLANES = 4


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
            todo_sizes = [sizes[index] for index in todo]
            prompt = self._prompt_boxes([boxes[index] for index in todo], todo_sizes)
            low = self._decoder(self._embed(torch.stack(inputs)), prompt)  # images × longest × 1 × h × w logits
            counts = [len(boxes[index]) for index in todo]
            for index, masks in zip(todo, self._upsample(low, counts, todo_sizes), strict=True):
                device_masks[index] = masks
        return self._to_host(device_masks), device_masks

    @torch.inference_mode()
    def _embed(self, inputs: torch.Tensor) -> list[torch.Tensor]:
        return self.model.get_image_embeddings(inputs.to(self.device, self.dtype))

    def _prompt_boxes(self, boxes: Sequence[Sequence[Box]], sizes: Sequence[tuple[int, int]]) -> torch.Tensor:
        """The boxes padded to the longest list (copies of each list's last box) and scaled to SAM's
        input size by the processor, as one (images × longest × 4) float32 tensor on the host."""
        longest = max(len(image_boxes) for image_boxes in boxes)
        padded = []
        for image_boxes in boxes:
            listed = [list(map(float, box)) for box in image_boxes]
            padded.append(listed + [listed[-1]] * (longest - len(listed)))
        prompt = self.processor(input_boxes=padded, original_sizes=[list(size) for size in sizes], return_tensors="pt")
        return prompt["input_boxes"]

    @torch.inference_mode()
    def _decoder(self, embeddings: list[torch.Tensor], input_boxes: torch.Tensor) -> torch.Tensor:
        outputs = self.model(
            image_embeddings=embeddings, input_boxes=input_boxes.to(self.device, self.dtype), multimask_output=False
        )
        return outputs.pred_masks

    @torch.inference_mode()
    def _upsample(
        self, low: torch.Tensor, counts: Sequence[int], sizes: Sequence[tuple[int, int]]
    ) -> list[torch.Tensor]:
        """Each image's masks (its `counts` boxes × H × W, bool) from its logits, the padding's left
        out: bilinear to its size and > 0, as the processor's `post_process_masks`, images of one
        size together (about UPSAMPLE_PLANES masks at a time)."""
        results: dict[int, torch.Tensor] = {}  # image index → its masks; every index is in one chunk
        by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
        for index, size in enumerate(sizes):
            by_size[size].append(index)
        for size, indices in by_size.items():
            chunks: list[list[int]] = []
            chunk: list[int] = []
            planes = 0
            for index in indices:
                if chunk and planes + counts[index] > UPSAMPLE_PLANES:
                    chunks.append(chunk)
                    chunk, planes = [], 0
                chunk.append(index)
                planes += counts[index]
            chunks.append(chunk)
            for chunk in chunks:
                logits = torch.cat([low[index, : counts[index]] for index in chunk]).float()  # masks × 1 × h × w
                masks = F.interpolate(logits, size, mode="bilinear", align_corners=False)[:, 0] > 0.0
                for index, image_masks in zip(chunk, masks.split([counts[index] for index in chunk]), strict=True):
                    results[index] = image_masks
        return [results[index] for index in range(len(sizes))]

    @staticmethod
    def _to_host(masks: list[torch.Tensor]) -> list[np.ndarray]:
        return to_host(masks)
