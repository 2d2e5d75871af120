"""PyTorch programs through graft's rules.

``graft.torch.apply(program, rules)`` rewrites a ``torch.export``ed
program by rule files of the aten dialect (a shipped library by name:
``"aten/fold_batch_norms"``) and gives back an ``ExportedProgram``: the
program's graph goes to graft in its binary ATen form (graft.aten), the
rewritten graph comes back as a GraphModule whose constants are the
rewritten graph's (folded weights included) and is exported again with the
program's own example inputs, so ``.module()`` runs it.

Programs that mutate their buffers or inputs (batch norms in training,
in-place updates of state) are refused: their mutations are outputs the
re-export would not keep. So are programs with symbolic shapes (for now). ``last_report()`` is the last apply's report.
"""
from typing import Any, Mapping, Optional, Union

import graft
from graft import aten

_last_report = None


def last_report():
    """The report of the last ``apply`` in this process (a dict, as
    ``graft.apply`` returns it), or None."""
    return _last_report


def _example_inputs(program):
    import torch
    example = getattr(program, "example_inputs", None)
    if example is not None:
        args, kwargs = example
        return tuple(args), dict(kwargs or {})
    from torch.export.graph_signature import InputKind
    user = [s.arg.name for s in program.graph_signature.input_specs
            if s.kind == InputKind.USER_INPUT]
    vals = {n.name: n.meta["val"] for n in program.graph.nodes if n.op == "placeholder"}
    return tuple(torch.zeros(tuple(int(d) for d in vals[u].shape), dtype=vals[u].dtype)
                 for u in user), {}


def apply(program, rules: Union[str, "graft.RuleSet"], *,
          params: Optional[Mapping[str, Any]] = None, name: str = "program"):
    """The program rewritten by ``rules`` (a RuleSet, a rule file, or a
    shipped library's name), as a new ExportedProgram. Raises graft.Error
    for rules of another dialect or a graph graft cannot write back, and
    ValueError for a program that mutates its state."""
    import torch
    from torch.export.graph_signature import OutputKind
    global _last_report
    mutated = [s.target for s in program.graph_signature.output_specs
               if s.kind not in (OutputKind.USER_OUTPUT,)]
    if mutated:
        raise ValueError("graft.torch.apply: the program mutates %s (a batch norm in "
                         "training?); rewrite it in eval mode" % ", ".join(map(str, mutated)))
    if program.range_constraints:
        raise ValueError("graft.torch.apply: the program has symbolic shapes (%s); export "
                         "it with static shapes: the rewritten graph is exported again with "
                         "its example inputs" % ", ".join(sorted(map(str, program.range_constraints))))
    rule_set = rules if isinstance(rules, graft.RuleSet) else \
        graft.RuleSet.compile(rules, params=dict(params or {}))
    model = graft.load(aten.to_aten_bytes(program), format="pb", name=name + ".aten.pb")
    rewritten, report = graft.apply(model, rule_set)
    _last_report = report
    single = program.call_spec.out_spec is not None and program.call_spec.out_spec.is_leaf()
    module = aten.graph_module(aten._decode(memoryview(rewritten.to_bytes()), "GraphDef"),
                               single_output=single)
    args, kwargs = _example_inputs(program)
    return torch.export.export(module, args, kwargs)
