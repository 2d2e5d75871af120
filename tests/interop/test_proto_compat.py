"""graft's GraphDef schema (proto/graph.proto) matches TensorFlow's field for
field: same messages, field numbers, types and labels, same enum values."""
import os

import pytest
from google.protobuf import descriptor_pb2

from conftest import ROOT

import tensorflow  # noqa: F401  (registers TensorFlow's descriptors)
from tensorflow.core.framework import (attr_value_pb2, full_type_pb2, function_pb2,
                                       graph_pb2, node_def_pb2, op_def_pb2,
                                       resource_handle_pb2, tensor_pb2,
                                       tensor_shape_pb2, types_pb2, versions_pb2)

try:
    from tensorflow.core.framework import graph_debug_info_pb2
except ImportError:  # older TensorFlow keeps it under protobuf/
    from tensorflow.core.protobuf import graph_debug_info_pb2

TF_MODULES = [attr_value_pb2, full_type_pb2, function_pb2, graph_pb2, node_def_pb2,
              op_def_pb2, resource_handle_pb2, tensor_pb2, tensor_shape_pb2,
              types_pb2, versions_pb2, graph_debug_info_pb2]


def is_repeated(field):
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == field.LABEL_REPEATED


def tf_descriptors():
    messages, enums = {}, {}
    for module in TF_MODULES:
        fd = module.DESCRIPTOR

        def walk(desc, prefix):
            messages[prefix + desc.name] = desc
            for nested in desc.nested_types:
                walk(nested, prefix + desc.name + ".")
            for e in desc.enum_types:
                enums[prefix + desc.name + "." + e.name] = e

        for desc in fd.message_types_by_name.values():
            walk(desc, "")
        for e in fd.enum_types_by_name.values():
            enums[e.name] = e
    return messages, enums


def our_descriptors():
    path = os.environ.get("GRAFT_PROTO_DESC",
                          os.path.join(ROOT, "bazel-bin", "proto", "graph.desc"))
    if not os.path.exists(path):
        pytest.fail("%s missing: build //proto:graph_descriptor_set" % path)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        fds.ParseFromString(f.read())
    messages, enums = {}, {}
    for fd in fds.file:
        def walk(desc, prefix):
            messages[prefix + desc.name] = desc
            for nested in desc.nested_type:
                if not nested.options.map_entry:
                    walk(nested, prefix + desc.name + ".")
            for e in desc.enum_type:
                enums[prefix + desc.name + "." + e.name] = e

        for desc in fd.message_type:
            walk(desc, "")
        for e in fd.enum_type:
            enums[e.name] = e
    return messages, enums


def test_every_message_matches_tensorflow():
    tf_messages, _ = tf_descriptors()
    ours, _ = our_descriptors()
    # OpList, OpDeprecation etc. are ours too; everything we define exists in TF.
    for name, desc in ours.items():
        assert name in tf_messages, "%s is not a TensorFlow message" % name
        theirs = tf_messages[name]
        our_fields = {f.name: f for f in desc.field}
        for field in theirs.fields:
            assert field.name in our_fields, "%s.%s missing" % (name, field.name)
            mine = our_fields[field.name]
            assert mine.number == field.number, "%s.%s number" % (name, field.name)
            assert mine.type == field.type, "%s.%s type" % (name, field.name)
            assert (mine.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED) == (
                is_repeated(field)), "%s.%s label" % (name, field.name)
        assert len(our_fields) == len(theirs.fields), "%s has extra fields" % name


def test_the_graph_messages_are_all_there():
    ours, _ = our_descriptors()
    for name in ["GraphDef", "NodeDef", "AttrValue", "AttrValue.ListValue", "NameAttrList",
                 "TensorProto", "TensorShapeProto", "TensorShapeProto.Dim", "VersionDef",
                 "FunctionDefLibrary", "FunctionDef", "OpDef", "GraphDebugInfo"]:
        assert name in ours, name


def test_every_enum_matches_tensorflow():
    _, tf_enums = tf_descriptors()
    _, ours = our_descriptors()
    for name in ["DataType", "FullTypeId"]:
        theirs = {v.name: v.number for v in tf_enums[name].values}
        mine = {v.name: v.number for v in ours[name].value}
        assert mine == theirs, name
