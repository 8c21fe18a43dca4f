#!/usr/bin/env bash
# The GPU benchmark in one command (issue 25): FLOPs per stage, images/s, TFLOP/s and MFU, peak GPU
# memory, host-only ms/img and the share of time the GPU waits, for batch 1/8/32/64, then the same
# end to end through `score_images` (PNG decoding, loader workers, verdicts, JSONL). Full-size
# architectures with random weights (no download), the corpus's mix of prompts, one seeded box per
# prompt object. Writes benchmarks/gpu-results.json; about 5-8 minutes on one H100/H200.
#
# Then, on a GPU, the regeneration check's calibration on one real model (benchmarks/regeneration_calibration.py,
# about 3-4 minutes; `--regeneration-only` runs that step alone, as its own device call).
#
# Usage (repository root):
#   bash benchmarks/gpu.sh                           # CUDA, full-size models (.venv's Python, else python3)
#   bash benchmarks/gpu.sh --kit build/device-kit    # on the GPU machine: the kit's wheels first (issue 33)
#   bash benchmarks/gpu.sh --device cpu --images 8   # on the CPU with the tests' tiny models
#   bash benchmarks/gpu.sh --help                    # every option (benchmarks/gpu_bench.py)
#
# --kit DIR (`make device-kit` writes build/device-kit): installs DIR's wheels with `pip install
# --no-index --no-deps --target` into a fresh folder (KIT_SITE, default $TMPDIR/negt2i-device-site),
# puts it first on PYTHONPATH, and checks that everything the benchmark imports is there
# (`benchmarks/device_kit.py check`, about a second) before anything else imports; a missing wheel
# stops it there, named.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3 || command -v python)
KIT=
ARGS=()
REGEN_ONLY=
while [ $# -gt 0 ]; do
  case "$1" in
    --kit) KIT=${2:?--kit needs a folder}; shift 2 ;;
    --kit=*) KIT=${1#--kit=}; shift ;;
    --regeneration-only) REGEN_ONLY=1; shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
if [ -n "$KIT" ]; then
  compgen -G "$KIT/*.whl" >/dev/null || { echo "gpu.sh: no wheels in $KIT (make device-kit writes build/device-kit)" >&2; exit 1; }
  SITE=${KIT_SITE:-${TMPDIR:-/tmp}/negt2i-device-site}
  rm -rf "$SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target "$SITE" "$KIT"/*.whl
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" benchmarks/device_kit.py check --kit "$KIT"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi
[ -n "$REGEN_ONLY" ] || "$PY" benchmarks/gpu_bench.py ${ARGS[@]+"${ARGS[@]}"}
# The regeneration check's calibration on one real model (issue 41): SD 1.5 from this machine's Hugging
# Face cache, else its architecture at full size with random weights; the same seed under the kernels,
# precisions, batch sizes and devices a real run sees, against other seeds. Only where CUDA is
# (`nvidia-smi`): on the CPU the suite runs the benchmark above alone. REGEN_OUT: where its JSON goes.
if command -v nvidia-smi >/dev/null 2>&1; then
  "$PY" benchmarks/regeneration_calibration.py --device cuda --model sd_1_5 --steps 20 --size 512 --pairs 16 \
    ${REGEN_OUT:+--out "$REGEN_OUT"}
fi
