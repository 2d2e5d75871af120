"""Benchmark (prints numbers; not a test): every strategy of the checkpoint
library on the training graphs of tests/interop/test_checkpoint.py, in
TensorFlow's executor in all four settings (Grappler on/off, oneDNN on/off),
5 steps each in a fresh process: the median and largest peak of each
rewritten graph beside the original's median, and the extra training FLOPs
(graft cost). Each strategy runs as the training-memory pipeline runs
`memory`: early gradients first, the convolution gradients' workspaces one
at a time after; `list` keeps the ReLUs' outputs, `budget` aims at 75% of
graft mem's peak (80% on the U-Net, whose best plan reaches 76%: graft
refuses 75%, naming that peak).

  .venv/bin/python tests/interop/bench_checkpoint_strategies.py [GRAPH...]
"""
import os
import pathlib
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tf_memory  # noqa: E402
from conftest import repo_path  # noqa: E402
from test_checkpoint import MEMORY_MODELS, apply_rules, graft_flops, graft_peak  # noqa: E402

SETTING_NAMES = {s: "G %s / oneDNN %s" % ("on" if s[0] else "off", "on" if s[1] else "off")
                 for s in tf_memory.SETTINGS}


BUDGET = {"unet": 0.8}  # of graft mem's peak; 0.75 for the others


def strategies(name, original, tmp):
    """{strategy: rewritten graph, or the reason graft refused}: each as the
    training-memory pipeline runs `memory` (early gradients, the strategy,
    the workspaces one at a time)."""
    rules = lambda name: repo_path("rules", "tf", name + ".graft")  # noqa: E731
    early, _ = apply_rules(original, tmp, rules("early_gradients"), [])
    fraction = BUDGET.get(name, 0.75)
    budget = int(fraction * graft_peak(original, tmp, "before"))
    params = {
        "memory": ["strategy=memory"],
        "speed": ["strategy=speed"],
        "list (ReLUs)": ["strategy=list", "names=.*(Relu|relu).*"],
        "budget %d%%" % round(100 * fraction): ["strategy=budget", "budget_bytes=%d" % budget],
    }
    out = {}
    for strategy, given in params.items():
        try:
            planned, _ = apply_rules(early, tmp, rules("checkpoint"), given)
            out[strategy], _ = apply_rules(planned, tmp, rules("serialize_workspaces"), [])
        except AssertionError as e:  # graft's error, as apply_rules asserts it
            out[strategy] = str(e).split("plan `checkpoints`: ")[-1].splitlines()[0]
    return out


def main(names):
    mib = lambda b: b / 2**20  # noqa: E731
    print("| graph | strategy | extra FLOPs | " + " | ".join(
        SETTING_NAMES[s] + ": median (max), MiB" for s in tf_memory.SETTINGS) + " |")
    print("|---|---|---:|" + "---:|" * len(tf_memory.SETTINGS))
    for name in names or list(MEMORY_MODELS):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            original = MEMORY_MODELS[name]().as_graph_def()
            rewritten = strategies(name, original, tmp)
            graphs = {k: v for k, v in rewritten.items() if not isinstance(v, str)}
            measured = tf_memory.stats([original, *graphs.values()], tmp, runs=5)
            flops = graft_flops(original, tmp, "before")
            cells = ["%.1f (%.1f)" % (mib(tf_memory.median(measured[s][0])), mib(max(measured[s][0])))
                     for s in tf_memory.SETTINGS]
            print("| %s | original | | %s |" % (name, " | ".join(cells)), flush=True)
            for strategy, result in rewritten.items():
                if isinstance(result, str):
                    print("| %s | %s | refused: %s |%s" % (
                        name, strategy, result, " |" * len(tf_memory.SETTINGS)), flush=True)
                    continue
                i = list(graphs).index(strategy) + 1
                extra = graft_flops(result, tmp, strategy.split()[0]) / flops - 1
                cells = []
                for s in tf_memory.SETTINGS:
                    before = tf_memory.median(measured[s][0])
                    after = measured[s][i]
                    mark = "" if tf_memory.median(after) < before and max(after) < before else " !"
                    cells.append("%.1f (%.1f)%s" % (mib(tf_memory.median(after)), mib(max(after)), mark))
                print("| %s | %s | %+.0f%% | %s |" % (name, strategy, 100 * extra, " | ".join(cells)),
                      flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
