"""The representative inputs of the GPU benchmark (issue 25): what a real image gives the models.

- `representative(perception)` makes the detector's real forward run and then replaces its output
  by one seeded box per prompt object inside the image, so SAM, the SigLIP crops and
  Depth-Anything do the work a real image gives them (random weights detect next to nothing);
  SAM's masks are then replaced by the ellipse in each box (random weights give noise).
- `corpus_prompts(count)` draws prompts from the real corpus, categories in turn (the corpus has
  800 of each of the six); `corpus_mix` and `corpus_expectation` weigh per-unit FLOPs by its mix.
- `frames(count, size)`: photographs from `skimage.data`, shifted, as the images.

The benchmark's own work here is timed as `device_stages.BENCH_STAGE`, apart from the scorer's.
"""

from __future__ import annotations

import zlib
from collections import defaultdict

import device_stages
import numpy as np
import torch
from PIL import Image

DISTINCT_FRAMES = 16  # photographs × shifts; the images cycle through them


def _probe(frame) -> bytes:
    """A few pixels of a frame (PIL image or uint8 H×W×3 tensor): a cheap seed for its boxes."""
    if isinstance(frame, torch.Tensor):
        height, width = int(frame.shape[0]), int(frame.shape[1])
        points = [(width * i // 9, height * (8 - i) // 9) for i in range(1, 9)]
        return bytes(int(v) for x, y in points for v in frame[y, x].tolist())
    width, height = frame.size
    return bytes(v for i in range(1, 9) for v in frame.getpixel((width * i // 9, height * (8 - i) // 9)))


def _size(frame) -> tuple[int, int]:
    return (int(frame.shape[1]), int(frame.shape[0])) if isinstance(frame, torch.Tensor) else frame.size


def seeded_boxes(frame, names, width: int, height: int) -> list[tuple[float, float, float, float, float]]:
    """One (x0, y0, x1, y1, confidence) per name, inside the image, 15–60 % of each side, seeded
    by the frame's pixels and the names (the same image and prompt give the same boxes)."""
    seed = zlib.crc32(_probe(frame) + "|".join(names).encode())
    rng = np.random.default_rng(seed)
    boxes = []
    for _ in names:
        w, h = rng.uniform(0.15, 0.6) * width, rng.uniform(0.15, 0.6) * height
        x0, y0 = rng.uniform(0, width - w), rng.uniform(0, height - h)
        boxes.append((x0, y0, x0 + w, y0 + h, float(rng.uniform(0.5, 0.95))))
    return boxes


def ellipses(boxes, height: int, width: int, device) -> torch.Tensor:
    """Bool (boxes × H × W) masks of the ellipse inscribed in each (x0, y0, x1, y1) box: the compact
    shape of an object's mask, made on `device`."""
    if not len(boxes):
        return torch.zeros((0, height, width), dtype=torch.bool, device=device)
    box = torch.tensor([list(map(float, b)) for b in boxes], dtype=torch.float32, device=device)
    ys = torch.arange(height, device=device, dtype=torch.float32)[None, :, None] + 0.5
    xs = torch.arange(width, device=device, dtype=torch.float32)[None, None, :] + 0.5
    cx, cy = (box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2
    rx, ry = ((box[:, 2] - box[:, 0]) / 2).clamp(min=0.5), ((box[:, 3] - box[:, 1]) / 2).clamp(min=0.5)
    dx = (xs - cx[:, None, None]) / rx[:, None, None]
    dy = (ys - cy[:, None, None]) / ry[:, None, None]
    return dx * dx + dy * dy <= 1.0


def representative(perception, *, masks: str = "ellipses") -> None:
    """Make the detector's real forward run, then report one seeded box per prompt object (SAM presets).

    `masks="ellipses"`: SAM runs on those boxes as on any image, then its masks are replaced by the
    ellipse inscribed in each box. SAM with random weights returns noise, whose ragged outline
    costs the relation rules many times what an object's compact mask costs (the depth rule's
    facing window: ~60 ms against ~3 ms at 1024²), so the rules do a real image's work on these;
    `masks="sam"` keeps SAM's own."""
    import supervision as sv

    detector = perception.detector
    real = detector.detect

    def replaced(images, wanted, *, with_masks, **options):
        found = real(images, wanted, with_masks=with_masks, **options)
        if with_masks:
            raise SystemExit("the representative benchmark needs a SAM preset (the masks come from SAM)")

        def boxes():
            out = []
            for frame, names in zip(images, wanted, strict=True):
                width, height = _size(frame)
                rows = seeded_boxes(frame, list(names), width, height)
                out.append(
                    sv.Detections(
                        xyxy=np.array([row[:4] for row in rows], dtype=np.float64).reshape(-1, 4),
                        confidence=np.array([row[4] for row in rows], dtype=np.float64),
                        class_id=np.array([detector.class_ids[name] for name in names], dtype=int),
                        data={
                            "class_name": np.array(list(names), dtype=str),
                            "query": np.arange(len(names), dtype=int),
                        },
                    )
                )
            return out

        del found
        return _bench(boxes)

    detector.detect = replaced  # an instance attribute shadows the method
    if masks == "ellipses":
        _ellipse_masks(perception)
    elif masks != "sam":
        raise ValueError(f"masks must be 'ellipses' or 'sam', got {masks!r}")


def _bench(function, *args):
    """`function(*args)` timed as the benchmark's own stage by the clock attached now, if any."""
    clock = device_stages._ACTIVE
    return clock.call(device_stages.BENCH_STAGE, function, *args) if clock is not None else function(*args)


def _ellipse_masks(perception) -> None:
    segmenter = perception.segmenter
    device = segmenter.device

    def shapes(images, boxes):
        made = [
            ellipses(image_boxes, *_size(frame)[::-1], device) for frame, image_boxes in zip(images, boxes, strict=True)
        ]
        return made

    if hasattr(segmenter, "segment_arrays"):
        real = segmenter.segment_arrays

        def segment_arrays(images, boxes, **options):
            real(images, boxes, **options)
            made = _bench(shapes, images, boxes)
            return _bench(lambda: [mask.cpu().numpy() for mask in made]), made

        segmenter.segment_arrays = segment_arrays
    else:  # the code before issue 25
        real_segment = segmenter.segment

        def segment(images, boxes, **options):
            real_segment(images, boxes, **options)
            return _bench(lambda: [list(mask.cpu().numpy()) for mask in shapes(images, boxes)])

        segmenter.segment = segment


def corpus_prompts(count: int, seed: int = 0) -> list:
    """`count` prompts of the real corpus, the six categories in turn, each drawn at random (seeded)."""
    from dataset_builder.corpus import build_corpus

    by_category: dict[str, list] = defaultdict(list)
    for record in build_corpus():
        by_category[record.category].append(record)
    rng = np.random.default_rng(seed)
    order = {category: rng.permutation(len(records)) for category, records in by_category.items()}
    categories = sorted(by_category)
    return [
        by_category[categories[n % len(categories)]][int(order[categories[n % len(categories)]][n // len(categories)])]
        for n in range(count)
    ]


def frames(count: int, size: int) -> list[Image.Image]:
    """`count` size² RGB images cycling through DISTINCT_FRAMES shifted photographs."""
    from scoring_throughput import photos

    pictures = [Image.fromarray(picture).convert("RGB").resize((size, size), Image.BICUBIC) for picture in photos()]
    distinct = []
    for number in range(DISTINCT_FRAMES):
        pixels = np.asarray(pictures[number % len(pictures)])
        distinct.append(Image.fromarray(np.roll(pixels, (number // len(pictures)) * size // 4, axis=1)))
    return [distinct[number % len(distinct)] for number in range(count)]


def per_unit(totals: dict[str, int], images: int, crops: int, prompts) -> dict[str, float | None]:
    """FLOPs per unit of work: the detector, SAM and the inputs per image, SigLIP per crop, Depth-Anything
    per depth image (the crops stage is no matmul work)."""
    depth_images = sum(prompt.category == "depth" for prompt in prompts)
    return {
        "inputs_per_image": totals.get("inputs", 0) / images,
        "detector_per_image": totals.get("detector", 0) / images,
        "sam_per_image": totals.get("sam", 0) / images,
        "sam_decoder_per_image": totals.get("sam_decoder", 0) / images,
        "siglip_per_crop": totals.get("siglip", 0) / crops if crops else None,
        "depth_per_depth_image": totals.get("depth", 0) / depth_images if depth_images else None,
    }


def corpus_expectation(unit: dict[str, float | None], corpus: dict[str, float]) -> float | None:
    """FLOPs of an average image of the corpus: the per-unit figures weighted by the corpus's mix."""
    if unit["siglip_per_crop"] is None or unit["depth_per_depth_image"] is None:
        return None
    return (
        unit["inputs_per_image"]
        + unit["detector_per_image"]
        + unit["sam_per_image"]
        + unit["sam_decoder_per_image"]
        + corpus["crops_per_image"] * unit["siglip_per_crop"]
        + corpus["depth_share"] * unit["depth_per_depth_image"]
    )


def corpus_mix() -> dict[str, float]:
    """The corpus's crops per image (attribute prompts: one per object) and share of depth prompts."""
    from dataset_builder.corpus import build_corpus

    records = build_corpus()
    crops = sum(len(dict.fromkeys(r.objects)) for r in records if r.kind == "attribute")
    return {
        "crops_per_image": crops / len(records),
        "depth_share": sum(r.category == "depth" for r in records) / len(records),
    }
