#!/usr/bin/env bash
# Installs what is missing, builds everything (warnings are errors) and runs
# every test: the C++ unit and CLI tests under Bazel, the tests that measure
# TensorFlow's memory (alone), then in two lanes at once every fuzz target
# for 10 s (GRAFT_FUZZ_SECONDS), the other interop tests against TensorFlow,
# the Python package (import graft) and its wheel, and PyTorch.
# Ends with one line: `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --fuzz || exit 1

# Each step's header says when it started, so a slow run shows where.
section() { echo "== $* [$(date +%T)]"; }

section "bazel build //..."
bazel build //... || { echo "0 passed, 1 failed"; exit 1; }

section "bazel test //..."
# (run, not read from Bazel's cache of an earlier checkout's results)
bazel test //... --test_output=all --nocache_test_results
bazel_rc=$?

checks=()
section "layout (file and function sizes, layering)"
python3 scripts/check_layout.py
checks+=("layout=$?")

section "bazel build --config=cuda //analysis/cuda:gpu_profile (compile and link only)"
if [[ -e /usr/local/cuda/include/cudnn.h ]]; then
  bazel build --config=cuda //analysis/cuda:gpu_profile
  checks+=("cuda_profiler_builds=$?")
else
  echo "no CUDA toolkit with cuDNN at /usr/local/cuda: skipped"
fi

# TensorFlow turns its oneDNN path on by default only on some CPUs (many
# Intel servers, not AMD EPYC), and its kernels, allocator and graph passes
# differ with it: every interop test runs with oneDNN off, and those that
# run rewritten graphs run again with it on, whatever this machine's
# default. (Memory measurements choose oneDNN in their own child process:
# tests/interop/tf_memory.py; test_training_onednn.py runs both itself.)
ONEDNN_TESTS=(test_fold_batch_norms.py test_keras3.py test_frozen_control_flow.py test_quantize.py test_gtt.py test_saved_model.py
              test_saved_model_freeze.py test_checkpoint.py test_swap.py test_functions.py)
# ONNX models in onnxruntime, no TensorFlow run: in the second lane, which
# keeps the lanes even (the first builds the fuzz targets).
ONNX_RUNTIME_TESTS=(test_onnx.py test_onnx_quantize.py)
section "the Python package and wheel (scripts/build_wheel.sh)"
scripts/build_wheel.sh >/dev/null
checks+=("python_wheel_builds=$?")

rm -rf bazel-testlogs-interop
mkdir -p bazel-testlogs-interop
pytest_rc=0
# suite NAME ONEDNN PYTEST-ARGS...: one pytest session, its JUnit file
# bazel-testlogs-interop/junit_NAME.xml; a failure sets pytest_rc.
suite() {
  local name=$1 onednn=$2
  shift 2
  TF_ENABLE_ONEDNN_OPTS=$onednn .venv/bin/python -m pytest "$@" -q -p no:cacheprovider \
    --junitxml="bazel-testlogs-interop/junit_$name.xml" || pytest_rc=1
}

# The tests that measure TensorFlow's memory in its executor
# (`measures_memory`) run first and alone: a peak measured beside other work
# is that work's timing as much as the plan's (a swap-in run early, a
# variable copied).
section "interop tests that measure TensorFlow's memory, alone (oneDNN off, then on)"
suite memory_onednn_off 0 tests/interop -m measures_memory
suite memory_onednn_on 1 "${ONEDNN_TESTS[@]/#/tests/interop/}" -m measures_memory

# Then the rest in two lanes at once, as each suite keeps about one core
# busy (it waits on child processes, graft and file reads; their times:
# docs/development.md). tf_memory refuses to measure in them
# (GRAFT_TESTS_SHARE_CORES). The second lane's output is printed when both
# are done.
export GRAFT_TESTS_SHARE_CORES=1
second_lane() {
  section "interop tests that run rewritten graphs (TensorFlow, oneDNN on)"
  suite onednn_on 1 "${ONEDNN_TESTS[@]/#/tests/interop/}" -m "not measures_memory"
  # PyTorch (graft.torch, graft.aten, the device check's dry run) in a
  # process of its own: torch.export beside TensorFlow aborts (their LLVMs
  # clash).
  section "PyTorch: graft.torch and the device check's dry run"
  suite torch 0 tests/torch -p no:logging
  # import graft: the library from Python (the staged package, the wheel in
  # a fresh venv, import order beside TensorFlow/onnx/onnxruntime, graft.tf,
  # graft.batch on a Dask cluster); graft.tf runs TensorFlow both ways.
  section "ONNX models in onnxruntime (${ONNX_RUNTIME_TESTS[*]})"
  suite onnx_runtime 0 "${ONNX_RUNTIME_TESTS[@]/#/tests/interop/}"
  section "Python face (import graft), oneDNN off"
  suite python 0 tests/python
  section "Python face: graft.tf with oneDNN on"
  suite python_onednn_on 1 tests/python/test_tf.py
  return $pytest_rc
}
second_log=bazel-testlogs-interop/second_lane.log
second_lane > "$second_log" 2>&1 &
second_pid=$!

section "fuzz every target briefly (scripts/fuzz.sh; long runs: docs/reliability.md)"
if command -v clang-14 >/dev/null; then
  scripts/fuzz.sh "${GRAFT_FUZZ_SECONDS:-10}"
  checks+=("fuzz=$?")
else
  echo "no clang-14: skipped"
fi
section "interop tests (TensorFlow, oneDNN off)"
suite onednn_off 0 tests/interop -m "not measures_memory" \
  "${ONNX_RUNTIME_TESTS[@]/#/--ignore=tests/interop/}"
wait "$second_pid" || pytest_rc=1
cat "$second_log"

section "summary"
python3 scripts/summarize_tests.py bazel-testlogs bazel-testlogs-interop "${checks[@]}"
summary_rc=$?
if [[ $bazel_rc -ne 0 || $pytest_rc -ne 0 || $summary_rc -ne 0 ]]; then
  exit 1
fi
