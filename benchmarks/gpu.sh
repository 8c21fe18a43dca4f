#!/usr/bin/env bash
# The GPU benchmark in one command (issue 25): FLOPs per stage, images/s, TFLOP/s and MFU, peak GPU
# memory, host-only ms/img and the share of time the GPU waits, for batch 1/8/32/64, then the same
# end to end through `score_images` (PNG decoding, loader workers, verdicts, JSONL). Full-size
# architectures with random weights (no download), the corpus's mix of prompts, one seeded box per
# prompt object. Writes benchmarks/gpu-results.json; about 5-8 minutes on one H100/H200.
#
# Usage (repository root, .venv built):
#   bash benchmarks/gpu.sh                           # CUDA, full-size models
#   bash benchmarks/gpu.sh --device cpu --images 8   # on the CPU with the tests' tiny models
#   bash benchmarks/gpu.sh --help                    # every option (benchmarks/gpu_bench.py)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi
exec "$PY" benchmarks/gpu_bench.py "$@"
