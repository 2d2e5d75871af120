"""The zoo of real exports (tests/data/zoo/, export_zoo.py): its manifests,
inputs of the shapes each export takes, and onnxruntime runs of them, for
the zoo's test and benchmark."""
import json
import os

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data")
ZOO = os.path.join(DATA, "zoo")
# The same models exported with transformers 4.57 (the exporter-drift review).
ZOO4 = os.path.join(DATA, "zoo-transformers4")


def manifest(folder):
    with open(os.path.join(folder, "MANIFEST.json")) as f:
        return json.load(f)["models"]


def feeds(spec):
    """Inputs of an export's shapes (symbols: batch 2, sequence 8); the
    attention mask pads the last row's last three tokens."""
    rng = np.random.default_rng(0)
    out = {}
    for k, s in spec["inputs"].items():
        shape = [d if isinstance(d, int) else {"batch": 2, "sequence": 8}[d] for d in s["shape"]]
        if s["dtype"] == "int64":
            if k == "attention_mask":
                v = np.ones(shape, np.int64)
                v[-1, -3:] = 0
            else:
                v = rng.integers(0, 500, shape).astype(np.int64)
        else:
            v = rng.standard_normal(shape).astype(s["dtype"])
        out[k] = v
    return out


def tolerance(spec):
    """The largest output difference, relative to the largest output, that
    counts as the same numbers: float16 exports (`dynamo16`) round at about
    1e-3."""
    return 2e-3 if spec["exporter"] == "dynamo16" else 1e-4


def run(path, inputs):
    """The model's outputs in onnxruntime (CPU)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)
