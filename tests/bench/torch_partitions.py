"""What torch.compile's partitioners save for backward, and what it costs:
per model and budget, the bytes the forward keeps for backward (beyond
its inputs), the
backward's FLOPs, whether the gradients equal eager's, and (on a CUDA
device) peak memory (torch.cuda.max_memory_allocated) and step time.

Partitioners: torch's default (save what the backward reads), its min-cut
with activation_memory_budget (1.0, 0.5, 0.3, 0.1), run eagerly
(aot_eager: only the partition differs) and, on CUDA, under inductor.
graft's own partitioner (issue: graft's checkpoint planner as
torch.compile's partitioner) joins as a column when it exists.

    .venv/bin/python tests/bench/torch_partitions.py [--dry-run] [--json FILE]

--dry-run: tiny models, two steps, CPU (what the tests run).
"""
import argparse
import json
import sys
import time

import torch
import torch._functorch.config as functorch_config
import torchvision
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.compilers import nop
from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition
from torch.utils.flop_counter import FlopCounterMode


class Block(torch.nn.Module):
    """A GPT-style block: attention (causal) and an MLP, pre-norm."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width), torch.nn.Dropout(0.1))

    def forward(self, x):
        b, s, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, w))
        return x + self.mlp(self.norm2(x))


class Gpt(torch.nn.Module):
    def __init__(self, layers, width, heads):
        super().__init__()
        self.blocks = torch.nn.Sequential(*[Block(width, heads) for _ in range(layers)])

    def forward(self, x):
        return self.blocks(x).square().mean()


def models(dry_run, device):
    torch.manual_seed(0)
    if dry_run:
        return {"resnet18": (torchvision.models.resnet18(num_classes=10), (2, 3, 32, 32)),
                "gpt": (Gpt(2, 64, 4), (2, 32, 64))}
    return {"resnet18": (torchvision.models.resnet18(), (32, 3, 224, 224)),
            "gpt": (Gpt(6, 768, 12), (8, 512, 768))}


def partition_fn(kind, budget, record):
    def partition(joint, joint_inputs, **kwargs):
        if kind == "default":
            fw, bw = default_partition(joint, joint_inputs, **kwargs)
        else:
            with functorch_config.patch(activation_memory_budget=budget):
                fw, bw = min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
        outputs = next(n for n in fw.graph.nodes if n.op == "output").args[0]
        saved = outputs[kwargs["num_fwd_outputs"]:]
        # What the forward keeps beyond its own inputs (parameters and the
        # batch are held anyway).
        record["saved_bytes"] += sum(
            n.meta["val"].numel() * n.meta["val"].element_size() for n in saved
            if isinstance(n, torch.fx.Node) and n.op != "placeholder"
            and isinstance(n.meta.get("val"), torch.Tensor))
        return fw, bw
    return partition


def measure(model, shape, kind, budget, device, steps, inner):
    record = {"saved_bytes": 0}
    torch._dynamo.reset()
    eager_model = model.to(device)
    x = torch.randn(*shape, device=device)

    def loss_of(m):
        out = m(x)
        return out if out.dim() == 0 else out.square().mean()

    torch.manual_seed(1)
    loss_of(eager_model).backward()
    want = [p.grad.clone() for p in eager_model.parameters()]
    eager_model.zero_grad()
    if inner == "eager":
        backend = aot_autograd(fw_compiler=nop, bw_compiler=nop,
                               partition_fn=partition_fn(kind, budget, record))
    else:  # inductor: its own min-cut, at the budget
        backend = "inductor"
    row = {"partitioner": kind if kind == "default" else "min_cut", "budget": budget,
           "inner": inner}
    try:
        with functorch_config.patch(activation_memory_budget=budget):
            compiled = torch.compile(eager_model, backend=backend)
            torch.manual_seed(1)
            loss = loss_of(compiled)
            counter = FlopCounterMode(display=False)
            with counter:
                loss.backward()
            row["backward_flops"] = counter.get_total_flops()
            got = [p.grad.clone() for p in eager_model.parameters()]
            row["grads_equal"] = all(torch.allclose(g, w, rtol=1e-4, atol=1e-5)
                                     for g, w in zip(got, want))
            if device == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                start = time.perf_counter()
                for _ in range(steps):
                    eager_model.zero_grad()
                    loss_of(compiled).backward()
                torch.cuda.synchronize()
                row["step_ms"] = (time.perf_counter() - start) / steps * 1e3
                row["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
    except Exception as e:  # a partition that does not run is a finding
        row["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    eager_model.zero_grad()
    if inner == "eager":
        row["saved_mib"] = record["saved_bytes"] / 2**20
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    inners = ["eager"] + (["inductor"] if device == "cuda" else [])
    budgets = [1.0, 0.5] if args.dry_run else [1.0, 0.5, 0.3, 0.1]
    rows = []
    for name, (model, shape) in models(args.dry_run, device).items():
        model.train()
        for inner in inners:
            configs = [("default", 1.0)] if inner == "eager" else []
            configs += [("min_cut", b) for b in budgets]
            for kind, budget in configs:
                row = measure(model, shape, kind, budget, device, 2 if args.dry_run else 10, inner)
                row.update(model=name, device=device)
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
