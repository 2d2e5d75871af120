"""Keras 3 transformers in the zoo: KerasHub backbones (BERT, GPT-2, OPT,
LLaMA, Qwen3; random weights from their configs, the zoo's
widths: 2 layers, 4 heads of 16) exported by Keras's own
`model.export(path, format="onnx")` (TensorFlow backend: tf2onnx under the
hood), at Keras's default opset and at opset 17, with the dynamic batch and
sequence Keras writes, and at the default opset with static shapes (an
input signature of batch 2, sequence 8). Each export is written to
tests/data/zoo/ as NAME.keras.dynamic.onnx / NAME.keras17.dynamic.onnx /
NAME.keras.static.onnx and entered in its MANIFEST.json beside torch's
exports. (Backbones with the exact GELU,
DistilBERT's and ViT's, do not export: tf2onnx has no Erfc.)

  python tests/interop/export_zoo_keras.py [--only bert,gpt2] [--opsets default,17]
                                           [--shapes dynamic,static]

Needs keras-hub, tensorflow and tf2onnx (scripts/export_zoo.sh makes the
environment); the test command reads the committed files only.
"""
import argparse
import os
import sys
import warnings

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from zoo import add_export, read_manifest, write_manifest  # noqa: E402

SMALL = dict(vocabulary_size=512, num_layers=2, hidden_dim=64, intermediate_dim=128)
# KerasHub backbone class and its config, by the zoo's model names.
BACKBONES = {
    "bert": ("BertBackbone", dict(SMALL, num_heads=4, max_sequence_length=64)),
    "gpt2": ("GPT2Backbone", dict(SMALL, num_heads=4, max_sequence_length=64)),
    "opt": ("OPTBackbone", dict(SMALL, num_heads=4, max_sequence_length=64)),
    "llama": ("LlamaBackbone", dict(SMALL, num_query_heads=4, num_key_value_heads=2)),
    "qwen3": ("Qwen3Backbone", dict(SMALL, num_query_heads=4, num_key_value_heads=2,
                                    head_dim=16)),
}


def build(name, config=None, batch=2, sequence=8):
    """The backbone `name` with random weights (norm scales and biases
    perturbed too, so that a wrong fusion changes the numbers) and the
    inputs it was called on (`config` over the zoo's, for other widths)."""
    import keras
    import keras_hub
    import numpy as np
    keras.backend.clear_session()  # layer names as in a fresh process
    keras.utils.set_random_seed(0)
    cls, zoo_config = BACKBONES[name]
    model = getattr(keras_hub.models, cls)(**dict(zoo_config, **(config or {})))
    rng = np.random.default_rng(2)
    for w in model.weights:
        value = keras.ops.convert_to_numpy(w)
        w.assign(value + rng.standard_normal(value.shape).astype(value.dtype) * 0.05)
    inputs = {"token_ids": (np.arange(batch * sequence, dtype="int32") % 512).reshape(batch, sequence),
              "padding_mask": np.ones((batch, sequence), "int32")}
    if "segment_ids" in [t.name for t in model.inputs]:
        inputs["segment_ids"] = np.zeros((batch, sequence), "int32")
    model(inputs)  # Keras exports a model that has been called
    return model, {t.name: inputs[t.name] for t in model.inputs}


def export(name, exporter, dynamic, path, **sizes):
    """Writes `name`'s export to `path` (`exporter`: keras, Keras's default
    opset, or kerasNN at opset NN; static shapes by an input signature of
    the build's inputs; `sizes` as build takes them); its manifest entry."""
    import tensorflow as tf
    model, inputs = build(name, **sizes)
    signature = None if dynamic else [
        {k: tf.TensorSpec(v.shape, tf.as_dtype(v.dtype), name=k) for k, v in inputs.items()}]
    opset = None if exporter == "keras" else int(exporter[len("keras"):])
    model.export(path, format="onnx", input_signature=signature, opset_version=opset)
    return {"model": name, "exporter": exporter, "dynamic": dynamic,
            "inputs": {k: {"dtype": str(v.dtype),
                           "shape": ["batch", "sequence"] if dynamic else list(v.shape)}
                       for k, v in inputs.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "..", "data", "zoo"))
    parser.add_argument("--only", default=",".join(BACKBONES))
    parser.add_argument("--opsets", default="default,17")
    parser.add_argument("--shapes", default="dynamic,static")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import keras
    import keras_hub
    import tensorflow as tf
    import tf2onnx
    manifest = read_manifest(args.out)
    manifest.setdefault("versions", {}).update(
        {"keras": keras.__version__, "keras_hub": keras_hub.__version__,
         "tensorflow": tf.__version__, "tf2onnx": tf2onnx.__version__})
    failed = []
    # (opset, dynamic): Keras's default, dynamic batch and sequence as
    # Keras writes them, and at opset 17; static shapes (an input
    # signature of batch 2, sequence 8) at the default opset
    variants = [(opset, True) for opset in args.opsets.split(",")]
    if "static" in args.shapes.split(","):
        variants.append(("default", False))
    if "dynamic" not in args.shapes.split(","):
        variants = [v for v in variants if not v[1]]
    for name in args.only.split(","):
        for opset, dynamic in variants:
            exporter = "keras" if opset == "default" else f"keras{opset}"
            base = f"{name}.{exporter}.{'dynamic' if dynamic else 'static'}"
            path = os.path.join(args.out, base + ".onnx")
            add_export(manifest, failed, base, path,
                       lambda: export(name, exporter, dynamic, path))
    return write_manifest(args.out, manifest, failed)


if __name__ == "__main__":
    sys.exit(main())
