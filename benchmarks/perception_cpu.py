"""Perception cost on this CPU with the full-size architectures and random weights (same compute as the real ones).

Run by hand:  .venv/bin/python benchmarks/perception_cpu.py [--images 4] [--size 1024] [--batch-size 2]

Reports, each model in its own child process (so its peak RSS is its own):
  detector  RF-DETR Seg XL forward at 624 px + our class filtering   (s/img, peak RSS)
  sam       SAM 2.1 Hiera-S image embedding at 1024 + 2 box prompts  (s/img, peak RSS)
  siglip    SigLIP 2 so400m/14@384 image tower, 2 crops per image    (s/img, peak RSS)
  depth     Depth-Anything V2 Large forward at 518 short side        (s/img, peak RSS)
and end to end (`score_images` on a folder of PNGs: loading, the four models, verdicts, JSONL) with
the pipeline's overhead = wall time / time inside the model forwards, measured in the same run.
Random weights make the detector "see" every prompt object, the worst case for SAM and SigLIP.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402


def full_detector():
    from rfdetr import RFDETRSegXLarge

    return RFDETRSegXLarge(pretrain_weights=None, device="cpu")


def full_sam():
    from transformers import (
        Sam2Config,
        Sam2HieraDetConfig,
        Sam2ImageProcessor,
        Sam2Model,
        Sam2Processor,
        Sam2VisionConfig,
    )

    backbone = Sam2HieraDetConfig(blocks_per_stage=[1, 2, 11, 2], global_attention_blocks=[7, 10, 13])  # Hiera-S
    config = Sam2Config(vision_config=Sam2VisionConfig(backbone_config=backbone))
    return Sam2Model(config).eval(), Sam2Processor(image_processor=Sam2ImageProcessor())


def full_siglip():
    from transformers import GemmaTokenizer, SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    from tests.helpers.perception_helpers import _char_vocab

    tower = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16)
    config = SiglipConfig(
        text_config=dict(vocab_size=256000, max_position_embeddings=64, **tower),
        vision_config=dict(image_size=384, patch_size=14, **tower),
    )
    vocab = _char_vocab()  # a character tokenizer: ids stay valid; text embeddings are cached anyway
    tokenizer = GemmaTokenizer(
        vocab=vocab, merges=[], unk_token="<unk>", pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )
    processor = SiglipProcessor(
        image_processor=SiglipImageProcessor(size={"height": 384, "width": 384}), tokenizer=tokenizer
    )
    return SiglipModel(config).eval(), processor


def full_depth():
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config, DPTImageProcessor

    backbone = Dinov2Config(
        image_size=518,
        patch_size=14,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        out_indices=[5, 12, 18, 24],
        reshape_hidden_states=False,
    )
    config = DepthAnythingConfig(
        backbone_config=backbone,
        reassemble_hidden_size=1024,
        neck_hidden_sizes=[256, 512, 1024, 1024],
        fusion_hidden_size=256,
    )
    processor = DPTImageProcessor(
        size={"height": 518, "width": 518},
        keep_aspect_ratio=True,
        ensure_multiple_of=14,
        do_pad=False,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    )
    return DepthAnythingForDepthEstimation(config).eval(), processor


def images(count: int, size: int) -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)) for _ in range(count)]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(function, repeats: int):
    function()  # warm-up (allocations, lazy init)
    started = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - started) / repeats


def bench_one(name: str, count: int, size: int) -> dict:
    from evaluator.models.attributes import AttributeScorer
    from evaluator.models.depth import DepthEstimator
    from evaluator.models.detector import Detector
    from evaluator.models.masks import BoxSegmenter

    cpu = torch.device("cpu")
    batch = images(count, size)
    if name == "detector":
        detector = Detector(full_detector(), presence_threshold=0.03, per_class_cap=16, device=cpu)
        seconds = timed(lambda: detector.detect(batch, [["cup", "dog"]] * count, with_masks=False), 1)
    elif name == "sam":
        segmenter = BoxSegmenter(*full_sam(), device=cpu)
        boxes = [[(10, 20, 300, 400), (400, 100, 900, 800)]] * count
        seconds = timed(lambda: segmenter.segment(batch, boxes), 1)
    elif name == "siglip":
        from evaluator.config import PRESETS

        scorer = AttributeScorer(*full_siglip(), device=cpu)
        crops = [image.crop((0, 0, 300, 400)) for image in batch for _ in range(2)]
        requests = [("color", "cup")] * len(crops)
        scorer.score(crops[:1], requests[:1], PRESETS["current"])  # text embeddings cached once
        seconds = timed(lambda: scorer.score(crops, requests, PRESETS["current"]), 1)
    elif name == "depth":
        estimator = DepthEstimator(*full_depth(), device=cpu)
        seconds = timed(lambda: estimator.disparity(batch), 1)
    else:
        raise SystemExit(f"unknown model {name}")
    return {"model": name, "s_per_image": seconds / count, "peak_rss_mib": peak_rss_mib()}


class ForwardTimer:
    """Accumulates wall time spent inside wrapped callables (the pure model forwards)."""

    def __init__(self):
        self.seconds = 0.0

    def wrap(self, owner, attribute: str) -> None:
        original = getattr(owner, attribute)

        def timed_call(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        setattr(owner, attribute, timed_call)


def bench_end_to_end(count: int, size: int, batch_size: int) -> dict:
    from evaluator.config import PRESETS
    from evaluator.perception import ModelPerception
    from evaluator.pipeline import score_images
    from tests.helpers.perception_helpers import make_prompt

    config = PRESETS["current"]
    perception = ModelPerception.from_models(
        config,
        detector=full_detector(),
        sam=full_sam(),
        siglip=full_siglip(),
        depth=full_depth(),
        batch_size=batch_size,
    )
    timer = ForwardTimer()
    # Instance attributes shadow the methods: nn.Module.__call__ then runs the timed forward.
    timer.wrap(perception._detector.network, "forward")
    timer.wrap(perception._segmenter.model, "get_image_embeddings")
    timer.wrap(perception._segmenter.model, "forward")  # the box-prompt decoder on cached embeddings
    timer.wrap(perception._attributes.model, "get_image_features")
    timer.wrap(perception._attributes.model, "get_text_features")
    timer.wrap(perception._depth.model, "forward")
    kinds = [("color", ["cup", "dog"]), ("depth", ["cat", "dog"]), ("proximity", ["car", "bus"])]
    prompts = [
        make_prompt(category, objects, f"{category}_pos1_neg0_{n:03d}")
        for n in range(count)
        for category, objects in [kinds[n % len(kinds)]]
    ]
    with tempfile.TemporaryDirectory() as folder:
        for prompt, image in zip(prompts, images(count, size), strict=False):
            image.save(Path(folder) / f"{prompt.prompt_id}_0.png")
        # Warm-up on a separate output so lazy initialisation is not counted.
        score_images(
            folder,
            prompts,
            perception,
            out_path=Path(folder) / "warm.jsonl",
            config=config,
            model_key="bench",
            batch_size=batch_size,
            limit=1,
            progress=False,
        )
        timer.seconds = 0.0
        started = time.perf_counter()
        summary = score_images(
            folder,
            prompts,
            perception,
            out_path=Path(folder) / "out.jsonl",
            config=config,
            model_key="bench",
            batch_size=batch_size,
            progress=False,
        )
        wall = time.perf_counter() - started
    assert summary.errors == 0, summary.error_reasons
    return {
        "model": "end_to_end",
        "s_per_image": wall / count,
        "peak_rss_mib": peak_rss_mib(),
        "forward_s_per_image": timer.seconds / count,
        "overhead_ratio": wall / max(timer.seconds, 1e-9),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=4, help="images per measurement (default 4)")
    parser.add_argument("--size", type=int, default=1024, help="image side in px (default 1024)")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--only", help=argparse.SUPPRESS)  # child process: one model
    args = parser.parse_args()
    if args.only:
        result = (
            bench_end_to_end(args.images, args.size, args.batch_size)
            if args.only == "end_to_end"
            else bench_one(args.only, args.images, args.size)
        )
        print("RESULT " + json.dumps(result))
        return
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
        f"{args.images} images of {args.size}², batch {args.batch_size}"
    )
    rows = []
    for name in ("detector", "sam", "siglip", "depth", "end_to_end"):
        command = [
            sys.executable,
            __file__,
            "--only",
            name,
            "--images",
            str(args.images),
            "--size",
            str(args.size),
            "--batch-size",
            str(args.batch_size),
        ]
        output = subprocess.run(command, capture_output=True, text=True)
        line = next((text for text in output.stdout.splitlines() if text.startswith("RESULT ")), None)
        if line is None:
            print(f"{name}: failed\n{output.stderr[-2000:]}")
            continue
        row = json.loads(line[len("RESULT ") :])
        rows.append(row)
        extra = (
            f", forwards {row['forward_s_per_image']:.2f} s/img, overhead {row['overhead_ratio']:.3f}×"
            if "overhead_ratio" in row
            else ""
        )
        print(f"{name:11s} {row['s_per_image']:7.2f} s/img  peak RSS {row['peak_rss_mib']:7.0f} MiB{extra}", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
