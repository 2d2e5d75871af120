#!/usr/bin/env bash
# The prepared check for a machine with an NVIDIA GPU (under 8 minutes on
# one H100): graft's CUDA profile (cuDNN and cuBLAS timings of the shapes
# analysis/cuda profiles) beside the roofline cost model, and what
# torch.compile's partitioners and graft's (graft.torch.backend) save for
# backward (graft's swap strategy too: what stays on the device), peak
# memory (torch.cuda.max_memory_allocated) and step time,
# eagerly and under inductor, on ResNet-18/50, GPT-2, a LLaMA-style decoder
# and a U-Net (tests/bench/torch_partitions.py; graft from build/python,
# scripts/build_wheel.sh). Results go to
# $OUT (default build/device_check); commit their numbers to
# docs/benchmarks.md.
#
#   scripts/device_check.sh            # on the GPU machine
#   scripts/device_check.sh --dry-run  # CPU, tiny models: what the tests run
set -u
cd "$(dirname "$0")/.." || exit 1
dry_run=0
case "${1:-}" in
  --dry-run) dry_run=1 ;;
  "") ;;
  *) echo "usage: scripts/device_check.sh [--dry-run]" >&2; exit 2 ;;
esac
out="${OUT:-build/device_check}"
mkdir -p "$out" || exit 1
python=".venv/bin/python"
[[ -x "$python" ]] || python="$(command -v python3)"
if ! "$python" -c "import torch, torchvision, transformers" 2>/dev/null; then
  echo "device_check: torch, torchvision and transformers are needed (scripts/setup.sh installs them into .venv)" >&2
  exit 1
fi
if [[ ! -f build/python/graft/__init__.py ]]; then
  echo "device_check: graft is not staged in build/python (scripts/build_wheel.sh)" >&2
  exit 1
fi

if ((dry_run)); then
  exec "$python" tests/bench/torch_partitions.py --dry-run --milp --json "$out/partitions.json"
fi

rc=0
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L; then
  echo "device_check: no NVIDIA GPU here (nvidia-smi); --dry-run checks the script on CPU" >&2
  exit 1
fi
echo "== graft's CUDA profile beside the roofline model"
profile="bazel-bin/analysis/cuda/gpu_profile"
if [[ ! -x "$profile" ]] && command -v bazel >/dev/null; then
  bazel build --config=cuda //analysis/cuda:gpu_profile >/dev/null 2>&1
fi
if [[ -x "$profile" ]]; then
  "$profile" --out "$out/measured_profile.yaml" | tee "$out/gpu_profile.txt" || rc=1
else
  echo "device_check: no gpu_profile binary (bazel build --config=cuda //analysis/cuda:gpu_profile)" >&2
  rc=1
fi
echo "== torch.compile's partitioners: saved bytes, backward FLOPs, peak memory, step time"
"$python" tests/bench/torch_partitions.py --json "$out/partitions.json" | tee "$out/partitions.txt" || rc=1
exit "$rc"
