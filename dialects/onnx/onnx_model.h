// ONNX models (ModelProto, `.onnx`) as graft graphs: the ONNX dialect's
// codec. The graph IR is the one TensorFlow graphs use; an ONNX model maps
// onto it as
//   graph input (not an initializer)  ->  Placeholder node named as the value
//   initializer                       ->  Const node named as the initializer
//   node                              ->  node (op: op_type; another domain's
//                                         op: `domain.op_type`), named as
//                                         the node (unnamed: `op_type_N`)
//   graph output                      ->  `_Retval` node reading the value
//   absent optional input ("")        ->  an input from the `_absent` node
// and ONNX's value names become endpoints (`node:port`). Everything else
// (the model's header, opset imports, functions, metadata, doc strings,
// attrs graft does not model: graphs, type protos) is kept in the graph's
// OnnxOrigin and written back as it was. Saving writes the nodes in
// topological order (the original order where it is one); a node or
// initializer no rewrite touched is written from its original message, so
// an unmodified model keeps every initializer's bytes. Large initializers'
// bytes are never copied on reading: they stay in the file's mapping (or
// the mapped external data file) and are written from there.
#ifndef GRAFT_DIALECTS_ONNX_ONNX_MODEL_H_
#define GRAFT_DIALECTS_ONNX_ONNX_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dialect.h"
#include "engine/graph.h"
#include "dialects/onnx/onnx_data.h"
#include "proto/onnx.pb.h"

namespace graft {

struct OnnxOrigin : DialectOrigin {
  absl::string_view dialect() const override { return "onnx"; }
  // The model, its graph without node, initializer, input, output and
  // value_info (those are rebuilt from the graph on save).
  onnx::ModelProto model;
  int64_t opset = 0;  // of the default domain
  std::map<std::string, int64_t> opsets;  // by domain ("" the default)
  // The opset `op` is defined at: its domain's (`domain.Name`) or the
  // default's; 0 when the model imports none.
  int64_t OpsetOf(absl::string_view op) const;
  // Whether the model imports the domain of `op` (the default domain: any).
  bool ImportsDomainOf(absl::string_view op) const;
  // The opset a node of `op` is validated and written at: OpsetOf, or, for
  // a domain the model does not import (a rewrite's onnxruntime op), the
  // op's newest version, which the writer imports.
  int64_t OpsetWritten(absl::string_view op) const;
  std::map<std::string, onnx::NodeProto> nodes;           // by node name
  std::map<std::string, onnx::TensorProto> initializers;  // by name
  std::vector<onnx::ValueInfoProto> inputs;   // in order
  std::vector<onnx::ValueInfoProto> outputs;  // in order
  std::map<std::string, onnx::ValueInfoProto> value_info;  // by value name
  // Each node's output value names as read (by node name); a node that
  // takes another's name (a rewrite's replacement) takes its values' names.
  std::map<std::string, std::vector<std::string>> output_names;
  // The folder external data was read from ("" when none was given), and
  // the data files (locations in it) the initializers' external data is in.
  std::string folder;
  std::set<std::string> external_locations;
  // The model file as named when read ("" for bytes): its real folder may
  // hold its data too (files.h, ModelFolder).
  std::string model_file;
  // Nodes that read a value a later node of the file writes (ONNX wants
  // nodes in topological order): node name -> that value.
  std::map<std::string, std::string> unsorted;
  // Initializers and graph inputs whose value names the IR cannot take as
  // node names (`w:0`, as TensorFlow's exporters name every value: the IR
  // reads `:` as a port): value name -> the node's name (`w_0`), and back.
  std::map<std::string, std::string> node_of_value;
  std::map<std::string, std::string> value_of_node;
  // The value an initializer's or input's node stands for.
  const std::string& ValueOf(const std::string& node) const {
    auto it = value_of_node.find(node);
    return it == value_of_node.end() ? node : it->second;
  }
  const std::string& NodeOf(const std::string& value) const {
    auto it = node_of_value.find(value);
    return it == node_of_value.end() ? value : it->second;
  }
  // A subgraph's (dialects/onnx/onnx_bodies.h): the values it reads from the
  // scopes around, Placeholders in its graph that are not its inputs.
  std::set<std::string> captures;
};

// The graph's ONNX model, or nullptr for another dialect's graph.
const OnnxOrigin* OnnxOf(const Graph& graph);

// An ONNX element type (TensorProto.DataType) as the IR's dtype;
// DT_INVALID for types the IR lacks (float8, int4, ...).
tf::DataType OnnxElemType(int elem_type);

// The value name an ONNX graph's tensor has in its file: an initializer's
// or input's value, a node's output as the file names it; empty for a
// value a rewrite made (it is named on save).
std::string OnnxValueName(const Graph& graph, Endpoint tensor);

// The op a node of `domain` with `op_type` has in the graph.
std::string OnnxOpName(absl::string_view domain, absl::string_view op_type);

// Whether `path` names an ONNX model (by its .onnx extension, or
// .onnxtxt for the text form).
bool IsOnnxPath(absl::string_view path);

// The text form (`.onnxtxt`): the ModelProto in protobuf's text format,
// for golden cases and review. Text to model bytes (errors located at
// `source:line:column`), and model bytes to text.
bool IsOnnxTextPath(absl::string_view path);
absl::StatusOr<std::string> OnnxTextToBinary(const std::string& text,
                                             const std::string& source);
absl::StatusOr<std::string> OnnxBinaryToText(const std::string& bytes);

// A node's subgraphs (If/Loop/Scan bodies) read values of the scopes
// around it by name (captures). In the graph a node's captures are
// trailing inputs after its operands, so rewrites keep what a body reads
// produced; the attr `_captures` lists the names the bodies read, and
// saving renames a capture whose producer a rewrite replaced.
// The attr listing a node's captures, and their count (0 for a node
// without subgraphs).
inline constexpr char kCapturesAttr[] = "_captures";
int OnnxCaptureCount(const Node& node);

// The values `node`'s subgraphs (nested ones too) read from the scopes
// around the node, in order of first reading.
std::vector<std::string> OnnxCapturedNames(const onnx::NodeProto& node);

// The values subgraph `body` reads from the scopes around it.
std::vector<std::string> OnnxSubgraphReads(const onnx::GraphProto& body);

// The subgraphs an attribute holds (`g`, then `graphs`).
std::vector<const onnx::GraphProto*> OnnxAttrBodies(const onnx::AttributeProto& a);

// `body` with every read of an outer value renamed as `renames` says
// (nested subgraphs too).
void RenameCaptures(const std::map<std::string, std::string>& renames,
                    onnx::GraphProto* body);
// The same for every subgraph of `node`.
void RenameCaptures(const std::map<std::string, std::string>& renames,
                    onnx::NodeProto* node);

// An ONNX model's bytes as a graph; `source` names them in errors.
// `owner` keeps `bytes` alive as long as the graph, so large initializers
// stay where they are (nullptr: they are copied). `folder` is where the
// model's external data lies (the model file's folder); without one,
// external data is an error.
absl::StatusOr<Graph> ParseOnnx(absl::string_view bytes,
                                const std::string& source,
                                std::shared_ptr<const void> owner = nullptr,
                                std::optional<std::string> folder = std::nullopt);

// Where a written model's tensors go. Tensors no rewrite touched stay as
// they were: in the model, or in the original's external data files (the
// model refers to them by the same locations; written elsewhere, each such
// file is copied whole beside it, unless the written model reads less than
// half of it: then the tensors it still reads are written to `data_file`
// and the file is not copied). New and changed tensors of 1 KiB or more go
// to `data_file` when the original kept external data; the rest are
// written in the model.
struct OnnxWriteOptions {
  std::string folder;     // the output's folder; "" for bytes
  std::string data_file;  // location in `folder`; "" writes all in the model
};

// A model as the files that hold it.
struct OnnxFiles {
  onnx_data::Pieces model;
  struct DataFile {
    std::string location;      // relative to the model's folder
    onnx_data::Pieces pieces;  // its bytes, or
    std::string copy_from;     // the file to copy whole
  };
  std::vector<DataFile> data;
};

// The graph (read by ParseOnnx, then rewritten) as the files of a model.
absl::StatusOr<OnnxFiles> PlanOnnxSave(const Graph& graph,
                                       const OnnxWriteOptions& options);

// The same as model bytes, external data referred to where it was.
absl::StatusOr<std::string> SerializeOnnx(const Graph& graph);

}  // namespace graft

#endif  // GRAFT_DIALECTS_ONNX_ONNX_MODEL_H_
