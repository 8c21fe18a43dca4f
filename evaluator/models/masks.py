"""SAM 2.1 (transformers `Sam2Model`) masks from box prompts, one image embedding per image."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

Box = tuple[float, float, float, float]


class BoxSegmenter:
    """Refines detector boxes into masks: image embeddings batched, then each image's boxes at once."""

    def __init__(self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype

    @torch.inference_mode()
    def segment(self, images: Sequence[Image.Image], boxes: Sequence[Sequence[Box]]) -> list[list[np.ndarray]]:
        """For each image, one bool H×W mask per box (in the order given). Images without boxes are skipped."""
        results: list[list[np.ndarray]] = [[] for _ in images]
        todo = [index for index, image_boxes in enumerate(boxes) if image_boxes]
        if not todo:
            return results
        encoded = self.processor(images=[images[index] for index in todo], return_tensors="pt")
        pixel_values = encoded["pixel_values"].to(self.device, self.dtype)
        embeddings = self.model.get_image_embeddings(pixel_values)
        for position, index in enumerate(todo):
            height, width = images[index].height, images[index].width
            prompt = self.processor(
                input_boxes=[[list(map(float, box)) for box in boxes[index]]],
                original_sizes=[[height, width]],
                return_tensors="pt",
            )
            outputs = self.model(
                image_embeddings=[level[position : position + 1] for level in embeddings],
                input_boxes=prompt["input_boxes"].to(self.device, self.dtype),
                multimask_output=False,
            )
            masks = self.processor.post_process_masks(outputs.pred_masks.float().cpu(), prompt["original_sizes"])[0]
            results[index] = [mask[0].numpy().astype(bool) for mask in masks]
        return results
