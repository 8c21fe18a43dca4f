"""Depth-Anything V2 relative disparity (larger = nearer), resized to each image."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from evaluator.models.inputs import image_pixels, one_thread, processor_pixels


class DepthEstimator:
    def __init__(self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype

    def pixel_values(self, image: Image.Image) -> torch.Tensor:
        """The model's input for one image (3×h×w float32, aspect kept), made on this estimator's device."""
        with one_thread(self.device):  # the floats of `InputPreparer`, whatever the thread count
            return processor_pixels(self.processor, image_pixels(image, self.device))

    @torch.inference_mode()
    def disparity(
        self, images: Sequence[Image.Image], *, pixel_values: Sequence[torch.Tensor | None] | None = None
    ) -> list[np.ndarray]:
        """Float32 H×W disparity per image; images of one size share a batch (the processor keeps aspect).

        `pixel_values`: each image's input as `pixel_values(image)` makes it (e.g. in a loader worker);
        made here where missing. The map is resized to the image on the model's device.
        """
        results: list[np.ndarray | None] = [None] * len(images)
        by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
        for index, image in enumerate(images):
            by_size[image.size].append(index)
        for (width, height), indices in by_size.items():
            given = [pixel_values[index] if pixel_values is not None else None for index in indices]
            inputs = torch.stack(
                [
                    tensor if tensor is not None else self.pixel_values(images[index])
                    for index, tensor in zip(indices, given, strict=True)
                ]
            )
            outputs = self.model(pixel_values=inputs.to(self.device, self.dtype))
            outputs.predicted_depth = outputs.predicted_depth.float()
            resized = self.processor.post_process_depth_estimation(
                outputs, target_sizes=[(height, width)] * len(indices)
            )
            for index, item in zip(indices, resized, strict=False):
                results[index] = item["predicted_depth"].cpu().numpy().astype(np.float32)
        return results  # type: ignore[return-value]
