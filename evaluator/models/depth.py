"""Depth-Anything V2 relative disparity (larger = nearer), resized to each image."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image


class DepthEstimator:
    def __init__(self, model, processor, *, device: torch.device, dtype: torch.dtype = torch.float32):
        self.model = model.to(device=device, dtype=dtype).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype

    @torch.inference_mode()
    def disparity(self, images: Sequence[Image.Image]) -> list[np.ndarray]:
        """Float32 H×W disparity per image; images of one size share a batch (the processor keeps aspect)."""
        results: list[np.ndarray | None] = [None] * len(images)
        by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
        for index, image in enumerate(images):
            by_size[image.size].append(index)
        for (width, height), indices in by_size.items():
            inputs = self.processor(images=[images[index] for index in indices], return_tensors="pt")
            outputs = self.model(pixel_values=inputs["pixel_values"].to(self.device, self.dtype))
            outputs.predicted_depth = outputs.predicted_depth.float()
            resized = self.processor.post_process_depth_estimation(
                outputs, target_sizes=[(height, width)] * len(indices)
            )
            for index, item in zip(indices, resized, strict=False):
                results[index] = item["predicted_depth"].cpu().numpy().astype(np.float32)
        return results  # type: ignore[return-value]
