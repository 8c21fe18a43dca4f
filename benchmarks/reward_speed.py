"""What a reward batch costs (`negt2ibench.reward.Reward`, as `negt2ibench reward serve` runs it): images/s
and per-batch latency at batch 64 for GenEval's reward and the negation reward, with the host-side part
(what the server does besides the models) measured apart.

Run by hand:
  .venv/bin/python benchmarks/reward_speed.py                       # this CPU, the tests' tiny models
  .venv/bin/python benchmarks/reward_speed.py --models full --device cuda   # full-size, random weights

A batch is Flow-GRPO's: 64 images of --size px, JPEG-encoded and pickled as flow_grpo/rewards.py does
(not timed: the client's work), with the metadata of the corpus's first 64 prompts (negation) or one
GenEval prompt of each task in turn. Per batch, timed in turn on the same batch:
  unpickle   the plain-types unpickler and the body's checks (`reward_server.plain_loads`, `read_batch`)
  decode     JPEG bytes to RGB (`reward.as_images`)
  metadata   the metadata to prompts (records, GenEval metadata checks)
  reward     `Reward.score` on the decoded images: the models, then the rules (metadata again: subtracted)
  response   the response dict and its pickle
host = unpickle + decode + metadata + response; model = reward - metadata. Medians over --batches batches
after one warm-up batch. The full-size models have random weights (the real ones' compute; nothing is
downloaded); on the CPU with tiny models the model part means nothing, the host part is the server's.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402


def batch_body(metadatas: list, size: int, seed: int = 0) -> bytes:
    """The body Flow-GRPO's client posts: JPEG bytes (PIL's default quality, as the client) and metadata."""
    rng = np.random.default_rng(seed)
    images = []
    for _ in metadatas:
        pixels = rng.integers(0, 256, size=(size // 8, size // 8, 3), dtype=np.uint8)  # smooth-ish, as photos
        buffer = io.BytesIO()
        Image.fromarray(pixels).resize((size, size), Image.BILINEAR).save(buffer, format="JPEG")
        images.append(buffer.getvalue())
    return pickle.dumps({"images": images, "meta_datas": metadatas, "only_strict": False})


def build_reward(kind: str, models: str, device: str):
    from evaluator.config import PRESETS
    from evaluator.geneval import GENEVAL
    from evaluator.geneval.perception import GenEvalPerception
    from evaluator.perception import ModelPerception
    from negt2ibench.reward import Reward

    if kind == "geneval":
        if models == "tiny":
            from tests.helpers.geneval_helpers import tiny_clip, tiny_mask2former

            detector, clip = tiny_mask2former(), tiny_clip()
        else:
            from geneval_cost import full_clip, full_mask2former

            detector, clip = full_mask2former(), full_clip()
        perception = GenEvalPerception.from_models(GENEVAL, detector=detector, clip=clip, device=device)
        return Reward(("geneval",), geneval_perception=perception)
    if models == "tiny":
        from tests.helpers.perception_helpers import tiny_models

        detector, sam, siglip, depth = tiny_models()
    else:
        from perception_cpu import full_depth, full_detector, full_sam, full_siglip

        detector, sam, siglip, depth = full_detector(), full_sam(), full_siglip(), full_depth()
    perception = ModelPerception.from_models(
        PRESETS["current"], detector=detector, sam=sam, siglip=siglip, depth=depth, device=device
    )
    return Reward(("negation",), negation_perception=perception)


def metadata_of(kind: str, count: int) -> list:
    if kind == "geneval":
        from evaluator.geneval.prompts import load_geneval_prompts

        prompts = load_geneval_prompts()
        return [dict(prompts[(i * 92) % len(prompts)].metadata) for i in range(count)]
    from dataset_builder.corpus import build_corpus

    corpus = build_corpus()
    return [corpus[(i * 75) % len(corpus)].model_dump() for i in range(count)]


def time_batch(reward, kind: str, body: bytes) -> dict[str, float]:
    from negt2ibench.reward import as_images, reward_response
    from negt2ibench.reward_server import plain_loads, read_batch

    clock = time.perf_counter
    started = clock()
    images, metadatas, only_strict = read_batch(plain_loads(body), encoded=False)
    unpickled = clock()
    pictures = as_images(images)
    decoded = clock()
    if kind == "geneval":
        from evaluator.geneval.prompts import metadata_problem

        [metadata_problem(m) for m in metadatas]
    else:
        [reward._prompt(m, i) for i, m in enumerate(metadatas)]
    resolved = clock()
    rewards = reward.score(pictures, metadatas, only_strict=only_strict)
    scored = clock()
    pickle.dumps(reward_response(rewards, reward.kinds))
    answered = clock()
    return {
        "unpickle": unpickled - started,
        "decode": decoded - unpickled,
        "metadata": resolved - decoded,
        "reward": scored - resolved,
        "response": answered - scored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", choices=("tiny", "full"), default="tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--size", type=int, default=512, help="image side in px (Flow-GRPO's SD3.5 runs: 512)")
    parser.add_argument("--rewards", nargs="+", default=["geneval", "negation"])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    import torch

    torch.set_grad_enabled(False)
    rows = []
    for kind in args.rewards:
        reward = build_reward(kind, args.models, args.device)
        body = batch_body(metadata_of(kind, args.batch), args.size)
        time_batch(reward, kind, body)  # warm-up: lazy imports, colour classifiers' text embeddings
        runs = [time_batch(reward, kind, body) for _ in range(args.batches)]
        median = {part: statistics.median(run[part] for run in runs) for part in runs[0]}
        host = median["unpickle"] + median["decode"] + median["metadata"] + median["response"]
        model = median["reward"] - median["metadata"]
        total = host + model
        row = {
            "reward": kind,
            "models": args.models,
            "device": args.device,
            "batch": args.batch,
            "size": args.size,
            "batch_latency_s": round(total, 3),
            "images_per_s": round(args.batch / total, 2),
            "host_ms_per_image": round(1000 * host / args.batch, 2),
            "host_share": round(host / total, 4),
            **{f"{part}_ms_per_image": round(1000 * value / args.batch, 2) for part, value in median.items()},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
