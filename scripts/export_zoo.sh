#!/usr/bin/env bash
# Regenerates the zoo of real exports and the test inputs cut from it:
#   tests/data/zoo/                 transformers 5.23 and torchvision, by
#                                   torch 2.15's dynamo and TorchScript exporters
#                                   and transformers' own exporter
#   tests/data/zoo-transformers4/   the transformer models by transformers
#                                   4.57 (the exporter-drift review's "before")
#   tests/data/zoo/*.keras*         KerasHub backbones by Keras 3's own ONNX
#                                   export (tf2onnx)
# Each comes from its own git-ignored virtual environment (.venv-export,
# .venv-export-t4, .venv-export-keras) with the versions MANIFEST.json
# names. The test command
# needs none of this: the exports are committed.
#   scripts/export_zoo.sh [export_zoo.py options: --only bert,gpt2 ...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv() {  # venv DIR TRANSFORMERS_VERSION
  if [[ ! -x "$1/bin/python" ]]; then
    python3 -m venv "$1"
    "$1/bin/pip" install -q --upgrade pip
    "$1/bin/pip" install -q torch==2.15.0 torchvision==0.29.2 "transformers==$2" \
      onnx==1.23.2 onnxscript==0.7.2 onnx-ir==1.1.0
  fi
}
venv .venv-export 5.23.0
.venv-export/bin/python tests/interop/export_zoo.py "$@"
.venv-export/bin/python tests/interop/export_zoo.py --only electra,albert,mpnet,xlm_roberta,gpt_neo,mistral,phi3,gemma,deit \
  --exporters dynamo,ts17
# Families of 2025-26 checkpoints (export_zoo.py's NEWER).
.venv-export/bin/python tests/interop/export_zoo.py \
  --only qwen3,smollm3,granite,olmo2,gemma3,phi,stablelm,gpt_neox,falcon,opt,modernbert,t5_encoder,bart,dinov2,siglip_vision \
  --exporters dynamo,ts17
# Opset 23 (the standard Attention, RMSNormalization and RotaryEmbedding
# ops). LLaMA's and Qwen3's dynamic exports keep their RotaryEmbedding's
# tables at a batch of 1, which onnxruntime refuses for larger batches:
# the zoo test runs those originals row by row (zoo.ROWS_APART).
.venv-export/bin/python tests/interop/export_zoo.py --only bert,gpt2,vit,llama,qwen3 \
  --exporters dynamo23
# transformers' own exporter: a model's forward, and a causal LM's prefill
# and its decode over a KV cache (Gemma 3's a sliding-window one).
.venv-export/bin/python tests/interop/export_zoo.py --only bert,vit,gpt2,llama --exporters hf
.venv-export/bin/python tests/interop/export_zoo.py --only gpt2,llama,qwen3,phi3,gemma3 \
  --exporters hfprefill,hfdecode
# Keras 3 (KerasHub's backbones, TensorFlow backend, exported by tf2onnx).
if [[ ! -x .venv-export-keras/bin/python ]]; then
  python3 -m venv .venv-export-keras
  .venv-export-keras/bin/pip install -q --upgrade pip
  .venv-export-keras/bin/pip install -q tensorflow==2.21.0 keras==3.15.1 keras-hub==0.32.0 \
    tf2onnx==1.17.0 onnx==1.23.2
fi
.venv-export-keras/bin/python tests/interop/export_zoo_keras.py
.venv-export/bin/python tests/data/make_zoo_cuts.py
venv .venv-export-t4 4.57.1
TEXT=bert,roberta,distilbert,gpt2,llama,qwen2,vit,clip_text
.venv-export-t4/bin/python tests/interop/export_zoo.py --out tests/data/zoo-transformers4 \
  --only "$TEXT" --exporters dynamo
# TorchScript at opset 17, static shapes (GPT-2, LLaMA and Qwen2 fail in
# that exporter with transformers 4.57: reported, the rest go on).
.venv-export-t4/bin/python tests/interop/export_zoo.py --out tests/data/zoo-transformers4 \
  --only "$TEXT" --exporters ts17 --shapes static || true
