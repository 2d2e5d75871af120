#!/usr/bin/env bash
# Installs what is missing, builds everything (warnings are errors) and runs
# every test: the C++ unit and CLI tests under Bazel, every fuzz target for
# 10 s (GRAFT_FUZZ_SECONDS), the interop tests against TensorFlow, then the
# Python package (import graft) and its wheel.
# Ends with one line: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --fuzz || exit 1

echo "== bazel build //..."
bazel build //... || { echo "0 passed, 1 failed"; exit 1; }

echo "== bazel test //..."
# (run, not read from Bazel's cache of an earlier checkout's results)
bazel test //... --test_output=all --nocache_test_results
bazel_rc=$?

checks=()
echo "== layout (file and function sizes, layering)"
python3 scripts/check_layout.py
checks+=("layout=$?")

echo "== bazel build --config=cuda //analysis/cuda:gpu_profile (compile and link only)"
if [[ -e /usr/local/cuda/include/cudnn.h ]]; then
  bazel build --config=cuda //analysis/cuda:gpu_profile
  checks+=("cuda_profiler_builds=$?")
else
  echo "no CUDA toolkit with cuDNN at /usr/local/cuda: skipped"
fi

echo "== fuzz every target briefly (scripts/fuzz.sh; long runs: docs/reliability.md)"
if command -v clang-14 >/dev/null; then
  scripts/fuzz.sh "${GRAFT_FUZZ_SECONDS:-10}"
  checks+=("fuzz=$?")
else
  echo "no clang-14: skipped"
fi

# TensorFlow turns its oneDNN path on by default only on some CPUs (many
# Intel servers, not AMD EPYC), and its kernels, allocator and graph passes
# differ with it: every interop test runs with oneDNN off, and those that
# run rewritten graphs run again with it on, whatever this machine's
# default. (Memory measurements choose oneDNN in their own child process:
# tests/interop/tf_memory.py; test_training_onednn.py runs both itself.)
ONEDNN_TESTS=(test_fold_batch_norms.py test_keras3.py test_frozen_control_flow.py test_quantize.py test_gtt.py test_saved_model.py
              test_saved_model_freeze.py test_checkpoint.py test_swap.py test_functions.py)
echo "== the Python package and wheel (scripts/build_wheel.sh)"
scripts/build_wheel.sh >/dev/null
checks+=("python_wheel_builds=$?")

echo "== interop tests (TensorFlow, oneDNN off)"
rm -rf bazel-testlogs-interop
mkdir -p bazel-testlogs-interop
TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python -m pytest tests/interop -q -p no:cacheprovider \
  --junitxml=bazel-testlogs-interop/junit_onednn_off.xml
pytest_rc=$?
echo "== interop tests that run rewritten graphs (TensorFlow, oneDNN on)"
TF_ENABLE_ONEDNN_OPTS=1 .venv/bin/python -m pytest "${ONEDNN_TESTS[@]/#/tests/interop/}" \
  -q -p no:cacheprovider --junitxml=bazel-testlogs-interop/junit_onednn_on.xml
pytest_on_rc=$?
if [[ $pytest_on_rc -ne 0 ]]; then pytest_rc=$pytest_on_rc; fi

# import graft: the library from Python (the staged package, the wheel in a
# fresh venv, import order beside TensorFlow/onnx/onnxruntime, graft.tf,
# graft.batch on a Dask cluster); graft.tf runs TensorFlow both ways.
echo "== Python face (import graft), oneDNN off"
TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python -m pytest tests/python -q -p no:cacheprovider \
  --junitxml=bazel-testlogs-interop/junit_python.xml
py_rc=$?
# PyTorch (graft.torch, graft.aten, the device check's dry run) in a process
# of its own: torch.export beside TensorFlow aborts (their LLVMs clash).
echo "== PyTorch: graft.torch and the device check's dry run"
.venv/bin/python -m pytest tests/torch -q -p no:cacheprovider -p no:logging \
  --junitxml=bazel-testlogs-interop/junit_torch.xml
torch_rc=$?
echo "== Python face: graft.tf with oneDNN on"
TF_ENABLE_ONEDNN_OPTS=1 .venv/bin/python -m pytest tests/python/test_tf.py -q -p no:cacheprovider \
  --junitxml=bazel-testlogs-interop/junit_python_onednn_on.xml
py_on_rc=$?
for rc in $py_rc $py_on_rc $torch_rc; do
  if [[ $rc -ne 0 ]]; then pytest_rc=$rc; fi
done

python3 scripts/summarize_tests.py bazel-testlogs bazel-testlogs-interop "${checks[@]}"
summary_rc=$?
if [[ $bazel_rc -ne 0 || $pytest_rc -ne 0 || $summary_rc -ne 0 ]]; then
  exit 1
fi
