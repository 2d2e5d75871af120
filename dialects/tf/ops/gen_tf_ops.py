"""Regenerates dialects/tf/ops/tf_ops.pbtxt: the signatures of TensorFlow's ops.

graft reads op signatures (inputs, outputs, attrs and their defaults,
commutativity) from this snapshot to know tensor dtypes and output counts.
Documentation strings are dropped to keep the file small.

  .venv/bin/python dialects/tf/ops/gen_tf_ops.py > dialects/tf/ops/tf_ops.pbtxt
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import op_def_pb2  # noqa: E402
from tensorflow.python.client import pywrap_tf_session  # noqa: E402
from google.protobuf import text_format  # noqa: E402


def main():
    ops = op_def_pb2.OpList()
    buf = pywrap_tf_session.TF_GetAllOpList()
    ops.ParseFromString(pywrap_tf_session.TF_GetBuffer(buf))
    stripped = op_def_pb2.OpList()
    for op in sorted(ops.op, key=lambda o: o.name):
        if op.name.startswith("_"):
            continue  # internal ops never appear in user graphs
        out = stripped.op.add()
        out.CopyFrom(op)
        out.ClearField("summary")
        out.ClearField("description")
        out.ClearField("deprecation")
        for arg in list(out.input_arg) + list(out.output_arg):
            arg.ClearField("description")
            arg.ClearField("experimental_full_type")
        for attr in out.attr:
            attr.ClearField("description")
    sys.stdout.write("# TensorFlow %s op signatures; regenerate with "
                     "dialects/tf/ops/gen_tf_ops.py\n" % tf.__version__)
    sys.stdout.write(text_format.MessageToString(stripped))


if __name__ == "__main__":
    main()
