#!/usr/bin/env bash
# Regenerates the zoo of real exports (tests/data/zoo/) and the test inputs
# cut from it: makes .venv-export (git-ignored) with the torch,
# transformers and torchvision versions the zoo's MANIFEST.json names,
# then runs tests/interop/export_zoo.py. The test command needs none of
# this: the exports are committed.
#   scripts/export_zoo.sh [export_zoo.py options: --only bert,gpt2 ...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x .venv-export/bin/python ]]; then
  python3 -m venv .venv-export
  .venv-export/bin/pip install -q --upgrade pip
  .venv-export/bin/pip install -q torch==2.15.0 torchvision==0.29.2 transformers==5.23.0 \
    onnx==1.23.2 onnxscript==0.7.2 onnx-ir==1.1.0
fi
.venv-export/bin/python tests/interop/export_zoo.py "$@"
.venv-export/bin/python tests/data/make_zoo_cuts.py
