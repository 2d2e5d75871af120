"""TensorFlow's own peak memory of a training step, less what was
allocated before it, with TensorFlow's default threading (as written: see
below), beside graft mem's estimate of the graph TensorFlow runs.

Each measurement runs in a fresh Python process: TensorFlow sizes its
global inter-op thread pool from the first session a process opens, so a
test that opened a one-thread session earlier would otherwise change the
threading (and the schedule, and the peak) of every later one.

The kernels are chosen explicitly in that process, never by the CPU's
default: TensorFlow turns its oneDNN path on by default only on some CPUs
(many Intel servers, not AMD EPYC), and its kernels and allocator differ
with it. Either way the peak is that of a traced step's allocation
records: the bytes its kernels asked for (Eigen's convolution gradients'
im2col buffers included), live at once, with the old buffer of each
variable an update copied, or whose assigned value's buffer it adopted,
freed after its last reader (the records miss that free:
`_variable_copy_frees`, `_variable_adoption_frees`); so corrected, a
step's records balance, and a measurement whose records do not is an
error. Without oneDNN the CPU allocator is
malloc, which keeps no statistics; with it, oneDNN's allocator
(`tf.config.experimental.get_memory_info`) counts only the allocations it
serves from its large-size pool, 256 KiB and more: its peak of the CIFAR
ResNet's step is 58.5 MiB where the records say 60.5, and the records
without the allocations under 256 KiB say 58.5 (its pipeline: 15.0, 15.4
and 15.0; 18.2 by the records before the copies' frees were added).

    python tf_memory.py [--as-written] [--runs N] GRAPH.pb...   # JSON list of bytes
    python tf_memory.py --records MODEL   # JSON [peak, node start order]
    python tf_memory.py --report [--runs N] GRAPH.pb...   # the table below
    python tf_memory.py --report --accelerator DEVICE GRAPH.pb...   # swapped graphs
    python tf_memory.py --grappler IN.pb OUT.pb...   # Grappler's graphs
    python tf_memory.py --copies [--as-written] GRAPH.pb...   # variables a step copies

`--report` (and `stats()`) measures each graph N times (5 by default) in
each of four settings, TensorFlow's graph optimizers (Grappler) on and
off, oneDNN on and off, each setting in its own process, and prints the
smallest, median and largest peak beside graft mem's estimate of the graph
TensorFlow runs there (`estimates()`): the graph as given with Grappler
off, the graph Grappler makes of it (graft.tf.grappler, with oneDNN on or
off as the session) with Grappler on; oneDNN's kernels' scratch or Eigen's
(`graft mem --cpu-kernels`, this machine's threads).
With `--accelerator DEVICE` (graphs placed for an accelerator, as the swap
library writes them, unplaced ops on DEVICE) each graph runs on two CPU
devices (`on_two_cpus`) and the peak is the accelerator's, beside graft
mem's of DEVICE (`--device-default`) where the accelerator's kernels are
modelled: Grappler off, oneDNN on (without oneDNN, TensorFlow's CPU:0 also
holds Eigen's convolution scratch, which graft mem does not count on an
accelerator).

`--as-written` turns TensorFlow's graph optimizers (Grappler) off, so that
TensorFlow runs the graph it is given, one op at a time (one inter-op
thread), and gives the smallest peak of its runs (what the schedule needs;
timing and the allocator's growth only add to it): a small graph's largest
peak moved by 20-30% from process to process on 2 cores.
`--records MODEL` runs one step of training_graphs.MODELS[MODEL] with one
thread and full tracing, and gives the peak of its RunMetadata allocation
records and the order its nodes started in.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# What every measuring child process runs with, whatever the CPU.
MEASURING_ENV = {"TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}


def _child(args, onednn=True, timeout=600):
    """Runs this script with `args` in a fresh process, oneDNN on or off:
    the JSON its last line prints (None when it prints nothing)."""
    proc = subprocess.run([sys.executable, os.path.join(HERE, "tf_memory.py"), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=_child_env(onednn))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


# Set by the test command for suites that run beside another (scripts/test.sh).
SHARED_CORES_ENV = "GRAFT_TESTS_SHARE_CORES"


def _measuring_alone():
    """A peak measured while another suite runs is that suite's timing as
    much as the plan's (a swap-in run early, a variable copied): refused,
    with what to do, in a run that shares the cores."""
    if os.environ.get(SHARED_CORES_ENV) == "1":
        raise AssertionError(
            "a memory measurement in a run that shares the cores (%s=1): mark the test "
            "@pytest.mark.measures_memory; scripts/test.sh runs those alone" % SHARED_CORES_ENV)


def _child_env(onednn):
    env = dict(os.environ, **MEASURING_ENV)
    env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    env.pop("TF_CPU_ALLOCATOR_USE_BFC", None)
    return env


def write_graphs(graph_defs, tmp_path):
    paths = []
    for i, graph_def in enumerate(graph_defs):
        path = os.path.join(str(tmp_path), "tf_memory_%d.pb" % i)
        with open(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        paths.append(path)
    return paths


# The four settings stats() measures: (Grappler on, oneDNN on).
SETTINGS = ((True, True), (False, True), (True, False), (False, False))


def stats(graph_defs, tmp_path, runs=5, settings=SETTINGS):
    """{(grappler, onednn): [every run's peak in bytes, per graph]}, each
    setting measured in one fresh process, `runs` training steps of each
    graph after a warm-up (TensorFlow's default threading)."""
    _measuring_alone()
    paths = write_graphs(graph_defs, tmp_path)
    out = {}
    for grappler, onednn in settings:
        args = ["--runs", str(runs), "--all"] + ([] if grappler else ["--no-grappler"]) + paths
        out[(grappler, onednn)] = _child(args, onednn, timeout=1200)
    return out


# The host's device in a graph placed by on_two_cpus().
HOST = "/device:CPU:1"


def on_two_cpus(graph_def):
    """A copy of `graph_def` placed for a CPU-only process with two CPU
    devices, so that TensorFlow's executor measures what an accelerator
    would hold: the ops on the host (a CPU device) go to CPU:1, every
    other op to CPU:0 (the accelerator, whose peak `_measure` gives); an
    Identity that moves a tensor between them becomes a DeepCopy, so that
    the tensor is copied as a transfer copies it (two CPU devices of one
    process would otherwise share the buffer, and a swap-out would free
    nothing)."""
    import tensorflow as tf
    placed = tf.compat.v1.GraphDef()
    placed.CopyFrom(graph_def)
    host = lambda device: tf.DeviceSpec.from_string(device).device_type == "CPU"  # noqa: E731
    devices = {node.name: host(node.device) for node in placed.node}
    for node in placed.node:
        on_host = devices[node.name]
        node.device = HOST if on_host else "/device:CPU:0"
        data = [i.split(":")[0] for i in node.input if not i.startswith("^")]
        if node.op == "Identity" and data and devices.get(data[0], on_host) != on_host:
            node.op = "DeepCopy"
    return placed


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def peaks(graph_defs, tmp_path, as_written=False, runs=3):
    """The peaks (bytes) of `graph_defs`, measured in one fresh process."""
    _measuring_alone()
    paths = write_graphs(graph_defs, tmp_path)
    return _child(["--runs", str(runs)] + (["--as-written"] if as_written else []) + paths)


def allocation_records(model):
    """(peak bytes of the RunMetadata allocation records, node names in the
    order they started) of one single-threaded training step of
    training_graphs.MODELS[model], measured in a fresh process."""
    peak, order = _child(["--records", model])
    return peak, order


def _records(model):
    import numpy as np
    import tensorflow as tf
    import training_graphs
    tf1 = tf.compat.v1
    graph = training_graphs.MODELS[model]()
    rng = np.random.default_rng(3)
    config = tf1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    with graph.as_default():
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        x = graph.get_tensor_by_name("x:0")
        labels = graph.get_tensor_by_name("labels:0")
        feed = {x: rng.standard_normal(x.shape.as_list()).astype(np.float32)}
        if labels.dtype == tf.int32:
            feed[labels] = rng.integers(0, 10, labels.shape.as_list()).astype(np.int32)
        else:
            feed[labels] = np.eye(10, dtype=np.float32)[rng.integers(0, 10, labels.shape[0])]
        sess.run("train", feed)  # warm up
        metadata = _traced_run(sess, ["train", "loss:0"], feed)
    starts = [(node.all_start_micros, node.node_name)
              for dev in metadata.step_stats.dev_stats for node in dev.node_stats]
    return [_records_peak(metadata), [name for _, name in sorted(starts)]]


def _traced_run(sess, fetches, feed, with_values=False):
    """A traced run's metadata; with `with_values`, (values, metadata)."""
    import tensorflow as tf
    tf1 = tf.compat.v1
    metadata = tf1.RunMetadata()
    values = sess.run(fetches, feed, run_metadata=metadata, options=tf1.RunOptions(
        trace_level=tf1.RunOptions.FULL_TRACE, output_partition_graphs=True))
    return (values, metadata) if with_values else metadata


def traced_step_peaks(graph_def, runs=3, grappler=True, output="Identity"):
    """Peaks of a traced `tf.function` step's graph (variables as resource
    placeholders, its updates behind its output `output`) run in this
    process, and its output at each: each resource placeholder bound to a
    fresh variable of the shape its reads (or assignments) give, the other
    placeholders fed random values, each seeded by its name (the same for
    a rewritten graph); `runs` traced steps after a warm-up."""
    _measuring_alone()
    import zlib
    import numpy as np
    import tensorflow as tf
    tf1 = tf.compat.v1
    nodes = {n.name: n for n in graph_def.node}
    users = {}
    for n in graph_def.node:
        for name in n.input:
            users.setdefault(name.lstrip("^").split(":")[0], []).append(n)

    def dims(node, attr="_output_shapes"):
        return [d.size for d in node.attr[attr].list.shape[0].dim]

    graph = tf.Graph()
    with graph.as_default():
        input_map, feed = {}, {}
        for n in graph_def.node:
            if n.op != "Placeholder":
                continue
            rng = np.random.default_rng(zlib.crc32(n.name.encode()))
            dtype = tf.as_dtype(n.attr["dtype"].type)
            if dtype != tf.resource:
                p = tf1.placeholder(dtype, [d.size for d in n.attr["shape"].shape.dim])
                input_map[n.name] = p
                shape = p.shape.as_list()
                feed[p] = (rng.random(shape).astype(np.float32) if dtype.is_floating
                           else rng.integers(0, 10, shape).astype(dtype.as_numpy_dtype))
                continue
            shape, value_dtype = [], tf.float32
            for user in users.get(n.name, []):
                if user.op == "ReadVariableOp" or user.op.endswith("VariableOp"):
                    value_dtype = tf.as_dtype(user.attr["dtype"].type)
                    source = user if user.op == "ReadVariableOp" else nodes[user.input[1].split(":")[0]]
                    shape = dims(source)
                    break
            initial = (0.05 * rng.standard_normal(shape)).astype(value_dtype.as_numpy_dtype)
            input_map[n.name] = tf1.Variable(initial, use_resource=True).handle
        out, = tf1.import_graph_def(graph_def, input_map=input_map,
                                    return_elements=[output + ":0"], name="step")
        init = tf1.global_variables_initializer()
    config = tf1.ConfigProto()
    if not grappler:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        sess.run(out, feed)  # warm up
        peaks, outputs = [], []
        for _ in range(runs):
            value, metadata = _traced_run(sess, out, feed, with_values=True)
            outputs.append(value)
            peaks.append(_records_peak(metadata))
        return peaks, outputs


def _records_peak(metadata, device=None):
    """The peak of a traced step's allocation records: the bytes its
    kernels asked for (outputs and scratch), live at once, with the frees
    the records miss (`_variable_copy_frees`, `_variable_adoption_frees`);
    of the ops on `device` (a suffix of the device's name) where one is
    given. With those frees a step's records balance: what they allocate
    and never free is the step's fetched values, so a larger remainder is a
    buffer the measurement does not account for, and an error."""
    on_device = lambda dev: device is None or dev.device.endswith(device)  # noqa: E731
    events = [(r.alloc_micros, r.alloc_bytes)
              for dev in metadata.step_stats.dev_stats if on_device(dev) for node in dev.node_stats
              for memory in node.memory for r in memory.allocation_records]
    assert events, "TensorFlow recorded no allocations"
    step = _Step(metadata, on_device)
    events += _copy_frees(step) + _adoption_frees(step)
    live = peak = 0
    for _, size in sorted(events):
        live += size
        peak = max(peak, live)
    assert abs(live) <= UNBALANCED_BYTES, (
        "the step's allocation records do not balance: %.2f MiB %s at its end (peak %.2f MiB)"
        % (abs(live) / 2**20, "kept" if live > 0 else "freed twice", peak / 2**20))
    return peak


# The most a step's records may keep (its fetched values: losses, counts).
UNBALANCED_BYTES = 2**20


class _Step:
    """A traced step's nodes, their stats and data readers."""

    def __init__(self, metadata, on_device):
        self.nodes = {n.name: n for graph in metadata.partition_graphs for n in graph.node}
        self.stats = {s.node_name: s for dev in metadata.step_stats.dev_stats
                      for s in dev.node_stats}
        self.ran_here = [s.node_name for dev in metadata.step_stats.dev_stats
                         if on_device(dev) for s in dev.node_stats]
        self.readers = {}  # data readers only: a control edge holds no buffer
        for node in self.nodes.values():
            for name in node.input:
                if not name.startswith("^"):
                    self.readers.setdefault(name.split(":")[0], []).append(node.name)

    def end(self, name):
        return self.stats[name].all_start_micros + self.stats[name].all_end_rel_micros

    def kept(self, name):
        """The bytes a node's records allocate and do not free in the step."""
        return sum(r.alloc_bytes for m in self.stats[name].memory
                   for r in m.allocation_records)

    def op(self, name):
        return self.nodes[name].op if name in self.nodes else ""

    def old_buffer_freed(self, update):
        """When a variable's old buffer is freed after `update` gave it a
        new one: at the end of the update or of the last data reader of a
        value read from it before (through Identity), whichever is later."""
        freed = self.end(update)
        handle = self.nodes[update].input[0].split(":")[0]
        start = self.stats[update].all_start_micros
        reads = [r for r in self.readers.get(handle, []) if self.op(r) == "ReadVariableOp"
                 and r in self.stats and self.stats[r].all_start_micros <= start]
        while reads:
            read = reads.pop()
            for reader in self.readers.get(read, []):
                if reader in self.stats:
                    freed = max(freed, self.end(reader))
                if self.op(reader) == "Identity":
                    reads.append(reader)
        return freed


def _is_update(op):
    return op.startswith("ResourceApply") or op.startswith("Assign") and op.endswith("VariableOp")


def _variable_copy_frees(metadata, on_device=lambda dev: True):
    """(micros, -bytes) at which each variable's old buffer is freed where
    an update copied it, the step's records having only the copy.

    An in-place update (`AssignSubVariableOp`, `ResourceApply*`) copies the
    variable when a tensor read from it is still held, by a reader not yet
    run (TensorFlow's thread timing can run a weight's update before its
    input gradient). The copy is the variable's buffer from then on, so it
    is never freed in the step; the old buffer is freed once the last
    reader of a value read before the update has run, but it was allocated
    in an earlier step and its free is not in this step's records. Left
    uncorrected, each copy counts to the step's end, as if the process held
    both buffers (the CIFAR ResNet's pipeline with oneDNN: 2.9 MiB of 51
    copies). The free is put at `_Step.old_buffer_freed`."""
    return _copy_frees(_Step(metadata, on_device))


def _copy_frees(step):
    return [(step.old_buffer_freed(name), -step.kept(name)) for name in step.ran_here
            if _is_update(step.op(name)) and step.kept(name) > 0]


def _variable_adoption_frees(metadata, on_device=lambda dev: True):
    """(micros, -bytes) at which each variable's old buffer is freed where
    an `AssignVariableOp` adopted its value's buffer as the variable's.

    Assigning a value no other op still reads takes its buffer rather than
    copying it (Keras 3 SGD's `m.assign(m * 0.9 - lr * g)`, batch norms'
    moving statistics), and the records keep that buffer, allocated by the
    op that computed it, to the step's end, as if the process held the old
    and new values of every such variable (90 MiB of momenta on Keras 3's
    ResNet50: a third of its step's peak). The adopted buffer is the first
    one the step keeps from the value back through the ops that may have
    computed their result in their input's buffer (`a * b - c` in `a * b`'s),
    and the old buffer's free is put at `_Step.old_buffer_freed`."""
    return _adoption_frees(_Step(metadata, on_device))


def _adoption_frees(step):
    frees, adopted = [], set()
    for name in step.ran_here:
        if step.op(name) != "AssignVariableOp" or step.kept(name) > 0:
            continue  # a copy into a new buffer: _variable_copy_frees
        frontier = [step.nodes[name].input[1].split(":")[0]]
        for _ in range(4):
            found = next((f for f in frontier if f in step.stats and f not in adopted
                          and step.kept(f) > 0), None)
            if found:
                adopted.add(found)
                frees.append((step.old_buffer_freed(name), -step.kept(found)))
                break
            frontier = [i.split(":")[0] for f in frontier if f in step.nodes
                        for i in step.nodes[f].input if not i.startswith("^")]
    return frees


def _measure(path, as_written, runs, grappler=True, every_run=False, copies=False):
    """A graph's peaks (see peaks() and stats()); with `copies`, how many
    variables one step copies."""
    import tensorflow as tf
    from test_checkpoint import feeds
    tf1 = tf.compat.v1
    graph_def = tf1.GraphDef.FromString(open(path, "rb").read())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    config = tf1.ConfigProto()
    # A graph placed by on_two_cpus(): the accelerator's peak, CPU:0's.
    device = None
    if any(node.device == HOST for node in graph_def.node):
        config.device_count["CPU"] = 2
        device = "CPU:0"
    if as_written or not grappler:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    if as_written:
        # One op at a time, in the executor's order: the schedule graft mem
        # models, and a peak that does not move with the thread timing.
        config.inter_op_parallelism_threads = 1
    feed = feeds(graph_def)
    measured = []
    # The step's allocation records say what its kernels asked for (the
    # allocators' own statistics miss malloc's and oneDNN's small ones).
    with tf1.Session(graph=graph, config=config) as sess:
        sess.run("init")
        sess.run("train", feed)  # warm up
        if copies:  # the most of `runs` steps: the threads' timing moves them
            return max(len(_variable_copy_frees(_traced_run(sess, "train", feed)))
                       for _ in range(runs))
        for _ in range(runs):
            measured.append(_records_peak(_traced_run(sess, "train", feed), device))
    if every_run:
        return measured
    # As written, what the schedule needs: the smallest (timing and the
    # allocator's growth only add to it); by default, the largest.
    return min(measured) if as_written else max(measured)


def variable_copies(graph_defs, tmp_path, as_written=False):
    """How many variables a training step of each graph copies (an
    in-place update run while a value read from its variable is still to
    be read: `_variable_copy_frees`), the most of three steps, measured in
    one fresh process."""
    _measuring_alone()
    paths = write_graphs(graph_defs, tmp_path)
    return _child(["--copies"] + (["--as-written"] if as_written else []) + paths)


def grappler_graphs(paths, out_paths, onednn):
    """Writes to `out_paths` the graphs Grappler makes of the graphs at
    `paths` for a session fetching `train` (graft.tf.grappler), in one
    child with oneDNN on or off (Grappler's remapper fuses otherwise)."""
    _child(["--grappler", *[p for pair in zip(paths, out_paths) for p in pair]], onednn)


def _write_grappler_graphs(pairs):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "python"))
    import graft
    import graft.tf
    for path, out_path in zip(pairs[::2], pairs[1::2]):
        optimized = graft.tf.grappler(graft.load(path), ["train", "init"])
        with open(out_path, "wb") as f:
            f.write(optimized.data)


def estimates(paths, tmp_dir, settings=SETTINGS):
    """{setting: [graft mem's peak per graph]} of the graph TensorFlow runs
    in each setting: the graph as given where Grappler is off, Grappler's
    where it is on; with the scratch of oneDNN's kernels or, where oneDNN
    is off, Eigen's (this machine's threads)."""
    out = {}
    for grappler, onednn in settings:
        kernels = "onednn" if onednn else "eigen"
        graphs = paths
        if grappler:
            graphs = [os.path.join(str(tmp_dir), "grappler_%d_%d.pb" % (onednn, i))
                      for i in range(len(paths))]
            grappler_graphs(paths, graphs, onednn)
        out[(grappler, onednn)] = [_graft_peak(g, kernels) for g in graphs]
    return out


def _graft_peak(path, kernels="onednn", accelerator=None):
    """graft mem's peak of the graph at `path` fetching `train`: of its one
    device, or of `accelerator`, where unplaced ops go."""
    graft = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bazel-bin", "cli", "graft")
    placed = ["--device-default", accelerator] if accelerator else []
    proc = subprocess.run([graft, "mem", "--json", path, "--outputs", "train",
                           "--cpu-kernels", kernels, *placed],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    devices = json.loads(proc.stdout)["devices"]
    return next((d["peak_bytes"] for d in devices
                 if accelerator is None or d["device"] == accelerator), None)


def report(paths, runs, accelerator=None):
    """Prints each graph's peaks in the four settings beside graft mem's;
    with `accelerator`, the accelerator's peaks of graphs placed for one
    (on two CPU devices: `on_two_cpus`)."""
    import tensorflow as tf
    tf1 = tf.compat.v1
    graph_defs = [tf1.GraphDef.FromString(open(p, "rb").read()) for p in paths]
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        if accelerator:
            measured = stats([on_two_cpus(g) for g in graph_defs], tmp, runs)
            ours = {s: [_graft_peak(p, accelerator=accelerator) if s == (False, True) else None
                        for p in paths] for s in SETTINGS}
        else:
            measured = stats(graph_defs, tmp, runs)
            ours = estimates(paths, tmp)
    mib = lambda b: b / 2**20  # noqa: E731
    print("| graph | Grappler | oneDNN | min | median | max (MiB) | graft mem | graft / median |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for i, path in enumerate(paths):
        for setting, per_graph in measured.items():
            grappler, onednn = setting
            runs_i, estimate = per_graph[i], ours[setting][i]
            med = median(runs_i)
            print("| %s | %s | %s | %.1f | %.1f | %.1f | %s | %s |" % (
                os.path.basename(path), "on" if grappler else "off", "on" if onednn else "off",
                mib(min(runs_i)), mib(med), mib(max(runs_i)),
                "%.1f" % mib(estimate) if estimate else "-",
                "%.2f" % (estimate / med) if estimate else "-"))


def _take(argv, flag):
    """The value after `flag` in `argv`, both removed; None without it."""
    if flag not in argv:
        return None
    i = argv.index(flag)
    value = argv[i + 1]
    del argv[i:i + 2]
    return value


def main(argv):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, HERE)
    if argv[:1] == ["--grappler"]:
        _write_grappler_graphs(argv[1:])
        return
    if argv[:1] == ["--records"]:
        print(json.dumps(_records(argv[1])))
        return
    if argv[:1] == ["--copies"]:
        written = "--as-written" in argv
        print(json.dumps([_measure(p, written, 3, copies=True)
                          for p in argv[1:] if p != "--as-written"]))
        return
    flags = {"--as-written", "--all", "--no-grappler", "--report"}
    given = {a for a in argv if a in flags}
    argv = [a for a in argv if a not in flags]
    runs = int(_take(argv, "--runs") or (5 if "--report" in given or "--all" in given else 3))
    accelerator = _take(argv, "--accelerator")
    if "--report" in given:
        report(argv, runs, accelerator)
        return
    print(json.dumps([_measure(path, "--as-written" in given, runs,
                               grappler="--no-grappler" not in given,
                               every_run="--all" in given) for path in argv]))


if __name__ == "__main__":
    main(sys.argv[1:])
