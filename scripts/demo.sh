#!/usr/bin/env bash
# Installs what is missing, builds graft and runs its main job on the bundled
# example model (a frozen Keras classifier with batch norms).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --no-python
bazel build //cli:graft 2>&1 | grep -vE "^(INFO|Loading|Analyzing)" || true
test -x bazel-bin/cli/graft

MODEL=examples/keras_cnn.pb
OUT=${TMPDIR:-/tmp}/keras_cnn.inference.pb
echo
echo "\$ graft stats $MODEL"
bazel-bin/cli/graft stats "$MODEL" | head -5
echo
echo "\$ graft apply --pipeline rules/pipelines/inference.yaml $MODEL -o $OUT"
bazel-bin/cli/graft apply --pipeline rules/pipelines/inference.yaml "$MODEL" -o "$OUT" \
  --outputs Identity
echo
echo "\$ graft stats $OUT"
bazel-bin/cli/graft stats "$OUT" | head -5
