#!/usr/bin/env bash
# Installs what is missing, builds graft and runs its main job on the bundled
# example model (a frozen Keras classifier with batch norms).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --no-python
bazel build //cli:graft 2>&1 | grep -vE "^(INFO|Loading|Analyzing)" || true
test -x bazel-bin/cli/graft

MODEL=examples/keras_cnn.pb
echo
echo "\$ graft stats $MODEL"
bazel-bin/cli/graft stats "$MODEL"
echo
echo "\$ graft validate $MODEL --outputs Identity"
bazel-bin/cli/graft validate "$MODEL" --outputs Identity
