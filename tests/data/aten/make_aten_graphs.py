"""Makes the ATen graphs of tests/data/aten/ with torch.export (torch 2.15,
in .venv), and checks each one graft folds against torch itself: the
graph read back by graft.aten runs eagerly and gives the model's outputs.

  .venv/bin/python tests/data/aten/make_aten_graphs.py [GRAFT]

GRAFT is the graft binary (default bazel-bin/cli/graft); the check is
skipped without one.
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
spec = importlib.util.spec_from_file_location("graft_aten", os.path.join(ROOT, "python", "graft", "aten.py"))
aten = importlib.util.module_from_spec(spec)
spec.loader.exec_module(aten)


class ConvBn(torch.nn.Module):
    """Three conv + batch norm blocks: one conv with a bias, one 1x1 whose
    call gives no bias argument at all; a residual add."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=True)
        self.bn2 = torch.nn.BatchNorm2d(4)
        self.conv3 = torch.nn.Conv2d(4, 4, 1, bias=False)
        self.bn3 = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return self.bn3(self.conv3(torch.relu(self.bn2(self.conv2(y)) + y)))


def randomized(model):
    torch.manual_seed(0)
    model.bn1.running_mean.uniform_(-1, 1)
    model.bn1.running_var.uniform_(0.5, 2)
    model.bn2.running_mean.uniform_(-1, 1)
    model.bn2.running_var.uniform_(0.5, 2)
    model.bn3.running_mean.uniform_(-1, 1)
    model.bn3.running_var.uniform_(0.5, 2)
    with torch.no_grad():
        model.bn1.weight.uniform_(0.5, 1.5)
        model.bn2.bias.uniform_(-0.5, 0.5)
    return model


def main():
    graft = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bazel-bin", "cli", "graft")
    x = torch.randn(1, 3, 6, 6)
    model = randomized(ConvBn()).eval()
    exported = torch.export.export(model, (x,))
    made = {
        "conv_bn": exported,
        "conv_bn_decomposed": exported.run_decompositions(),
        "conv_bn_train": torch.export.export(randomized(ConvBn()).train(), (x,)),
    }
    for name, program in made.items():
        path = os.path.join(HERE, name + ".aten.pbtxt")
        with open(path, "w") as f:
            f.write("# %s by torch %s's torch.export (tests/data/aten/make_aten_graphs.py)\n"
                    % (name, torch.__version__.split("+")[0]) + aten.to_aten_text(program))
        print("wrote", os.path.relpath(path, ROOT))
    if not os.path.exists(graft):
        print("no graft binary: the fold is not checked")
        return
    want = model(x)
    for name in ("conv_bn", "conv_bn_decomposed"):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "folded.aten.pbtxt")
            subprocess.run([graft, "apply", "-q", "-r",
                            os.path.join(ROOT, "rules", "aten", "fold_batch_norms.graft"),
                            os.path.join(HERE, name + ".aten.pbtxt"), "-o", out], check=True)
            text = open(out).read()
        assert not re.search(r'op: "aten\.[a-z_]*batch_norm', text), name
        original = aten.from_aten_text(open(os.path.join(HERE, name + ".aten.pbtxt")).read())
        folded = aten.from_aten_text(text)
        got, again = folded(x)[0], original(x)[0]
        err = (got - want).abs().max().item()
        print("%s: folded vs torch, max abs diff %.2e (read back unfolded: %.2e)"
              % (name, err, (again - want).abs().max().item()))
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), name


if __name__ == "__main__":
    main()
