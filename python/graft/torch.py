"""PyTorch programs through graft's rules.

``graft.torch.apply(program, rules)`` rewrites a ``torch.export``ed
program by rule files of the aten dialect (a shipped library by name:
``"fold_batch_norms"``, the one in rules/aten/) and gives back an
``ExportedProgram``: the program's graph goes to graft in its binary ATen
form (graft.aten), the rewritten graph comes back as a GraphModule whose
constants are the rewritten graph's (folded weights included) and is
exported again with the program's own example inputs, so ``.module()``
runs it, called as the program was called (the same argument and output
structures).

Programs that mutate their buffers or inputs (batch norms in training,
in-place updates of state) are refused: their mutations are outputs the
re-export would not keep. A program with symbolic input dimensions is
exported again with the same dimensions (one ``Dim`` per symbol, its
range kept), and sizes read from them (`x.view(x.size(0), -1)`) and
computed from them (`x.size(0) * heads`) stay read and computed in the
graph. A `torch.no_grad()` block in the program (`wrap_with_set_grad_enabled`)
comes back as one. ``last_report()`` is the last apply's report.
"""
from typing import Any, Mapping, Optional, Union

import graft
from graft import aten

_last_report = None


def last_report():
    """The report of the last ``apply`` in this process (a dict, as
    ``graft.apply`` returns it), or None."""
    return _last_report


def _user_inputs(program):
    """The program's user inputs in order: (name, meta["val"]) each; a
    constant input (a None, a bool or number the export took as it was)
    has its value."""
    from torch.export.graph_signature import ConstantArgument, InputKind
    vals = {n.name: n.meta.get("val") for n in program.graph.nodes if n.op == "placeholder"}
    return [(s.arg.name, s.arg.value if isinstance(s.arg, ConstantArgument) else vals[s.arg.name])
            for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]


def _constant_inputs(program):
    from torch.export.graph_signature import ConstantArgument, InputKind
    return {s.arg.name for s in program.graph_signature.input_specs
            if s.kind == InputKind.USER_INPUT and isinstance(s.arg, ConstantArgument)}


def _example_inputs(program):
    """The program's example inputs (args, kwargs) as it was called: the
    ones it keeps, or zeros of its inputs' shapes in its input structure."""
    import torch
    import torch.utils._pytree as pytree
    example = getattr(program, "example_inputs", None)
    if example is not None:
        args, kwargs = example
        return tuple(args), dict(kwargs or {})
    leaves = [torch.zeros(tuple(int(d) for d in val.shape), dtype=val.dtype)
              if isinstance(val, torch.Tensor) else val for _, val in _user_inputs(program)]
    args, kwargs = pytree.tree_unflatten(leaves, program.call_spec.in_spec)
    return tuple(args), dict(kwargs)


def _called_as_the_program(program, module):
    """`module` (the rewritten graph: one input per tensor the program
    takes, a tuple of outputs) called as the program is called: its
    arguments and outputs in the program's structures (dicts, a model's
    output class), constant inputs (taken as the export took them) in
    their places."""
    from torch.export._unlift import _get_codegen
    graph = module.graph
    tensors = iter([n for n in graph.nodes if n.op == "placeholder"])
    constants = _constant_inputs(program)
    previous = None
    for name, _ in _user_inputs(program):
        if name not in constants:
            previous = next(tensors)
            continue
        with (graph.inserting_after(previous) if previous is not None
              else graph.inserting_before(next(iter(graph.nodes)))):
            previous = graph.placeholder(name)
    signature = program.module_call_graph[0].signature if program.module_call_graph else None
    graph._codegen = _get_codegen(program.call_spec.in_spec, program.call_spec.out_spec,
                                  signature.forward_arg_names if signature else None)
    module.recompile()
    return module


def apply(program, rules: Union[str, "graft.RuleSet"], *,
          params: Optional[Mapping[str, Any]] = None, name: str = "program"):
    """The program rewritten by ``rules`` (a RuleSet, a rule file, or a
    shipped library's name: rules/aten/ first), as a new ExportedProgram. Raises graft.Error
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
    rule_set = rules if isinstance(rules, graft.RuleSet) else \
        graft.RuleSet.compile(graft._shipped_rules(rules, ("aten", "", "tf", "onnx"))
                              if isinstance(rules, str) else rules, params=dict(params or {}))
    original = aten.graph_message(program)
    model = graft.load(aten._encode(original, "GraphDef"), format="pb", name=name + ".aten.pb")
    rewritten, report = graft.apply(model, rule_set)
    _last_report = report
    message = aten._decode(memoryview(rewritten.to_bytes()), "GraphDef")
    aten.name_replaced_weights(original, message)
    aten.drop_state_of_removed_modules(original, message)
    module = _called_as_the_program(program, aten.graph_module(message))
    args, kwargs = _example_inputs(program)
    return torch.export.export(module, args, kwargs,
                               dynamic_shapes=_dynamic_shapes(program, args, kwargs))


def _dynamic_shapes(program, args, kwargs):
    """The program's symbolic input dimensions as torch.export.Dims (one
    Dim per symbol, with the program's range) in the structure of its
    inputs (`args`, `kwargs`), or None for a program of static shapes. A
    dimension that is an expression of symbols (`2*s0`) is refused: the
    re-export could not say it."""
    import torch
    import torch.utils._pytree as pytree
    if not program.range_constraints:
        return None
    ranges = {str(k): v for k, v in program.range_constraints.items()}
    dims, leaves = {}, []
    for arg, val in _user_inputs(program):
        shape = {}
        for axis, d in enumerate(getattr(val, "shape", ())):
            if not isinstance(d, torch.SymInt):
                continue
            expr = d.node.expr
            if not expr.is_Symbol:
                raise ValueError(
                    "graft.torch.apply: dimension %d of input `%s` is `%s`, an expression of "
                    "symbolic sizes; export it with one symbol per dimension (or static "
                    "shapes)" % (axis, arg, expr))
            symbol = str(expr)
            if symbol not in dims:
                r = ranges.get(symbol)
                low = int(r.lower) if r is not None and r.lower.is_finite else None
                high = int(r.upper) if r is not None and r.upper.is_finite else None
                dims[symbol] = torch.export.Dim("d_" + symbol, min=low, max=high)
            shape[axis] = dims[symbol]
        leaves.append(shape or None)
    arg_shapes, kwarg_shapes = pytree.tree_unflatten(leaves, program.call_spec.in_spec)
    return tuple(arg_shapes) + tuple(kwarg_shapes[k] for k in kwargs)


# ---- torch.compile: graft's partition of the forward and the backward ----

_partition_reports = []


def partition_reports():
    """One dict per joint graph that ``backend`` partitioned in this
    process, oldest first: ``saved_bytes`` (what the forward keeps for the
    backward on the device, inputs not counted), ``swapped`` and
    ``swapped_bytes`` (what it keeps in host memory), ``default_bytes`` (what the backward
    reads, nothing recomputed but views: at most what torch's default
    partition keeps), ``least_bytes``, ``budget_bytes``, ``budget_met``,
    ``recomputed`` (ops), ``recomputed_flops``, ``strategy``, ``fallback``
    (why torch's default partition was used instead, or None)."""
    return list(_partition_reports)


class _Undecided(Exception):
    """What graft does not partition itself: torch's default does."""


def _refuse_what_graft_does_not_partition(joint):
    """Raises _Undecided for a joint graph graft leaves to torch's default
    partition: no tangents, functionalized RNG seeds, ops a checkpoint
    policy says must be recomputed. Before anything changes the graph."""
    from torch._functorch import partitioners as tp
    placeholders = joint.graph.find_nodes(op="placeholder")
    if not any(tp._is_tangent(n) for n in placeholders):
        raise _Undecided("the joint graph has no tangents")
    if any(tp._is_fwd_seed_offset(n) or tp._is_bwd_seed_offset(n) for n in placeholders):
        raise _Undecided("the graph threads functionalized RNG seeds")
    from torch.utils.checkpoint import CheckpointPolicy
    if CheckpointPolicy.MUST_RECOMPUTE in _checkpoint_policies(joint):
        raise _Undecided("the model's checkpoint policy says MUST_RECOMPUTE, which graft's "
                         "plan does not promise")


def _checkpoint_policies(joint):
    """The torch.utils.checkpoint policies the joint graph's nodes carry."""
    return {n.meta["recompute"] for n in joint.graph.nodes
            if n.meta.get("recompute") is not None}


def _roles(joint, num_fwd_outputs):
    """What the planner needs to know of a joint graph's nodes: the
    backward's inputs (tangents), the ops the trace placed in the backward
    (as torch's default partition reads the graph: after the forward's last
    op), forward ops graft must not recompute, those that cost nothing to
    (views and aliases), and the pure ones (a schema that writes nothing,
    drawing nothing as called), which graft may recompute though its
    registry lacks them (inductor's prims) or calls the op random (an
    attention kernel whose dropout is 0)."""
    import torch
    from torch._functorch import partitioners as tp
    from torch._functorch._aot_autograd.descriptors import InputMutationAOTOutput
    from torch.fx.experimental.proxy_tensor import is_sym_node
    from torch.utils.checkpoint import CheckpointPolicy
    placeholders = joint.graph.find_nodes(op="placeholder")
    tangents = [n.name for n in placeholders if tp._is_tangent(n)]
    output = next(iter(joint.graph.find_nodes(op="output")))
    descs = output.meta.get("desc")
    if descs is None:
        raise _Undecided("torch gave no output descriptors (which inputs are mutated)")
    mutated_descs = [d.mutated_input for d in descs[:num_fwd_outputs]
                     if isinstance(d, InputMutationAOTOutput)]
    mutated = {n for n in placeholders if n.meta.get("desc") in mutated_descs}
    # and inputs mutated in the graph itself (inductor keeps the copy_ into
    # a batch norm's running statistics in its forward)
    for node in joint.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable:
            continue
        for arg, value in zip(schema.arguments, node.args):
            if arg.alias_info is not None and arg.alias_info.is_write and value in placeholders:
                mutated.add(value)
    last = None
    for node in joint.graph.nodes:
        if tp._has_tag_is_forward(node) or tp._is_primal(node):
            last = node
    # symbolic numbers are not graft's nodes: sizes travel as numbers
    ops = {n: None for n in joint.graph.nodes  # in graph order
           if n.op == "call_function" and not is_sym_node(n)}
    # (the copy_ of a mutated input's new value, which inductor's trace
    # puts at the end, is the forward's)
    backward_ops, in_backward = [], False
    for node in joint.graph.nodes:
        if (in_backward and node in ops and not (node.target is torch.ops.aten.copy_.default
                                                 and node.args[0] in mutated)):
            backward_ops.append(node.name)
        in_backward = in_backward or node is last
    pinned, free, functional = [], [], []
    for node in ops:
        schema = getattr(node.target, "_schema", None)
        reads_state = any(isinstance(a, torch.fx.Node) and a in mutated
                          for a in node.all_input_nodes)
        # a random draw (an attention kernel with a dropout statically 0 is
        # none: torch's own test), a side effect, a state read, or the user's
        if (reads_state or tp.is_rng_op(node) or node.is_impure(impure_random=False)
                or node.meta.get("recompute") == CheckpointPolicy.MUST_SAVE):
            pinned.append(node.name)
        elif getattr(node.target, "is_view", False) or node.target in (
                torch.ops.aten.detach.default, torch.ops.aten.alias.default):
            free.append(node.name)
        elif schema is not None and not schema.is_mutable:  # inductor's prims too
            functional.append(node.name)
    return {"backward_inputs": tangents, "backward_ops": backward_ops, "pinned": pinned,
            "free": free, "functional": functional}


def _saved_bytes(fw_module, num_fwd_outputs, names=None):
    """The bytes a forward module keeps for the backward: the storages of
    the tensors it saves (of those `names` names, if given), each counted
    once and whole (a saved slice holds its base), none that an input owns
    (a transposed weight is the weight); symbolic sizes at their hints (the
    example the compile traced)."""
    import torch
    from torch.multiprocessing.reductions import StorageWeakRef

    def storage(node):
        value = node.meta.get("val")
        return StorageWeakRef(value.untyped_storage()) if isinstance(value, torch.Tensor) else None

    output = next(iter(fw_module.graph.find_nodes(op="output")))
    held = {storage(n) for n in fw_module.graph.find_nodes(op="placeholder")}
    kept = {}
    for node in output.args[0][num_fwd_outputs:]:
        if (not isinstance(node, torch.fx.Node) or node.op == "placeholder"
                or (names is not None and node.name not in names)):
            continue
        ref = storage(node)
        if ref is not None and ref not in held:
            kept[ref] = aten._size(node.meta["val"].untyped_storage().nbytes(), True)
    return sum(kept.values())


def _forward_numbers(joint):
    """The joint graph's symbolic numbers that do not depend on a tangent
    (sizes of inputs and of forward tensors, and arithmetic on them): the
    forward keeps them for the backward, as torch's own partitions do,
    and the backward's extraction drops those it does not read."""
    from torch._functorch import partitioners as tp
    from torch.fx.experimental.proxy_tensor import is_sym_node
    backward = set()
    numbers = []
    for node in joint.graph.nodes:
        if tp._is_tangent(node) or any(a in backward for a in node.all_input_nodes):
            backward.add(node)
        elif is_sym_node(node):
            numbers.append(node)
    return numbers


def _modules_saving(joint, saved, num_fwd_outputs, static_nodes, recomputes):
    """The forward and backward modules of `joint` whose forward saves the
    FX nodes `saved` (the backward recomputes what else it reads), finished
    as torch's default partition finishes its own."""
    from torch._functorch import partitioners as tp
    from torch._functorch.compile_utils import raise_getitems
    fw, bw = tp._extract_fwd_bwd_modules(
        joint, saved, saved_sym_nodes=_forward_numbers(joint), num_fwd_outputs=num_fwd_outputs,
        static_lifetime_input_nodes=static_nodes)
    fw.graph.eliminate_dead_code(is_impure_node=tp.is_not_collective)
    bw.graph.eliminate_dead_code(is_impure_node=tp.is_not_collective)
    if recomputes:
        bw = tp.reordering_to_mimic_autograd_engine(bw)
    return raise_getitems(fw), raise_getitems(bw)


def _training_batch_norms(joint):
    """The joint graph's batch norms that update running statistics."""
    import torch
    return joint.graph.find_nodes(
        op="call_function", target=torch.ops.aten._native_batch_norm_legit_functional.default)


def _batch_norms_apart_from_their_statistics(joint):
    """Each training batch norm of an eager joint graph
    (`_native_batch_norm_legit_functional`: it reads the running statistics
    the step updates in place, so it is never recomputed) as a batch norm of
    the batch's own statistics (`no_stats`, which reads no state and may
    be recomputed; the same kernel, the same output) and the running
    statistics' update from its mean and 1/std, as the kernel makes it:
    mean' = m mean + (1 - m) mean_run, var' = m (1/invstd^2 - eps) n/(n-1)
    + (1 - m) var_run (n, the values per channel, symbolic with the
    sizes). Batch norms of statistics in another dtype (bf16 autocast: the
    kernel updates them from float sums it does not return) or with a
    momentum computed in the graph are left as they are. Returns how many
    were split."""
    import operator
    import torch
    from torch._guards import detect_fake_mode
    aten_ops = torch.ops.aten
    graph, split = joint.graph, 0
    for bn in list(_training_batch_norms(joint)):
        x, weight, bias, mean_run, var_run, training, momentum, eps = bn.args
        vals = [a.meta.get("val") for a in (x, mean_run, var_run)]
        outputs = {u.args[1]: u for u in bn.users if u.target is operator.getitem}
        if (not training or len(outputs) != len(bn.users)
                or not all(isinstance(v, float) for v in (momentum, eps))
                or not all(isinstance(v, torch.Tensor) for v in vals)
                or vals[1].dtype != bn.meta["val"][1].dtype):
            continue
        mode = detect_fake_mode(vals)

        def call(target, *args):
            node = graph.call_function(target, args)
            node.meta = {k: v for k, v in bn.meta.items() if k != "val"}
            args_vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
            with mode:
                node.meta["val"] = target(*args_vals)
            return node
        with graph.inserting_before(bn):
            norm = call(aten_ops._native_batch_norm_legit.no_stats, x, weight, bias, True,
                        momentum, eps)
            out, mean, invstd = (call(operator.getitem, norm, i) for i in range(3))
            var = call(aten_ops.sub.Tensor, call(aten_ops.reciprocal.default,
                                                 call(aten_ops.mul.Tensor, invstd, invstd)), eps)
            count = vals[0].numel() // vals[0].shape[1]  # values per channel
            if isinstance(count, int):
                unbias = count / max(count - 1, 1)
            else:  # symbolic sizes: n / (n - 1) computed in the graph
                count = call(operator.floordiv, call(aten_ops.sym_numel.default, x),
                             call(aten_ops.sym_size.int, x, 1))
                unbias = call(operator.truediv, count, call(operator.sub, count, 1))
            unbiased = call(aten_ops.mul.Tensor, var, unbias)
            new_mean = call(aten_ops.add.Tensor, call(aten_ops.mul.Tensor, mean, momentum),
                            call(aten_ops.mul.Tensor, mean_run, 1 - momentum))
            new_var = call(aten_ops.add.Tensor, call(aten_ops.mul.Tensor, unbiased, momentum),
                           call(aten_ops.mul.Tensor, var_run, 1 - momentum))
        for i, node in enumerate((out, mean, invstd, new_mean, new_var)):
            if i in outputs:
                outputs[i].replace_all_uses_with(node)
                graph.erase_node(outputs[i])
        graph.erase_node(bn)
        split += 1
    if split:
        graph.lint()
        joint.recompile()
    return split


# Tests only: host tensors may be swapped too (copied from host memory to
# host memory), so that the swap's rewrite runs without an accelerator.
_swap_host_tensors = False


def _swappable(joint, roles):
    """The forward ops whose outputs may wait for the backward in host
    memory: those that compute tensors on an accelerator (not views, whose
    bytes are their base's)."""
    import torch
    backward = set(roles["backward_ops"])
    free = set(roles["free"])
    names = []
    for node in joint.graph.nodes:
        if node.op != "call_function" or node.name in backward or node.name in free:
            continue
        val = node.meta.get("val")
        vals = val if isinstance(val, (tuple, list)) else [val]
        if any(isinstance(v, torch.Tensor) and (v.device.type != "cpu" or _swap_host_tensors)
               for v in vals):
            names.append(node.name)
    return names


def _swap_out(joint, swapped, recomputed, backward_ops):
    """Rewrites `joint` so that the forward tensors `swapped` (FX nodes)
    wait for the backward in host memory: each is copied to the host after
    it is made (asynchronously, into pinned memory) and back to its device
    for the backward's readers (the ops named in `backward_ops`; the
    forward's outputs keep the original); the backward's recomputations
    (ops named in `recomputed`) that read one read, as copies of their own,
    what came back. Returns the host copies (what the forward saves
    instead)."""
    import operator
    import torch
    from torch._guards import detect_fake_mode
    graph = joint.graph
    order = list(graph.nodes)

    def in_backward(node):
        return node.name in backward_ops

    def copy_to(node, device):
        val = node.meta["val"]
        # a copy to another device (inductor lowers the prim as its own
        # decomposition of _to_copy does); into pinned memory when non-blocking
        put = torch.ops.prims.device_put.default
        copy = graph.call_function(put, (node, device, True))
        copy.meta = {k: v for k, v in node.meta.items() if k != "val"}
        with detect_fake_mode([val]):
            copy.meta["val"] = put(val, device, True)
        return copy

    hosts, back = [], {}
    for x in swapped:
        with graph.inserting_after(x):
            host = copy_to(x, torch.device("cpu"))
        with graph.inserting_after(host):
            back[x] = copy_to(host, x.meta["val"].device)
        for user in list(x.users):
            if in_backward(user):
                user.replace_input_with(x, back[x])
        hosts.append(host)
    # recomputations reading what came back, and the outputs they give
    again = {n for n in order if n.name in recomputed}
    again |= {n for n in order if n.target is operator.getitem and n.args[0] in again}
    for node in order:
        if node not in again or not any(a in back for a in node.all_input_nodes):
            continue
        with graph.inserting_after(node):
            back[node] = graph.node_copy(node, lambda a: back.get(a, a))
        for user in list(node.users):
            if in_backward(user):
                user.replace_input_with(node, back[node])
    graph.lint()
    joint.recompile()
    return hosts


def _graft_partition(joint, num_fwd_outputs, budget, budget_bytes, static_nodes,
                     swap=False):
    """The forward and backward modules of graft's plan, and its report."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    _refuse_what_graft_does_not_partition(joint)  # before the graph changes
    _batch_norms_apart_from_their_statistics(joint)
    roles = _roles(joint, num_fwd_outputs)
    swappable = _swappable(joint, roles) if swap else []
    try:
        with unset_fake_temporarily():  # AOTAutograd partitions under fake tensors
            message, holders = aten.joint_message(joint, num_fwd_outputs)
    except ValueError as e:
        raise _Undecided(str(e))
    model = graft.load(aten._encode(message, "GraphDef"), format="pb", name="joint.aten.pb")
    plan = graft.partition(model, budget=budget, budget_bytes=budget_bytes,
                           swappable=swappable, **roles)
    # Python numbers and None arguments (graft's Consts and _Absent) travel
    # with the ops that read them: nothing to save.
    saved = [holders[t] for t in plan["saved"] if t in holders]
    constants = {n.name + ":0" for n in joint.graph.find_nodes(op="get_attr")}
    unheld = [t for t in plan["saved"] if t not in holders and t not in constants
              and not t.startswith(("_scalar_", aten.ABSENT + ":"))]
    if unheld:
        raise _Undecided("graft's plan saves %s, which no FX node holds" % ", ".join(unheld))
    swapped = [holders[t] for t in plan["swapped"]]
    hosts = (_swap_out(joint, swapped, set(plan["recomputed"]), set(roles["backward_ops"]))
             if swapped else [])
    saved = [n for n in saved if n not in swapped] + hosts
    fw, bw = _modules_saving(joint, saved, num_fwd_outputs, static_nodes,
                             recomputes=bool(plan["recomputed"] or swapped))
    report = {k: plan[k] for k in ("default_bytes", "least_bytes", "budget_bytes",
                                   "budget_met", "recomputed", "recomputed_flops", "swapped")}
    report["swapped_bytes"] = _saved_bytes(fw, num_fwd_outputs, {n.name for n in hosts})
    report["saved_bytes"] = _saved_bytes(fw, num_fwd_outputs) - report["swapped_bytes"]
    report["planned_bytes"] = plan["saved_bytes"]
    if swap and not swappable:
        report["note"] = "nothing to swap: the graph's tensors are in host memory already"
    return fw, bw, report


def _copy_of(joint):
    """A copy of a joint graph module whose nodes and their meta are the
    graph's own (not deep copies): what torch's default partition gets when
    graft, having changed the graph, falls back."""
    import torch.fx
    graph = torch.fx.Graph()
    value, output = graph.graph_copy(joint.graph, {}, return_output_node=True)
    graph.output(value).meta = dict(output.meta)
    copy = torch.fx.GraphModule(joint, graph)
    copy.meta = dict(getattr(joint, "meta", {}))
    return copy


def _partition_fn(budget, budget_bytes, inner, strategy="budget", budget_given=True):
    """AOTAutograd's partition_fn: graft's plan, or torch's default
    partition (said in the report) where graft cannot decide safely.

    A graph with torch.utils.checkpoint regions gets torch's partition of
    them unless the user gave a budget (or a strategy other than
    "budget"): then graft plans it as any other graph, saving what the
    policies say MUST_SAVE. The report's ``checkpoint_bytes`` is what
    torch's partition of the regions saves."""

    def partition(joint, joint_inputs, *, num_fwd_outputs, static_lifetime_input_indices=None,
                  **kwargs):
        from torch._functorch import partitioners as tp
        indices = static_lifetime_input_indices or []
        info = tp.classify_nodes(joint, indices, num_fwd_outputs)

        def torch_default(graph):
            return tp.default_partition(graph, joint_inputs, num_fwd_outputs=num_fwd_outputs,
                                        static_lifetime_input_indices=indices)
        # graft changes the graph before it knows it can partition it (the
        # batch norms' split; swapping): the fallback gets it as it was
        changes = strategy == "swap" or _training_batch_norms(joint)
        as_given = _copy_of(joint) if changes else joint
        checkpointed, checkpoint_bytes = None, None
        if _checkpoint_policies(joint):
            checkpointed = torch_default(_copy_of(joint))  # the regions as torch recomputes them
            checkpoint_bytes = _saved_bytes(checkpointed[0], num_fwd_outputs)
        try:
            if checkpointed and strategy == "budget" and not budget_given:
                raise _Undecided("the model's torch.utils.checkpoint regions, as torch "
                                 "partitions them (give a memory_budget for graft's plan)")
            fw, bw, report = _graft_partition(joint, num_fwd_outputs, budget, budget_bytes,
                                              info.static_lifetime_input_nodes,
                                              swap=strategy == "swap")
            report["fallback"] = None
        except (_Undecided, graft.Error) as e:
            fw, bw = checkpointed or torch_default(as_given)
            saved = _saved_bytes(fw, num_fwd_outputs)
            report = {"saved_bytes": saved, "default_bytes": saved, "fallback": str(e),
                      "recomputed": [], "recomputed_flops": 0, "swapped": [],
                      "swapped_bytes": 0}
        if checkpoint_bytes is not None:
            report["checkpoint_bytes"] = checkpoint_bytes
        report["inner"] = inner
        report["strategy"] = strategy
        if strategy == "memory" and report.get("least_bytes") is not None:
            # the fewest bytes any partition saves is the budget it meets
            report["budget_bytes"], report["budget_met"] = report["least_bytes"], True
        _partition_reports.append(report)
        return fw, bw
    return partition


_partitioner_class = None


def _inductor_partitioner():
    """Inductor's hook for a partitioner (a CustomPartitionerFn, made on
    first use so that importing graft.torch does not import torch)."""
    global _partitioner_class
    if _partitioner_class is None:
        from torch._inductor.custom_graph_pass import CustomPartitionerFn

        class _GraftPartitioner(CustomPartitionerFn):
            def __init__(self, memory_budget, budget_bytes, strategy, budget_given):
                self.memory_budget, self.budget_bytes = memory_budget, budget_bytes
                self.strategy, self.budget_given = strategy, budget_given

            def __call__(self, joint, joint_inputs, **kwargs):
                kwargs.pop("compiler", None)
                return _partition_fn(self.memory_budget, self.budget_bytes, "inductor",
                                     self.strategy, self.budget_given)(
                                         joint, joint_inputs, **kwargs)

            def uuid(self):
                return None  # not cached: each compile plans (and reports) again

        _GraftPartitioner.__module__ = __name__
        globals()["_GraftPartitioner"] = _partitioner_class = _GraftPartitioner
    return _partitioner_class


STRATEGIES = ("budget", "speed", "memory", "swap")


def backend(memory_budget: Optional[float] = None, *, strategy: str = "budget",
            budget_bytes: Optional[int] = None, inner: str = "inductor"):
    """A torch.compile backend whose forward saves, for the backward, at
    most ``memory_budget`` x the bytes torch's default partitioner saves
    (or ``budget_bytes``), recomputing the rest in the backward at the
    least FLOPs graft's planner finds (analysis/partition.h): a minimum cut
    that prices saved bytes against recomputed FLOPs, searched for the
    budget.

        torch.compile(model, backend=graft.torch.backend(0.5))

    ``inner``: "inductor" (default) compiles the forward and backward
    graphs with inductor (its joint-graph passes first, then graft's
    partition); "eager" runs them as they are. Random ops (dropout) are
    never recomputed, nor anything that reads state the step mutates (batch
    norms' running statistics); graphs graft cannot read (ops outside
    ATen, functionalized RNG, a checkpoint policy's MUST_RECOMPUTE, sizes
    that depend on data) get torch's default partition, said in
    ``partition_reports()``. A model's torch.utils.checkpoint regions
    stand (torch's partition of them) unless a budget or another strategy
    is given; then graft plans the graph as any other. A budget below what any partition saves saves
    the least (``budget_met``: False). A graph compiled for dynamic shapes
    is planned at the sizes it was traced with (its symbolic sizes'
    hints); the plan is correct at every size, and its bytes, like the
    report's, scale with the sizes.

    ``strategy`` names the ends of the same search, as the TensorFlow
    checkpoint library's strategies: "budget" (the default: fit
    ``memory_budget``, 1.0 unless given, or ``budget_bytes``), "speed" (no
    recomputed matrix FLOPs: the fewest saved bytes at no extra cost,
    budget 1.0), "memory" (the fewest saved bytes any partition reaches,
    at the least FLOPs for them), "swap" (fit ``memory_budget``, 0.0 unless
    given, or ``budget_bytes``, counting only the bytes left on the device:
    saved tensors of an accelerator wait for the backward in pinned host
    memory, the earliest made first, each copied out as it is made and back
    just before the backward first reads it, on the compute stream;
    recomputation only where swapping all cannot fit the budget; in the
    report ``swapped`` and ``swapped_bytes``)."""
    if inner not in ("inductor", "eager"):
        raise ValueError("graft.torch.backend: inner is 'inductor' or 'eager', not %r" % (inner,))
    if strategy not in STRATEGIES:
        raise ValueError("graft.torch.backend: strategy is one of %s, not %r"
                         % (", ".join(STRATEGIES), strategy))
    if strategy in ("speed", "memory") and (memory_budget is not None
                                             or budget_bytes is not None):
        raise ValueError("graft.torch.backend: strategy %r sets its own budget; give "
                         "memory_budget or budget_bytes with strategy 'budget' or 'swap'"
                         % (strategy,))
    budget_given = memory_budget is not None or budget_bytes is not None
    if memory_budget is None:
        memory_budget = {"budget": 1.0, "speed": 1.0, "memory": 0.0, "swap": 0.0}[strategy]
    if budget_bytes is None and not 0 <= memory_budget <= 1:
        raise ValueError("graft.torch.backend: memory_budget is a fraction in [0, 1], not %r"
                         % (memory_budget,))
    partition = _partition_fn(memory_budget, budget_bytes, inner, strategy, budget_given)

    def compile_graph(gm, example_inputs):
        # No compile caches: their keys do not hold the partition (a cached
        # graph of another budget, or of torch's partitioner, would come
        # back), and each graph's report comes from planning it.
        import torch._functorch.config as functorch_config
        from torch._inductor import config as inductor_config
        with functorch_config.patch(enable_autograd_cache=False), \
                inductor_config.patch(fx_graph_cache=False):
            if inner == "eager":
                from torch._dynamo.backends.common import aot_autograd
                from torch._functorch.compilers import nop
                return aot_autograd(fw_compiler=nop, bw_compiler=nop,
                                    partition_fn=partition)(gm, example_inputs)
            from torch._inductor.compile_fx import compile_fx
            with inductor_config.patch(
                    custom_partitioner_fn=_inductor_partitioner()(
                        memory_budget, budget_bytes, strategy, budget_given)):
                return compile_fx(gm, example_inputs)
    return compile_graph
