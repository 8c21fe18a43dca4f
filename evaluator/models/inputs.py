"""The models' inputs made from one image, wherever that runs: a loader worker, or the device.

Every model's preprocessing starts from the same tensor, the image as uint8 3×H×W
(`image_pixels`): RF-DETR's square resize and normalisation (`DetectorInputs`), SAM 2.1's and
Depth-Anything V2's transformers image processors (`processor_pixels`, the torchvision backend
that transformers 5 uses by default). On the CPU, `InputPreparer` runs in the loader's worker
processes, off the process that runs the models; on a GPU it runs in that process with the
pixels uploaded once and every resize done on the device (the processors' `device=`). The
models compute the same function when no prepared input is handed to them, and CPU inputs are
always made with one intra-op thread (as in a DataLoader worker: some CPU kernels, the float
resize among them, round differently with another thread count), so a worker and the main
process give identical tensors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torchvision.transforms.functional as TF
from PIL import Image


@contextmanager
def one_thread(device: torch.device | None) -> Iterator[None]:
    """torch's intra-op threads at 1 while inputs are made on the CPU (nothing changes on a GPU):
    the same thread count as the loader's workers, hence the same floats wherever they are made."""
    threads = torch.get_num_threads()
    if (device is not None and device.type != "cpu") or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def image_pixels(image: Image.Image, device: torch.device | None = None) -> torch.Tensor:
    """The 8-bit RGB image as a uint8 3×H×W tensor (on `device` when given: one upload per image)."""
    pixels = TF.pil_to_tensor(image)
    return pixels if device is None else pixels.to(device, non_blocking=True)


def device_kwargs(device: torch.device | None) -> dict[str, Any]:
    """`device=` for a transformers torchvision-backend image processor off the CPU (resize, rescale
    and normalise then run there); nothing on the CPU, where the input tensors already are."""
    return {"device": device} if device is not None and device.type != "cpu" else {}


def processor_pixels(processor, pixels: torch.Tensor) -> torch.Tensor:
    """One image through a transformers image processor: its `pixel_values` (float32 C×h×w), computed
    on the device the pixels are on."""
    return processor(images=[pixels], return_tensors="pt", **device_kwargs(pixels.device))["pixel_values"][0]


@dataclass(frozen=True)
class DetectorInputs:
    """RF-DETR's input as its `predict` makes it: [0, 1] floats, a square resize to the model's
    resolution without antialiasing, ImageNet normalisation. Holds no model, so it can travel
    to a worker process."""

    resolution: int
    means: tuple[float, ...]
    stds: tuple[float, ...]

    def __call__(self, pixels: torch.Tensor) -> torch.Tensor:
        scaled = TF.resize(pixels.float().div_(255.0), [self.resolution] * 2, antialias=False)
        return TF.normalize(scaled, list(self.means), list(self.stds))


@dataclass(frozen=True)
class PreparedImage:
    """The models' inputs for one image (float32, on the CPU in a worker, on the device otherwise);
    None where that model does not run on this image or prepares its own input."""

    detector: torch.Tensor | None = None  # 3×R×R
    sam: torch.Tensor | None = None  # 3×S×S, when the preset uses SAM
    depth: torch.Tensor | None = None  # 3×h×w (aspect kept), depth prompts only


@dataclass(frozen=True)
class InputPreparer:
    """Makes `PreparedImage`s: the detector's input always, SAM's when the preset uses it, the depth
    model's for depth prompts. Picklable: the image processors and sizes, no model weights."""

    detector: DetectorInputs | None = None
    sam_processor: Any = None
    depth_processor: Any = None

    def __call__(self, image: Image.Image, category: str, device: torch.device | None = None) -> PreparedImage:
        with one_thread(device):
            return self._prepare(image_pixels(image, device), category)

    def _prepare(self, pixels: torch.Tensor, category: str) -> PreparedImage:
        return PreparedImage(
            detector=self.detector(pixels) if self.detector is not None else None,
            sam=processor_pixels(self.sam_processor, pixels) if self.sam_processor is not None else None,
            depth=(
                processor_pixels(self.depth_processor, pixels)
                if self.depth_processor is not None and category == "depth"
                else None
            ),
        )


def stacked(tensors: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    """The tensors as one batch, or None when any is missing (the model then prepares its own)."""
    if not tensors or any(tensor is None for tensor in tensors):
        return None
    return torch.stack(list(tensors))
