"""Every shipped training library (checkpointing with each strategy, swap,
early gradients, and the training pipelines) on training graphs with what
TensorFlow's fusions merge (a U-Net of conv + BiasAdd, ResNet-18 with fused
batch norms, a dense chain of MatMul + BiasAdd, a transformer block), run
in TensorFlow with oneDNN off and on, each in a fresh process
(tests/interop/tf_run.py), with Grappler on and off (off: oneDNN's layout
pass sees the graph as graft wrote it, unfused). The process survives and
every gradient equals the original's in the same mode.

A recomputed Conv2D that feeds a BiasAdd must not carry a control input:
oneDNN's layout pass merges the two and aborts the process when it does
(`MergeConv2DWithBiasAdd`: `pred->in_edges().size() == 2`)."""

import numpy as np
import pytest

from conftest import repo_path
import tf_run
import training_graphs
from test_checkpoint import apply_rules, graft_peak

GPU = "/device:GPU:0"

GRAPHS = {
    "unet_bias": lambda: training_graphs.unet(batch=2, size=32, bias=True),
    "resnet18": training_graphs.resnet18,
    "dense_chain_bias": lambda: training_graphs.dense_chain(layers=12, batch=8, width=16),
    "transformer_block": training_graphs.transformer_block,
}

# name -> (rule file or pipeline, params, extra flags); budget: 80% of the peak
LIBRARIES = {
    "checkpoint_memory": ("checkpoint.graft", ["strategy=memory"], []),
    "checkpoint_speed": ("checkpoint.graft", ["strategy=speed"], []),
    "checkpoint_list": ("checkpoint.graft", ["strategy=list", "names=.*(Relu|relu).*"], []),
    "checkpoint_budget": ("checkpoint.graft", ["strategy=budget"], []),
    "swap": ("swap.graft", ["threshold=1", "min_distance=5"], ["--device-default", GPU]),
    "early_gradients": ("early_gradients.graft", [], []),
    "pipeline_training_memory": ("training-memory.yaml", [], []),
    "pipeline_training_swap": ("training-swap.yaml", [], ["--device-default", GPU]),
    "pipeline_training_hybrid": ("training-hybrid.yaml", [], ["--device-default", GPU]),
}


def rewrite(graph_def, tmp_path, library):
    target, params, extra = LIBRARIES[library]
    if target.endswith(".yaml"):
        extra = ["--pipeline", repo_path("rules", "pipelines", target)] + extra
        rules = None
    else:
        rules = repo_path("rules", target)
    if "strategy=budget" in params:
        params = params + ["budget_bytes=%d" % (0.8 * graft_peak(graph_def, tmp_path, "peak"))]
    if rules is None:
        return apply_rules_pipeline(graph_def, tmp_path, extra)
    rewritten, _ = apply_rules(graph_def, tmp_path, rules, params, extra)
    return rewritten


def apply_rules_pipeline(graph_def, tmp_path, extra):
    return apply_rules(graph_def, tmp_path, None, [], extra)[0]


def fetches(graph_def):
    names = sorted((n.name for n in graph_def.node if n.name.startswith("grad_")),
                   key=lambda s: int(s.split("_")[1]))
    return ["loss:0"] + [n + ":0" for n in names]


@pytest.mark.parametrize("graph", list(GRAPHS))
def test_libraries_survive_onednn(tmp_path, graph):
    original = GRAPHS[graph]().as_graph_def()
    rewritten = {name: rewrite(original, tmp_path, name) for name in LIBRARIES}
    changed = [name for name, g in rewritten.items() if len(g.node) != len(original.node)]
    assert any(name.startswith("checkpoint") for name in changed), changed
    names = list(rewritten)
    wanted = fetches(original)
    for onednn in (False, True):
        both = tf_run.run_graphs([original] + [rewritten[n] for n in names], wanted,
                                 tmp_path, onednn, tag=graph)
        for as_written, results in both.items():
            want = results[0]
            mode = "oneDNN %s, Grappler %s" % ("on" if onednn else "off",
                                               "off" if as_written else "on")
            for name, got in zip(names, results[1:]):
                for fetch, w, g in zip(wanted, want, got):
                    scale = max(float(np.max(np.abs(w))), 1e-30)
                    error = float(np.max(np.abs(w - g)))
                    assert error <= 1e-5 * scale, "%s on %s (%s): %s differs by %g (of %g)" % (
                        name, graph, mode, fetch, error, scale)
