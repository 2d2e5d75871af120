"""C++ code for a .proto, compiled by the system protoc (no download)."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def cc_proto(name, src, deps = [], imports = []):
    """cc_library `name` from `src` (x.proto -> x.pb.h, x.pb.cc); `imports`:
    the .proto files it imports (their cc_proto targets go in `deps`)."""
    stem = src[:-len(".proto")]
    native.genrule(
        name = name + "_gen",
        srcs = [src] + imports,
        outs = [stem + ".pb.cc", stem + ".pb.h"],
        cmd = "protoc --cpp_out=$(GENDIR) $(location %s)" % src,
    )
    cc_library(
        name = name,
        srcs = [stem + ".pb.cc"],
        hdrs = [stem + ".pb.h"],
        # Generated code leaves parameters unused.
        copts = ["-Wno-unused-parameter"],
        deps = deps + ["@system//:protobuf"],
    )
