"""PyTorch tests of graft (graft.torch, graft.aten, the device check's dry
run) against the staged package in build/python (scripts/build_wheel.sh).
They run in their own process, apart from tests/python: torch.export and
TensorFlow in one process abort (their bundled LLVMs register the same
options), with or without graft."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from staged_graft import ROOT, repo_path  # noqa: E402,F401


def recording_default_partition(saved):
    """A torch.compile backend with torch's default partition, run eagerly,
    that appends to `saved` what each graph's forward keeps for the
    backward (graft.torch's count)."""
    import graft.torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.compilers import nop
    from torch._functorch.partitioners import default_partition

    def partition(joint, joint_inputs, **kwargs):
        fw, bw = default_partition(joint, joint_inputs, **kwargs)
        saved.append(graft.torch._saved_bytes(fw, kwargs["num_fwd_outputs"]))
        return fw, bw
    return aot_autograd(fw_compiler=nop, bw_compiler=nop, partition_fn=partition)
