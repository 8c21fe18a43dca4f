"""Depth-Anything V2 relative disparity (larger = nearer), resized to each image."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from evaluator.models.inputs import Frame, frame_pixels, frame_size, one_thread, processor_pixels


class DepthEstimator:
    def __init__(self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype

    def pixel_values(self, image: Frame) -> torch.Tensor:
        """The model's input for one image (3×h×w float32, aspect kept), made on this estimator's device."""
        with one_thread(self.device):  # the floats of `InputPreparer`, whatever the thread count
            return processor_pixels(self.processor, frame_pixels(image, self.device))

    @torch.inference_mode()
    def disparity(
        self, images: Sequence[Frame], *, pixel_values: Sequence[torch.Tensor | None] | None = None
    ) -> list[np.ndarray]:
        """Float32 H×W disparity per image; images of one size share a batch (the processor keeps aspect).

        `pixel_values`: each image's input as `pixel_values(image)` makes it (e.g. in a loader worker);
        made here where missing. The maps are resized to the images on the model's device (bicubic,
        as the processor's `post_process_depth_estimation`) and come to the host in one copy per size.
        """
        results: dict[int, np.ndarray] = {}  # image index → its depth map; every index is in one size group
        by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
        for index, image in enumerate(images):
            by_size[frame_size(image)].append(index)
        for (width, height), indices in by_size.items():
            given = [pixel_values[index] if pixel_values is not None else None for index in indices]
            inputs = torch.stack(
                [
                    tensor if tensor is not None else self.pixel_values(images[index])
                    for index, tensor in zip(indices, given, strict=True)
                ]
            )
            maps = self._maps(inputs, height, width)
            for position, index in enumerate(indices):
                results[index] = maps[position]
        return [results[index] for index in range(len(images))]

    def _maps(self, inputs: torch.Tensor, height: int, width: int) -> np.ndarray:
        """The model on a batch of one image size, its maps resized to that size (B × H × W float32),
        copied to the host at once."""
        predicted = self.model(pixel_values=inputs.to(self.device, self.dtype)).predicted_depth.float()
        resized = F.interpolate(predicted[:, None], size=(height, width), mode="bicubic", align_corners=False)
        return resized[:, 0].cpu().numpy()
