"""SAM 2.1 (transformers `Sam2Model`) masks from box prompts, one image embedding per image."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from evaluator.models.inputs import image_pixels, one_thread, processor_pixels

Box = tuple[float, float, float, float]


class BoxSegmenter:
    """Refines detector boxes into masks: image embeddings batched, then each image's boxes at once."""

    def __init__(self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype

    def pixel_values(self, image: Image.Image) -> torch.Tensor:
        """SAM's input for one image (3×S×S float32), made on this segmenter's device."""
        with one_thread(self.device):  # the floats of `InputPreparer`, whatever the thread count
            return processor_pixels(self.processor, image_pixels(image, self.device))

    @torch.inference_mode()
    def segment(
        self,
        images: Sequence[Image.Image],
        boxes: Sequence[Sequence[Box]],
        *,
        pixel_values: Sequence[torch.Tensor | None] | None = None,
    ) -> list[list[np.ndarray]]:
        """For each image, one bool H×W mask per box (in the order given). Images without boxes are skipped.

        `pixel_values`: each image's input as `pixel_values(image)` makes it (e.g. in a loader worker);
        made here where missing. Masks are upsampled to the image's size on the model's device.
        """
        results: list[list[np.ndarray]] = [[] for _ in images]
        todo = [index for index, image_boxes in enumerate(boxes) if image_boxes]
        if not todo:
            return results
        given = [pixel_values[index] if pixel_values is not None else None for index in todo]
        inputs = [
            tensor if tensor is not None else self.pixel_values(images[index])
            for index, tensor in zip(todo, given, strict=True)
        ]
        embeddings = self.model.get_image_embeddings(torch.stack(inputs).to(self.device, self.dtype))
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
            # Upsampled and thresholded where the logits are (the GPU, on one), then copied as bool.
            masks = self.processor.post_process_masks(outputs.pred_masks.float(), prompt["original_sizes"])[0].cpu()
            results[index] = [mask[0].numpy().astype(bool) for mask in masks]
        return results
