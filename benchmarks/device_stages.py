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
- `PEAK_TFLOPS` holds the dense bf16 tensor peaks that MFU is measured against.

The representative inputs (corpus prompts, seeded boxes) are `benchmarks/representative.py`'s.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

_ACTIVE: StageClock | None = None  # the clock of the `attached` block running, for the benchmark's own stage
DEVICE_STAGES = ("inputs", "detector", "sam", "sam_decoder", "crops", "siglip", "depth")
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
    also the scoring loop's host stages (`evaluator.engine`, `evaluator.pipeline`): the loader's hand-over, the verdicts
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
        for name, stage in (
            ("pixel_values", "inputs"),
            ("_embed", "sam"),
            ("_decoder", "sam_decoder"),
            ("_upsample", "sam_decoder"),
            ("_to_host", "sam_decoder"),
        ):
            clock.wrap(perception._segmenter, name, stage)
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
        clock.wrap(perception._segmenter.model, "forward", "sam_decoder")
        clock.wrap(perception._segmenter.processor, "post_process_masks", "sam_decoder")
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
    import evaluator.pipeline as pipeline
    from evaluator.resultio import ResultWriter

    clock.wrap(perception, "observe", "observe")  # the engine's forward of a batch (`pipeline.scoring_step`)
    clock.wrap(pipeline, "decide_statements", "verdicts")  # each image's verdict, in the verdict thread
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
