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


class ShapesBn(torch.nn.Module):
    """Batch norms after convolutions of every kind and after linear
    layers: conv1d with a bias, conv3d without, a transposed conv2d (its
    filter [in, out, k...]) and a grouped one (not folded: its output
    channels are not one axis of its filter), linear layers on [N, C] with
    and without a bias, and one on [N, C, L] whose batch norm normalizes C, not the linear's
    features (not folded)."""

    def __init__(self):
        super().__init__()
        self.conv1d = torch.nn.Conv1d(3, 4, 3)
        self.bn1d = torch.nn.BatchNorm1d(4)
        self.conv3d = torch.nn.Conv3d(3, 4, 3, bias=False)
        self.bn3d = torch.nn.BatchNorm3d(4)
        self.deconv = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, bias=False)
        self.bn_deconv = torch.nn.BatchNorm2d(6)
        self.grouped = torch.nn.ConvTranspose2d(4, 6, 3, groups=2)
        self.bn_grouped = torch.nn.BatchNorm2d(6)
        self.linear = torch.nn.Linear(3, 5)
        self.bn_linear = torch.nn.BatchNorm1d(5)
        self.plain = torch.nn.Linear(3, 2, bias=False)
        self.bn_plain = torch.nn.BatchNorm1d(2)
        self.along = torch.nn.Linear(5, 4, bias=False)
        self.bn_along = torch.nn.BatchNorm1d(3)

    def forward(self, x1, x3, x2, x4, x5):
        return (self.bn1d(self.conv1d(x1)), self.bn3d(self.conv3d(x3)),
                self.bn_deconv(self.deconv(x2)), self.bn_grouped(self.grouped(x2)),
                self.bn_linear(self.linear(x4)), self.bn_plain(self.plain(x4)),
                self.bn_along(self.along(x5)))


class TokensBn(torch.nn.Module):
    """Linear layers over tokens, each [N, L, C] output viewed as [N * L, C]
    for a BatchNorm1d and back (LeViT's MLPLayerWithBN), with and without
    a bias; and one whose view does not keep the channels last (not
    folded: its batch norm normalizes another axis)."""

    def __init__(self):
        super().__init__()
        self.plain = torch.nn.Linear(5, 4, bias=False)
        self.bn_plain = torch.nn.BatchNorm1d(4)
        self.biased = torch.nn.Linear(4, 6)
        self.bn_biased = torch.nn.BatchNorm1d(6)
        self.across = torch.nn.Linear(4, 6, bias=False)
        self.bn_across = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        y = self.plain(x)
        y = self.bn_plain(y.flatten(0, 1)).reshape_as(y)
        z = self.biased(y)
        z = self.bn_biased(z.flatten(0, 1)).reshape_as(z)
        w = self.across(y)
        w = self.bn_across(w.reshape(-1, 4)).reshape_as(w)  # 6 features read as 4 channels
        return z, w


TOKENS_INPUTS = (torch.ones(2, 3, 5).cumsum(-1).sin(),)

SHAPES_INPUTS = tuple(torch.ones(shape).cumsum(-1).sin() for shape in
                      [(1, 3, 8), (1, 3, 4, 4, 4), (1, 4, 5, 5), (2, 3), (2, 3, 5)])


def with_statistics(model):
    """`model` with the batch-norm statistics and affine parameters a
    trained one has, not the defaults."""
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


def main():
    graft = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bazel-bin", "cli", "graft")
    torch.manual_seed(0)  # the same files from run to run
    x = torch.randn(1, 3, 6, 6)
    model = with_statistics(ConvBn()).eval()
    exported = torch.export.export(model, (x,))
    shapes = with_statistics(ShapesBn()).eval()
    shapes_exported = torch.export.export(shapes, SHAPES_INPUTS)
    made = {
        "conv_bn": exported,
        "conv_bn_decomposed": exported.run_decompositions(),
        "conv_bn_train": torch.export.export(with_statistics(ConvBn()).train(), (x,)),
        "shapes_bn": shapes_exported,
        "shapes_bn_decomposed": shapes_exported.run_decompositions(),
    }
    tokens = with_statistics(TokensBn()).eval()  # made after: the others' weights stay
    tokens_exported = torch.export.export(tokens, TOKENS_INPUTS)
    made["tokens_bn"] = tokens_exported
    made["tokens_bn_decomposed"] = tokens_exported.run_decompositions()
    for name, program in made.items():
        path = os.path.join(HERE, name + ".aten.pbtxt")
        with open(path, "w") as f:
            f.write("# %s by torch %s's torch.export (tests/data/aten/make_aten_graphs.py)\n"
                    % (name, torch.__version__.split("+")[0]) + aten.to_aten_text(program))
        print("wrote", os.path.relpath(path, ROOT))
    if not os.path.exists(graft):
        print("no graft binary: the fold is not checked")
        return
    # (model, inputs, the batch norms folding leaves)
    checked = {"conv_bn": (model, (x,), 0), "conv_bn_decomposed": (model, (x,), 0),
               "shapes_bn": (shapes, SHAPES_INPUTS, 2),
               "shapes_bn_decomposed": (shapes, SHAPES_INPUTS, 2),
               "tokens_bn": (tokens, TOKENS_INPUTS, 1),
               "tokens_bn_decomposed": (tokens, TOKENS_INPUTS, 2)}
    for name, (module, inputs, left) in checked.items():
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "folded.aten.pbtxt")
            subprocess.run([graft, "apply", "-q", "-r",
                            os.path.join(ROOT, "rules", "aten", "fold_batch_norms.graft"),
                            os.path.join(HERE, name + ".aten.pbtxt"), "-o", out], check=True)
            text = open(out).read()
        assert len(re.findall(r'op: "aten\.[a-z_]*batch_norm', text)) == left, name
        original = aten.from_aten_text(open(os.path.join(HERE, name + ".aten.pbtxt")).read())
        folded = aten.from_aten_text(text)
        with torch.no_grad():
            want = module(*inputs)
            want = want if isinstance(want, tuple) else (want,)
            got, again = folded(*inputs), original(*inputs)
        err = max((g - w).abs().max().item() for g, w in zip(got, want))
        print("%s: folded vs torch, max abs diff %.2e (read back unfolded: %.2e)"
              % (name, err, max((a - w).abs().max().item() for a, w in zip(again, want))))
        for g, w in zip(got, want):
            assert torch.allclose(g, w, rtol=1e-5, atol=1e-5), name


if __name__ == "__main__":
    main()
