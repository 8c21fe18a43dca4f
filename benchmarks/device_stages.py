"""Where a scoring run's time and FLOPs go: device stages apart from host-only work (issue 25).

Used by `benchmarks/gpu_bench.py` (`bash benchmarks/gpu.sh`) and the GPU mode of
`benchmarks/scoring_throughput.py`. Nothing here changes what the evaluator computes.

- `StageClock` wraps callables as named stages and sums, per stage, the time spent *in the stage
  itself* (a stage called inside another is taken out of the outer one): the calling thread's
  CPU time, wall time (with a CUDA synchronise at each end when asked), and, while a
  `FlopCounterMode` is active (`clock.counting()`), the FLOPs torch's counter attributes to it.
- `attach(clock, perception)` marks the *device stages* of `ModelPerception` (the forwards, and
  the tensor ops that run where the models run: the batch's inputs, the top query/class pairs,
  SAM's decoder and mask upsampling, the crops, SigLIP's preprocessing of crop tensors, the
  depth resize, and the copies of their results to the host) and the *host stages* around them:
  `observe` (whatever it does outside its device stages: selection, `sv.Detections`, box
  lists, value scores), the loader's hand-over of each batch, the verdicts (rules) and the write.
  On the CPU the device stages run on the CPU too, and are timed apart, so the host-only budget of
  a GPU run is measured without a GPU.
- `representative(perception)` makes the detector's real forward run and then replaces its output
  by one seeded box per prompt object inside the image, so SAM, the SigLIP crops and
  Depth-Anything do the work a real image gives them (random weights detect next to nothing).
- `corpus_prompts(count)` draws prompts from the real corpus, categories in turn (the corpus has
  800 of each of the six), and `PEAK_TFLOPS` holds the dense bf16 tensor peaks that MFU is
  measured against.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch

_ACTIVE: StageClock | None = None  # the clock of the `attached` block running, for the benchmark's own stage
DEVICE_STAGES = ("inputs", "detector", "sam", "crops", "siglip", "depth")
HOST_STAGES = ("loader", "observe", "verdicts", "write")
BENCH_STAGE = "representative boxes"  # the benchmark's own replacement of the detections: neither

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s from NVIDIA's data sheets, longest name first.
PEAK_TFLOPS = {
    "H200 NVL": 835.0,
    "H200": 989.4,
    "H100 NVL": 835.0,
    "H100 PCIe": 756.0,
    "H100": 989.4,
    "GH200": 989.4,
    "B200": 2250.0,
    "A100": 312.0,
    "L40S": 362.1,
    "L4": 121.0,
    "A10G": 70.0,
}


def peak_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a device by its name (`torch.cuda.get_device_name`), None if unknown."""
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):
        if key.lower() in device_name.lower():
            return PEAK_TFLOPS[key]
    return None


class StageClock:
    """Per-stage self time (thread CPU and wall) and FLOPs of wrapped callables."""

    def __init__(self, *, sync: bool = False):
        self.sync = sync
        self.totals: dict[str, dict[str, float]] = defaultdict(
            lambda: {"cpu": 0.0, "wall": 0.0, "flops": 0, "calls": 0}
        )
        self._local = threading.local()
        self._counter = None
        self._patched: list[tuple[object, str, object, bool]] = []

    # -- wrapping --------------------------------------------------------------------------------
    def wrap(self, owner, attribute: str, stage: str) -> None:
        """Time `owner.attribute` as `stage`: an instance's method (instance attribute), or a class's
        or module's function (replaced there; a class's wrapper still gets `self`)."""
        original = getattr(owner, attribute)
        own = attribute in getattr(owner, "__dict__", {})
        clock = self

        def timed(*args, **kwargs):
            return clock.call(stage, original, *args, **kwargs)

        self._patched.append((owner, attribute, owner.__dict__.get(attribute) if own else None, own))
        setattr(owner, attribute, timed)

    def restore(self) -> None:
        """Puts every wrapped attribute back."""
        for owner, attribute, original, own in reversed(self._patched):
            if own:
                setattr(owner, attribute, original)
            else:
                delattr(owner, attribute)
        self._patched.clear()

    def reset(self) -> None:
        self.totals.clear()

    # -- timing ----------------------------------------------------------------------------------
    def call(self, stage: str, function: Callable, *args, **kwargs):
        stack = self._stack()
        children = [0.0, 0.0, 0]
        stack.append(children)
        if self.sync:
            torch.cuda.synchronize()
        cpu, wall, flops = time.thread_time(), time.perf_counter(), self._flops()
        try:
            return function(*args, **kwargs)
        finally:
            if self.sync:
                torch.cuda.synchronize()
            cpu, wall, flops = time.thread_time() - cpu, time.perf_counter() - wall, self._flops() - flops
            stack.pop()
            entry = self.totals[stage]
            entry["cpu"] += cpu - children[0]
            entry["wall"] += wall - children[1]
            entry["flops"] += flops - children[2]
            entry["calls"] += 1
            if stack:
                parent = stack[-1]
                parent[0], parent[1], parent[2] = parent[0] + cpu, parent[1] + wall, parent[2] + flops

    def _stack(self) -> list:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def _flops(self) -> int:
        return self._counter.get_total_flops() if self._counter is not None else 0

    @contextmanager
    def counting(self) -> Iterator[None]:
        """torch's FLOP counter on for the block; the stages it runs get their FLOPs. The models'
        parameters must not require grad (`no_grad_parameters`): the counter's module tracker
        hooks the autograd graph of any input that does, which inference mode has none of."""
        from torch.utils.flop_counter import FlopCounterMode

        # torch's table has the GPU kernels of scaled_dot_product_attention, not the CPU's fused one:
        # counted the same way (two matmuls), attention on the CPU is not left out.
        cpu_attention = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _attention_flops}
        with FlopCounterMode(display=False, custom_mapping=cpu_attention) as counter:
            self._counter = counter
            try:
                yield
            finally:
                self._counter = None

    # -- reading ---------------------------------------------------------------------------------
    def seconds(self, stages, key: str = "cpu") -> float:
        return sum(self.totals[stage][key] for stage in stages if stage in self.totals)

    def flops(self) -> dict[str, int]:
        return {stage: int(self.totals[stage]["flops"]) for stage in DEVICE_STAGES if stage in self.totals}


def no_grad_parameters(perception) -> None:
    """Every parameter of the perception's models with `requires_grad` off (results unchanged)."""
    modules = [
        getattr(perception._detector, "network", None),
        getattr(perception._segmenter, "model", None),
        getattr(perception._attributes, "model", None),
        getattr(perception._depth, "model", None),
    ]
    for module in modules:
        if module is not None:
            module.requires_grad_(False)


def _attention_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query_shape, key_shape, value_shape)


@contextmanager
def attached(perception, *, sync: bool = False, end_to_end: bool = False) -> Iterator[StageClock]:
    """A `StageClock` on `perception`'s stages for the block (`attach`), then taken off."""
    global _ACTIVE
    clock = StageClock(sync=sync)
    attach(clock, perception, end_to_end=end_to_end)
    _ACTIVE = clock
    try:
        yield clock
    finally:
        _ACTIVE = None
        clock.restore()


def attach(clock: StageClock, perception, *, end_to_end: bool = False) -> None:
    """Mark `ModelPerception`'s device and host stages (see the module's docstring). With `end_to_end`,
    also the scoring loop's host stages (`evaluator.stream`): the loader's hand-over, the verdicts
    and the write, which run in the scoring process around the models."""
    import evaluator.perception as perception_module
    from evaluator.models.inputs import InputPreparer

    if not hasattr(InputPreparer, "prepare_batch"):
        attach_legacy(clock, perception, end_to_end=end_to_end)
        return
    clock.wrap(InputPreparer, "prepare_batch", "inputs")
    clock.wrap(perception_module, "to_host", "detector")  # RF-DETR's own masks (no-SAM presets) to the host
    clock.wrap(perception_module, "mask_bounds", "crops")
    clock.wrap(perception_module, "masked_crops", "crops")
    if perception._detector is not None:
        for name in ("_preprocess", "_forward", "_top_pairs", "mask_tensors"):
            if hasattr(perception._detector, name):
                clock.wrap(perception._detector, name, "inputs" if name == "_preprocess" else "detector")
    if perception._segmenter is not None:
        for name in ("pixel_values", "_embed", "_decoder", "_upsample", "_to_host"):
            clock.wrap(perception._segmenter, name, "inputs" if name == "pixel_values" else "sam")
    if perception._attributes is not None:
        clock.wrap(perception._attributes, "image_embeddings", "siglip")
        clock.wrap(perception._attributes, "text_embeddings", "siglip")
    if perception._depth is not None:
        clock.wrap(perception._depth, "pixel_values", "inputs")
        clock.wrap(perception._depth, "_maps", "depth")
    _attach_host(clock, perception, end_to_end)


def attach_legacy(clock: StageClock, perception, *, end_to_end: bool = False) -> None:
    """The same stages on the code before issue 25 (commit 9c4c83f, e.g. from `git archive`), for its
    'before' figure: the forwards, the per-image inputs, SAM's and the depth map's post-processing.
    Its SigLIP preprocessing of PIL crops counts as host work, as its PIL crops do."""
    from evaluator.models.detector import Detector
    from evaluator.models.inputs import InputPreparer

    clock.wrap(InputPreparer, "__call__", "inputs")
    if perception._detector is not None:
        clock.wrap(perception._detector, "_preprocess", "inputs")
        clock.wrap(perception._detector.network, "forward", "detector")
        if isinstance(perception._detector, Detector):
            clock.wrap(perception._detector, "masks", "detector")
    if perception._segmenter is not None:
        clock.wrap(perception._segmenter, "pixel_values", "inputs")
        clock.wrap(perception._segmenter.model, "get_image_embeddings", "sam")
        clock.wrap(perception._segmenter.model, "forward", "sam")
        clock.wrap(perception._segmenter.processor, "post_process_masks", "sam")
    if perception._attributes is not None:
        clock.wrap(perception._attributes.model, "get_image_features", "siglip")
        clock.wrap(perception._attributes.model, "get_text_features", "siglip")
    if perception._depth is not None:
        clock.wrap(perception._depth, "pixel_values", "inputs")
        clock.wrap(perception._depth.model, "forward", "depth")
        clock.wrap(perception._depth.processor, "post_process_depth_estimation", "depth")
    _attach_host(clock, perception, end_to_end)


def _attach_host(clock: StageClock, perception, end_to_end: bool) -> None:
    if not end_to_end:
        clock.wrap(perception, "observe", "observe")
        return
    import evaluator.loader as loader
    import evaluator.stream as stream
    from evaluator.resultio import ResultWriter

    clock.wrap(stream, "observe_batch", "observe")
    clock.wrap(stream, "batch_records", "verdicts")
    clock.wrap(ResultWriter, "write", "write")
    batches = loader.BatchLoader.__iter__

    def timed_batches(self):
        """Each batch's hand-over by the loader (the main thread receiving the workers' items) as the
        host stage `loader`; the first one (forking the workers, the first decode) as `loader-start`."""
        iterator = batches(self)
        try:
            for number in range(len(self._sizes)):
                yield clock.call("loader" if number else "loader-start", next, iterator)
        finally:
            iterator.close()

    clock._patched.append((loader.BatchLoader, "__iter__", batches, True))
    loader.BatchLoader.__iter__ = timed_batches


def host_ms_per_image(clock: StageClock, images: int) -> float:
    """The host-only CPU milliseconds per image: the host stages' self time (device stages taken out)."""
    return 1000 * clock.seconds(HOST_STAGES) / max(images, 1)


# -- the representative benchmark ----------------------------------------------------------------


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
    return _ACTIVE.call(BENCH_STAGE, function, *args) if _ACTIVE is not None else function(*args)


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
