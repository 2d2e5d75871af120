"""Shared fixtures for the interop tests: TensorFlow (from PyPI) is the
reference that graft's output graphs must load and run in."""
import contextlib
import hashlib
import json
import os
import shutil
import subprocess

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import pytest  # noqa: E402

# The test command runs the TensorFlow suites with oneDNN off, then again
# with it on: True in that second pass.
ONEDNN_PASS = os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "1"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def graft_binary():
    path = os.environ.get("GRAFT_BIN", os.path.join(ROOT, "bazel-bin", "cli", "graft"))
    if not os.path.exists(path):
        pytest.fail("graft binary not found at %s: build //cli:graft first" % path)
    return path


@pytest.fixture(scope="session")
def graft():
    """Runs the graft command; returns the CompletedProcess."""
    binary = graft_binary()

    def run(*args, check=True):
        proc = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError("graft %s failed (%d): %s" % (
                " ".join(map(str, args)), proc.returncode, proc.stderr))
        return proc

    return run


def write_graph(graph_def, folder, name):
    """`graph_def` written as folder/NAME.pb; its path."""
    path = os.path.join(str(folder), name + ".pb")
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    return path


def graft_json(command, path, *args):
    """What `graft COMMAND --json PATH ARGS...` prints, parsed; an
    AssertionError with graft's message when it fails."""
    proc = subprocess.run([graft_binary(), command, "--json", str(path), *map(str, args)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError("graft %s %s failed (%d): %s" % (
            command, path, proc.returncode, proc.stderr))
    return json.loads(proc.stdout)


def device_peaks(path, *args):
    """graft mem's peak bytes per device of the graph at `path`: {device:
    bytes}, "" for unplaced ops."""
    return {d["device"]: d["peak_bytes"] for d in graft_json("mem", path, *args)["devices"]}


@contextlib.contextmanager
def module_folder(tmp_path_factory, name):
    """A folder for a module-scoped fixture's models, removed when the
    module is done: a session keeps every folder it made until it ends
    (the module zoos alone are gigabytes of ONNX models)."""
    path = tmp_path_factory.mktemp(name)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def numbers_report(name, header):
    """A generator for a module fixture: yields a list the tests append
    result lines to; at the end writes them (sorted) under a header to
    bazel-testlogs-interop/NAME and prints them."""
    lines = []
    yield lines
    path = repo_path("bazel-testlogs-interop", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # whole or not at all: a run stopped midway leaves the last whole report
    with open(path + ".%d" % os.getpid(), "w") as f:
        f.write(header + "\n")
        f.writelines(line + "\n" for line in sorted(lines))
    os.replace(f.name, path)
    print("\n" + "\n".join(sorted(lines)))


def repo_path(*parts):
    return os.path.join(ROOT, *parts)


def folder_digest(path):
    """{file under `path` (relative): SHA-256 of its bytes}: equal before
    and after a command that must leave its input untouched."""
    digests = {}
    for folder, _, files in os.walk(path):
        for name in files:
            full = os.path.join(folder, name)
            with open(full, "rb") as f:
                digests[os.path.relpath(full, path)] = hashlib.sha256(f.read()).hexdigest()
    return digests


@contextlib.contextmanager
def graph_session(graph_def):
    """A session of a fresh graph holding `graph_def`: several runs of one
    graph pay its import and Grappler's passes once."""
    import tensorflow as tf
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as sess:
        yield sess


def run_graph(graph_def, feeds, fetches):
    """Runs a GraphDef in TensorFlow (a fresh graph and session)."""
    with graph_session(graph_def) as sess:
        return sess.run(fetches, feed_dict=feeds)
