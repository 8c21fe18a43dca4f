"""What a reward batch costs (`negt2ibench.reward.Reward`, as `negt2ibench reward serve` runs it): images/s
and per-batch latency at batch 64 for GenEval's reward and the negation reward, with the host-side part
(what the server does besides the models) measured apart.

Run by hand:
  .venv/bin/python benchmarks/reward_speed.py                       # this CPU, the tests' tiny models
  .venv/bin/python benchmarks/reward_speed.py --models full --device cuda   # full-size, random weights
  .venv/bin/python benchmarks/reward_speed.py --bounds              # a worker's peak memory at the bounds

--bounds: the server's app (`reward_server.create_app`, the negation reward on the tiny models, the CPU) in
a fresh process per case, one request at a bound of `reward_pickle.RequestBounds` (docs/reward.md's
numbers), through Flask's test client: the largest request (16 JPEG images of 2048 × 2048 px: the pixels
of one image and of a request at their bounds, scored), the largest body (64 MiB of four 16 MiB "images",
refused from their headers: 400), the most values (a pickle just under the opcode bound, read and walked,
then refused: no image). Peak RSS (ru_maxrss) before the request (the app loaded and warmed, the body in
memory) and after; a worker's bound adds what the other 3 threads may hold while they wait for the models
(their images' bytes, at most a body each).

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
    from negt2ibench.reward_body import read_batch
    from negt2ibench.reward_pickle import plain_loads

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


BOUND_CASES = ("largest_request", "largest_body", "most_values")


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _bound_body(case: str, bounds) -> bytes:
    if case == "largest_request":
        side = int(bounds.image_pixels**0.5)
        return batch_body(metadata_of("negation", bounds.request_pixels // bounds.image_pixels), side)
    if case == "largest_body":  # four images of (nearly) 16 MiB: the body's bound, each at the image's
        size = (bounds.body_bytes - 4096) // 4
        images = [b"\xff\xd8" + os.urandom(size - 2) for _ in range(4)]
        return pickle.dumps({"images": images, "meta_datas": metadata_of("negation", 4), "only_strict": False})
    values = [[index] for index in range((bounds.elements - 64) // 5)]  # [i] is 5 opcodes (EMPTY_LIST ... APPEND)
    return pickle.dumps({"images": [], "meta_datas": values, "only_strict": False})


def bound_case(case: str) -> dict:
    """In this (fresh) process: the app, warmed, then one request of CASE; its status and peak RSS."""
    from negt2ibench.reward_pickle import RequestBounds
    from negt2ibench.reward_server import create_app

    bounds = RequestBounds()
    reward = build_reward("negation", "tiny", "cpu")
    client = create_app(reward, bounds).test_client()
    assert client.post("/", data=batch_body(metadata_of("negation", 2), 512)).status_code == 200  # warm-up
    body = _bound_body(case, bounds)
    before = _peak_mib()
    started = time.perf_counter()
    answer = client.post("/", data=body, content_type="application/octet-stream")
    seconds = time.perf_counter() - started
    return {
        "case": case,
        "status": answer.status_code,
        "answer": answer.get_data(as_text=True)[:80] if answer.status_code != 200 else "scores",
        "body_mib": round(len(body) / 2**20, 1),
        "seconds": round(seconds, 2),
        "peak_before_mib": round(before),
        "peak_after_mib": round(_peak_mib()),
        "request_mib": round(_peak_mib() - before),
    }


def measure_bounds() -> list[dict]:
    """Each case in a fresh process (a peak RSS is per process); then the worker's bound."""
    import subprocess

    from negt2ibench.reward_pickle import RequestBounds
    from negt2ibench.reward_server import THREADS

    rows = []
    for case in BOUND_CASES:
        command = [sys.executable, __file__, "--bound-case", case]
        completed = subprocess.run(command, capture_output=True, text=True, check=True)
        rows.append(json.loads(completed.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    waiting = (THREADS - 1) * RequestBounds().body_bytes / 2**20
    worker = {
        "case": "worker_bound",
        "threads": THREADS,
        "largest_peak_mib": max(row["peak_after_mib"] for row in rows),
        "waiting_threads_mib": round(waiting),
        "worker_peak_bound_mib": round(max(row["peak_after_mib"] for row in rows) + waiting),
    }
    print(json.dumps(worker), flush=True)
    return [*rows, worker]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", choices=("tiny", "full"), default="tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--size", type=int, default=512, help="image side in px (Flow-GRPO's SD3.5 runs: 512)")
    parser.add_argument("--rewards", nargs="+", default=["geneval", "negation"])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--bounds", action="store_true", help="a worker's peak memory at the request bounds")
    parser.add_argument("--bound-case", choices=BOUND_CASES, help=argparse.SUPPRESS)  # one case, in a child
    args = parser.parse_args()
    if args.bound_case:
        print(json.dumps(bound_case(args.bound_case)), flush=True)
        return
    if args.bounds:
        rows = measure_bounds()
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        return
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
