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

An image reaches the models as a *frame*: a PIL image, or its pixels as a uint8 H×W×3 tensor
(what the loader's workers send through shared memory), so that the process running the models
never builds a PIL image only to take its pixels out again (`frame_pixels`, `frame_size`). On the
device, `InputPreparer.prepare_batch` makes a whole batch's inputs at once from the uploaded
pixels: one resize per model and image size instead of one per image, the same floats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
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


Frame: TypeAlias = Image.Image | torch.Tensor  # an 8-bit RGB image, or its uint8 H×W×3 pixels


def frame_size(frame: Frame) -> tuple[int, int]:
    """(width, height) of a frame."""
    if isinstance(frame, Image.Image):
        return frame.size
    return int(frame.shape[1]), int(frame.shape[0])


def frame_pixels(frame: Frame, device: torch.device | None = None) -> torch.Tensor:
    """The frame as a uint8 3×H×W tensor (a view of a tensor frame; on `device` when given: one
    upload per image). Both forms give the same values (`TF.pil_to_tensor` of the PIL image)."""
    if isinstance(frame, Image.Image):
        pixels = TF.pil_to_tensor(frame)
    else:
        if frame.dtype != torch.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(f"a frame tensor must be uint8 H×W×3, got {frame.dtype} {tuple(frame.shape)}")
        pixels = frame.permute(2, 0, 1)
    return pixels if device is None else pixels.to(device, non_blocking=True)


def image_pixels(image: Frame, device: torch.device | None = None) -> torch.Tensor:
    """The 8-bit RGB image as a uint8 3×H×W tensor (on `device` when given: one upload per image)."""
    return frame_pixels(image, device)


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
        """One image (3×H×W) or a batch of one size (B×3×H×W); a batch gives each image's floats."""
        scaled = TF.resize(pixels.float().div_(255.0), [self.resolution] * 2, antialias=False)
        return TF.normalize(scaled, list(self.means), list(self.stds))


@dataclass(frozen=True)
class PreparedImage:
    """The models' inputs for one image (float32, on the CPU in a worker, on the device otherwise);
    None where that model does not run on this image or prepares its own input."""

    detector: torch.Tensor | None = None  # 3×R×R
    sam: torch.Tensor | None = None  # 3×S×S, when the preset uses SAM
    depth: torch.Tensor | None = None  # 3×h×w (aspect kept), depth prompts only

    FIELDS = ("detector", "sam", "depth")


@dataclass(frozen=True)
class InputPreparer:
    """Makes `PreparedImage`s: the detector's input always, SAM's when the preset uses it, the depth
    model's for depth prompts. Picklable: the image processors and sizes, no model weights."""

    detector: DetectorInputs | None = None
    sam_processor: Any = None
    depth_processor: Any = None

    def __call__(self, image: Frame, category: str, device: torch.device | None = None) -> PreparedImage:
        with one_thread(device):
            return self._prepare(frame_pixels(image, device), category)

    def prepare_batch(self, pixels: Sequence[torch.Tensor], categories: Sequence[str]) -> list[PreparedImage]:
        """The inputs of a batch from its uint8 3×H×W pixels (on the device they are on): each model's
        preprocessing runs once per image size over the stacked batch, not once per image, and
        gives each image the tensors `__call__` gives it alone."""
        if len(pixels) != len(categories):
            raise ValueError(f"{len(pixels)} images but {len(categories)} categories")
        made: dict[str, list[torch.Tensor | None]] = {name: [None] * len(pixels) for name in PreparedImage.FIELDS}
        depth = [self.depth_processor is not None and category == "depth" for category in categories]
        device = pixels[0].device if pixels else None
        # On the CPU one image at a time: a stacked batch of 1024² floats outgrows the caches and is
        # slower than the same work image by image; on a GPU, one kernel per model and size.
        per_group = 1 if device is None or device.type == "cpu" else len(pixels)
        with one_thread(device):
            for indices in _by_shape(pixels, per_group):
                if self.detector is not None:
                    _spread(made["detector"], indices, self.detector(torch.stack([pixels[i] for i in indices])))
                if self.sam_processor is not None:
                    _spread(made["sam"], indices, _processed(self.sam_processor, [pixels[i] for i in indices]))
                wanted = [i for i in indices if depth[i]]
                if wanted:
                    _spread(made["depth"], wanted, _processed(self.depth_processor, [pixels[i] for i in wanted]))
        return [
            PreparedImage(detector=made["detector"][i], sam=made["sam"][i], depth=made["depth"][i])
            for i in range(len(pixels))
        ]

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


def _by_shape(tensors: Sequence[torch.Tensor], limit: int) -> list[list[int]]:
    """The positions of the tensors grouped by shape, at most `limit` to a group."""
    groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for index, tensor in enumerate(tensors):
        groups[tuple(tensor.shape)].append(index)
    return [indices[start : start + limit] for indices in groups.values() for start in range(0, len(indices), limit)]


def _processed(processor, pixels: list[torch.Tensor]) -> torch.Tensor:
    """A transformers image processor over a list of images of one size, where they are."""
    return processor(images=pixels, return_tensors="pt", **device_kwargs(pixels[0].device))["pixel_values"]


def _spread(into: list, indices: Sequence[int], batch: torch.Tensor) -> None:
    for position, index in enumerate(indices):
        into[index] = batch[position]


def stacked(tensors: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    """The tensors as one batch, or None when any is missing (the model then prepares its own)."""
    present = [tensor for tensor in tensors if tensor is not None]
    if not tensors or len(present) != len(tensors):
        return None
    return torch.stack(present)


def to_host(tensors: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """The tensors as numpy arrays, copied from the device in one transfer (views on the CPU)."""
    if not tensors or all(tensor.device.type == "cpu" for tensor in tensors):
        return [tensor.numpy() for tensor in tensors]
    counts = [tensor.numel() for tensor in tensors]
    flat = torch.cat([tensor.reshape(-1) for tensor in tensors]).cpu().numpy()
    arrays, start = [], 0
    for tensor, count in zip(tensors, counts, strict=True):
        arrays.append(flat[start : start + count].reshape(tuple(tensor.shape)))
        start += count
    return arrays
