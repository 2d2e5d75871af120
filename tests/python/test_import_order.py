"""graft in one process with TensorFlow, onnx, onnxruntime and torch,
imported in either order: each carries its own protobuf, and graft's must not bind to
theirs (or theirs to graft's). Each order runs in a fresh interpreter."""
import os
import subprocess
import sys

import pytest

from conftest import repo_path

WORK = r'''
import sys
for name in sys.argv[1:]:
    __import__(name)
import graft
model = graft.load(sys.argv[0] if False else {example!r})
folded, report = graft.apply(model, pipeline="inference")
assert report["nodes_after"] == 63, report
assert graft.validate(folded)["valid"]
if "tensorflow" in sys.modules:
    import tensorflow as tf
    graph_def = folded.to_graph_def()     # TensorFlow's protobuf reads ours
    assert len(graph_def.node) == 63
    again = graft.Model.from_graph_def(graph_def)
    assert not graft.diff(again, folded).differs
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
if "onnx" in sys.modules:
    import onnx
    from onnx import helper, TensorProto
    node = helper.make_node("Relu", ["x"], ["y"])
    m = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]))
    onnx.checker.check_model(m)
    if "onnxruntime" in sys.modules:
        import numpy as np, onnxruntime
        s = onnxruntime.InferenceSession(m.SerializeToString())
        assert s.run(None, {{"x": np.array([-1.0], np.float32)}})[0][0] == 0
if "torch" in sys.modules:
    import torch, graft.torch
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(2, 2, 3), torch.nn.BatchNorm2d(2)
        def forward(self, x):
            return self.bn(self.conv(x))
    net, x = Net().eval(), torch.randn(1, 2, 5, 5)
    folded = graft.torch.apply(torch.export.export(net, (x,)), "aten/fold_batch_norms")
    assert torch.allclose(folded.module()(x), net(x), atol=1e-6)
print("ok")
'''

ORDERS = [
    ["tensorflow"], ["onnx"], ["onnxruntime"], ["onnx", "onnxruntime"],
    ["tensorflow", "onnx", "onnxruntime"],
    # torch beside onnx and onnxruntime; not beside TensorFlow: torch.export
    # and TensorFlow in one process abort (their LLVMs register the same
    # options), graft or not.
    ["torch"], ["torch", "onnx", "onnxruntime"],
]


@pytest.mark.parametrize("before", ORDERS, ids="-".join)
@pytest.mark.parametrize("graft_first", [False, True], ids=["graft_last", "graft_first"])
def test_import_order(before, graft_first):
    names = (["graft"] + before) if graft_first else (before + ["graft"])
    code = WORK.format(example=repo_path("examples", "keras_cnn.pb"))
    proc = subprocess.run([sys.executable, "-c", code, *names],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), \
        f"import order {names}: exit {proc.returncode}\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("graft_first", [False, True], ids=["graft_last", "graft_first"])
def test_import_order_of_the_wheel(graft_first, wheel_venv):
    """The same beside TensorFlow, onnx and onnxruntime with the manylinux
    wheel's graft, whose own protobuf, abseil and yaml-cpp it carries."""
    _, site = wheel_venv
    before = ["tensorflow", "onnx", "onnxruntime"]
    names = (["graft"] + before) if graft_first else (before + ["graft"])
    code = WORK.format(example=repo_path("examples", "keras_cnn.pb")) + (
        "assert graft.__file__.startswith(%r), graft.__file__\n" % site)
    env = dict(os.environ, PYTHONPATH=site)
    proc = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), \
        f"import order {names}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
