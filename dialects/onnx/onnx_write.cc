#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "dialects/onnx/onnx_ops.h"
#include "absl/strings/str_cat.h"
#include "dialects/onnx/onnx_convert.h"
#include "dialects/onnx/onnx_data.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/op_registry.h"

// The ONNX codec's writer (dialects/onnx/onnx_model.h).
namespace graft {
namespace {

using namespace onnx_internal;  // NOLINT: the codec's own conversions
using onnx::AttributeProto;

constexpr int kModelGraph = 7;        // ModelProto.graph
constexpr int kGraphInitializer = 5;  // GraphProto.initializer


bool Regular(const Node& n) {
  return n.op() != "Const" && n.op() != "Placeholder" && n.op() != "_Retval" &&
         n.op() != kAbsentOp;
}

// The value name of every tensor the saved model names: graph inputs and
// initializers keep theirs, graph outputs name what they read, nodes keep
// their outputs' names as read (by node name); the rest are made from the
// node name, unique.
class ValueNames {
 public:
  ValueNames(const Graph& graph, const OnnxOrigin& origin) : graph_(graph) {
    std::vector<NodeId> retvals;
    graph.ForEachNode([&](const Node& n) {
      if (n.op() == "Const" || n.op() == "Placeholder")
        Claim({n.id(), 0}, origin.ValueOf(n.name()));
      if (n.op() == "_Retval") retvals.push_back(n.id());
    });
    std::sort(retvals.begin(), retvals.end(), [&](NodeId a, NodeId b) {
      return graph.node(a).attr("index")->i() < graph.node(b).attr("index")->i();
    });
    // An output whose tensor is named otherwise (an input, another output)
    // is written through an Identity.
    for (NodeId r : retvals) {
      const Node& n = graph.node(r);
      const std::string& want =
          origin.outputs.at(static_cast<size_t>(n.attr("index")->i())).name();
      Endpoint e = n.input(0);
      auto it = names_.find(e);
      if (it != names_.end() && it->second == want) continue;
      if (it == names_.end() && Regular(graph.node(e.node)) && Claim(e, want)) continue;
      identities_.emplace_back(want, e);
      taken_.insert(want);
    }
    graph.ForEachNode([&](const Node& n) {
      if (!Regular(n)) return;
      auto it = origin.output_names.find(n.name());
      if (it == origin.output_names.end()) return;
      for (size_t k = 0; k < it->second.size(); ++k)
        Claim({n.id(), static_cast<int>(k)}, it->second[k]);
    });
  }

  std::string operator()(Endpoint e) {
    if (graph_.node(e.node).op() == kAbsentOp) return "";
    auto it = names_.find(e);
    if (it != names_.end()) return it->second;
    const std::string& node = graph_.node(e.node).name();
    std::string base = e.port == 0 ? node : absl::StrCat(node, ":", e.port);
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i) name = absl::StrCat(base, "_", i);
    Claim(e, name);
    return name;
  }
  const std::vector<std::pair<std::string, Endpoint>>& identities() const {
    return identities_;
  }
  // Which tensor each name names.
  absl::flat_hash_map<std::string, Endpoint> ByName() const {
    absl::flat_hash_map<std::string, Endpoint> out;
    for (const auto& [e, name] : names_) out[name] = e;
    return out;
  }

 private:
  bool Claim(Endpoint e, const std::string& name) {
    if (names_.count(e) || taken_.count(name) || name.empty()) return false;
    names_[e] = name;
    taken_.insert(name);
    return true;
  }
  const Graph& graph_;
  absl::flat_hash_map<Endpoint, std::string> names_;
  std::set<std::string> taken_;
  std::vector<std::pair<std::string, Endpoint>> identities_;
};

// The nodes in topological order, the original order where it is one (the
// smallest id first among those ready); an error for a cycle. A left-out
// input is written as "", not read from a node: it keeps no reader waiting
// (where the stand-in was made, by the reader or a rewrite, moves nothing).
absl::StatusOr<std::vector<NodeId>> WriteOrder(const Graph& graph) {
  std::vector<int> waiting(graph.id_limit(), 0);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<NodeId>> ready;
  graph.ForEachNode([&](const Node& n) {
    int inputs = static_cast<int>(n.control_inputs().size());
    for (int i = 0; i < n.num_inputs(); ++i)
      inputs += graph.node(n.input(i).node).op() == kAbsentOp ? 0 : 1;
    waiting[n.id()] = inputs;
    if (waiting[n.id()] == 0) ready.push(n.id());
  });
  std::vector<NodeId> order;
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    const Node& n = graph.node(id);
    if (n.op() == kAbsentOp) continue;
    auto release = [&](NodeId c) {
      if (--waiting[c] == 0) ready.push(c);
    };
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (const InputSlot& s : n.consumers(p)) release(s.node);
    }
    for (NodeId c : n.control_consumers()) release(c);
  }
  if (static_cast<int>(order.size()) != graph.num_nodes())
    return absl::InvalidArgumentError("the graph has a cycle; ONNX needs none");
  return order;
}

// A node's attributes from the graph; kinds graft does not model come from
// its original message.
absl::Status WriteAttributes(const Node& n, const onnx::NodeProto* original,
                             const tf::OpDef* schema, onnx::NodeProto* node) {
  std::vector<AttributeProto> kept;
  for (const AttributeProto& a : node->attribute()) {
    if (!Modelled(a.type())) kept.push_back(a);
  }
  node->clear_attribute();
  std::map<std::string, const tf::AttrValue*> sorted;
  for (const auto& [name, v] : n.attrs()) sorted[name] = &v;
  for (const auto& [name, v] : sorted) {
    if (name.empty() || name[0] == '_' || !SchemaHasAttr(schema, name)) continue;
    AttributeProto::AttributeType type = SchemaAttrType(schema, name);
    if (original != nullptr) {
      for (const AttributeProto& a : original->attribute())
        if (a.name() == name) type = a.type();
    }
    absl::Status s = ToAttribute(name, *v, type, node->add_attribute());
    if (!s.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("node `", n.name(), "`: ", s.message()));
  }
  for (AttributeProto& a : kept) *node->add_attribute() = std::move(a);
  return absl::OkStatus();
}

// Imports each domain a written node uses and the model does not (a
// rewrite's onnxruntime contrib op), at the newest version of its ops.
void ImportNewDomains(const Graph& graph, const OnnxOrigin& origin,
                      const std::vector<NodeId>& order, onnx::ModelProto* model) {
  std::map<std::string, int64_t> added;
  for (NodeId id : order) {
    const std::string& op = graph.node(id).op();
    if (origin.ImportsDomainOf(op)) continue;
    int64_t& version = added[op.substr(0, op.rfind('.'))];
    version = std::max(version, origin.OpsetWritten(op));
  }
  for (const auto& [domain, version] : added) {
    onnx::OperatorSetIdProto* o = model->add_opset_import();
    o->set_domain(domain);
    o->set_version(std::max<int64_t>(version, 1));
  }
}

absl::Status WriteNode(const Graph& graph, const OnnxOrigin& origin, NodeId id,
                       ValueNames& value_name, onnx::GraphProto* out) {
  const Node& n = graph.node(id);
  onnx::NodeProto node;
  auto it = origin.nodes.find(n.name());
  const onnx::NodeProto* original =
      it != origin.nodes.end() &&
              OnnxOpName(it->second.domain(), it->second.op_type()) == n.op()
          ? &it->second
          : nullptr;
  if (original != nullptr) node = *original;
  node.clear_input();
  node.clear_output();
  // A node keeps the name it was read with (none, when graft named it),
  // unless the file's nodes were not in topological order: written in
  // another order, unnamed or clashing names would be numbered otherwise
  // when read back, so such a node is written with graft's name.
  if (original == nullptr || (!origin.unsorted.empty() && original->name() != n.name()))
    node.set_name(n.name());
  if (original == nullptr) {
    size_t dot = n.op().rfind('.');
    node.set_op_type(dot == std::string::npos ? n.op() : n.op().substr(dot + 1));
    if (dot != std::string::npos) node.set_domain(n.op().substr(0, dot));
  }
  // Operands, then the subgraphs' captures: a capture now named otherwise
  // (its producer replaced) is renamed where the subgraphs read it.
  const int captures = OnnxCaptureCount(n);
  const int operands = n.num_inputs() - captures;
  for (int i = 0; i < operands; ++i) node.add_input(value_name(n.input(i)));
  std::map<std::string, std::string> renames;
  for (int k = 0; k < captures; ++k) {
    const std::string& was = n.attr(kCapturesAttr)->list().s(k);
    std::string now = value_name(n.input(operands + k));
    if (now != was) renames[was] = now;
  }
  const tf::OpDef* schema = OnnxOps().FindAt(n.op(), origin.OpsetWritten(n.op()));
  int outputs = std::max(n.num_used_ports(), 1);
  if (original != nullptr) outputs = std::max(outputs, original->output_size());
  // The outputs the schema does not call optional (a runtime's "always
  // written" among them) are written and named, read or not.
  std::vector<bool> named;
  if (schema != nullptr) {
    for (const auto& a : schema->output_arg()) named.push_back(a.description() != "optional");
    if (!named.empty()) named[0] = true;
    int last = 0;
    for (int k = 0; k < static_cast<int>(named.size()); ++k) last = named[k] ? k + 1 : last;
    outputs = std::max(outputs, last);
  }
  for (int k = 0; k < outputs; ++k) {
    bool used = k < n.num_used_ports() && !n.consumers(k).empty();
    bool was = original != nullptr && k < original->output_size() &&
               !original->output(k).empty();
    bool required = k < static_cast<int>(named.size()) && named[k];
    node.add_output(used || was || required ? value_name({id, k}) : "");
  }
  if (n.modified() || original == nullptr) {
    absl::Status s = WriteAttributes(n, original, schema, &node);
    if (!s.ok()) return s;
  }
  RenameCaptures(renames, &node);
  *out->add_node() = std::move(node);
  return absl::OkStatus();
}

// Where the written model's tensors go (dialects/onnx/onnx_model.h).
class InitializerWriter {
 public:
  InitializerWriter(const OnnxOrigin& origin, const OnnxWriteOptions& options)
      : origin_(origin), options_(options) {
    // Same folder: the original's data files are already where the
    // written model looks.
    same_folder_ = !origin.folder.empty() && !options.folder.empty() &&
                   SameFolder(origin.folder, options.folder);
  }

  // Before writing: the original's data files the written model would
  // read less than half of (a rewrite replaced most of their tensors, as
  // weight quantization does) are not copied whole; their tensors still
  // read go to the new data file. `kept` are the unmodified initializers.
  void PlanCompaction(const std::vector<const onnx::TensorProto*>& kept) {
    if (same_folder_ || options_.folder.empty() || options_.data_file.empty()) return;
    std::map<std::string, int64_t> live;
    for (const onnx::TensorProto* t : kept) {
      if (t->data_location() != onnx::TensorProto::EXTERNAL) continue;
      absl::StatusOr<onnx_data::ExternalRef> ref = onnx_data::ExternalRefOf(*t);
      if (ref.ok()) live[ref->location] += ref->length;
    }
    for (const std::string& location : origin_.external_locations) {
      struct stat info;
      const std::string path = absl::StrCat(origin_.folder, "/", location);
      if (stat(path.c_str(), &info) == 0 && live[location] * 2 < info.st_size)
        compacted_.insert(location);
    }
  }

  // The initializer field for Const `n`.
  absl::Status Write(const Node& n, onnx_data::Pieces* graph) {
    auto it = origin_.initializers.find(n.name());
    if (!n.modified() && it != origin_.initializers.end())
      return WriteOriginal(n, it->second, graph);
    const tf::AttrValue* value = n.attr("value");
    if (value == nullptr)
      return absl::InvalidArgumentError(
          absl::StrCat("constant `", n.name(), "` has no value"));
    const std::shared_ptr<const TensorContent>& apart = n.value_content_apart();
    onnx::TensorProto header;
    if (apart == nullptr) {
      absl::Status s =
          ToOnnxTensor(value->tensor(), "", origin_.ValueOf(n.name()), &header);
      if (!s.ok()) return s;
      if (!External(header.raw_data().size())) {
        graph->Field(kInitializer, Whole(header));
        return absl::OkStatus();
      }
      auto raw = std::make_shared<const std::string>(std::move(*header.mutable_raw_data()));
      header.clear_raw_data();
      return WriteWithData(std::move(header), ViewContent(*raw, raw), graph);
    }
    header.set_name(origin_.ValueOf(n.name()));
    header.set_data_type(OnnxDtype(value->tensor().dtype()));
    for (const auto& d : value->tensor().tensor_shape().dim()) header.add_dims(d.size());
    return WriteWithData(std::move(header), apart, graph);
  }

  std::vector<OnnxFiles::DataFile> TakeFiles() {
    std::vector<OnnxFiles::DataFile> files;
    if (!same_folder_ && !options_.folder.empty()) {
      for (const std::string& location : kept_locations_)
        files.push_back({location, {}, absl::StrCat(origin_.folder, "/", location)});
    }
    if (new_data_.size() > 0)
      files.push_back({data_location_, std::move(new_data_), ""});
    return files;
  }

 private:
  static constexpr int kInitializer = 5;  // GraphProto.initializer
  static constexpr int kRawData = 9;      // TensorProto.raw_data

  static bool SameFolder(const std::string& a, const std::string& b) {
    struct stat sa, sb;
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }

  static onnx_data::Pieces Whole(const onnx::TensorProto& tensor) {
    onnx_data::Pieces p;
    p.Own(tensor.SerializeAsString());
    return p;
  }

  // New bytes go to the data file when the model keeps its weights apart
  // (as onnx's own writer: tensors of 1 KiB or more).
  bool External(size_t bytes) const {
    return !origin_.external_locations.empty() && !options_.data_file.empty() &&
           bytes >= 1024;
  }

  absl::Status WriteOriginal(const Node& n, const onnx::TensorProto& original,
                             onnx_data::Pieces* graph) {
    if (original.data_location() == onnx::TensorProto::EXTERNAL) {
      absl::StatusOr<onnx_data::ExternalRef> ref = onnx_data::ExternalRefOf(original);
      if (!ref.ok()) return ref.status();
      if (compacted_.count(ref->location) && n.value_content_apart() != nullptr) {
        onnx::TensorProto header = original;
        header.clear_external_data();
        header.clear_data_location();
        return WriteWithData(std::move(header), n.value_content_apart(), graph);
      }
      kept_locations_.insert(ref->location);
      graph->Field(kInitializer, Whole(original));
      return absl::OkStatus();
    }
    if (n.value_content_apart() == nullptr) {
      graph->Field(kInitializer, Whole(original));
      return absl::OkStatus();
    }
    // Its raw_data was cut out of the source: put back where it was.
    auto [before, after] = onnx_data::SplitAt(original.SerializeAsString(), kRawData);
    onnx_data::Pieces tensor;
    tensor.Own(std::move(before));
    onnx_data::Pieces raw;
    raw.Content(n.value_content_apart());
    tensor.Field(kRawData, std::move(raw));
    tensor.Own(std::move(after));
    graph->Field(kInitializer, std::move(tensor));
    return absl::OkStatus();
  }

  // A tensor whose bytes are `content`: in raw_data, or in the
  // data file.
  absl::Status WriteWithData(onnx::TensorProto header,
                             std::shared_ptr<const TensorContent> content,
                             onnx_data::Pieces* graph) {
    const size_t size = content->size();
    onnx_data::Pieces data;
    data.Content(std::move(content));
    if (External(size)) {
      if (data_location_.empty()) data_location_ = DataLocation();
      header.set_data_location(onnx::TensorProto::EXTERNAL);
      auto entry = [&](const char* key, const std::string& value) {
        auto* e = header.add_external_data();
        e->set_key(key);
        e->set_value(value);
      };
      entry("location", data_location_);
      entry("offset", absl::StrCat(new_data_.size()));
      entry("length", absl::StrCat(size));
      new_data_.Append(std::move(data));
      graph->Field(kInitializer, Whole(header));
      return absl::OkStatus();
    }
    auto [before, after] = onnx_data::SplitAt(header.SerializeAsString(), kRawData);
    onnx_data::Pieces tensor;
    tensor.Own(std::move(before));
    tensor.Field(kRawData, std::move(data));
    tensor.Own(std::move(after));
    graph->Field(kInitializer, std::move(tensor));
    return absl::OkStatus();
  }

  // The data file's name: options' unless the original's data uses it.
  std::string DataLocation() const {
    std::string location = options_.data_file;
    for (int i = 1; origin_.external_locations.count(location); ++i)
      location = absl::StrCat(options_.data_file, ".", i);
    return location;
  }

  const OnnxOrigin& origin_;
  const OnnxWriteOptions& options_;
  bool same_folder_ = false;
  std::set<std::string> compacted_;  // data files not copied (PlanCompaction)
  std::set<std::string> kept_locations_;
  std::string data_location_;
  onnx_data::Pieces new_data_;
};

}  // namespace

absl::StatusOr<OnnxFiles> PlanOnnxSave(const Graph& graph,
                                       const OnnxWriteOptions& options) {
  const OnnxOrigin* origin = OnnxOf(graph);
  if (origin == nullptr)
    return absl::InvalidArgumentError("the graph is not an ONNX model's");
  ValueNames value_name(graph, *origin);
  absl::StatusOr<std::vector<NodeId>> order = WriteOrder(graph);
  if (!order.ok()) return order.status();
  onnx::ModelProto model = origin->model;
  ImportNewDomains(graph, *origin, *order, &model);
  onnx::GraphProto& out = *model.mutable_graph();
  InitializerWriter initializers(*origin, options);
  std::vector<const onnx::TensorProto*> kept;
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    auto it = origin->initializers.find(n.name());
    if (n.op() == "Const" && !n.modified() && it != origin->initializers.end())
      kept.push_back(&it->second);
  }
  initializers.PlanCompaction(kept);
  onnx_data::Pieces initializer_fields;
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    // A subgraph's capture of an outer initializer stays the outer one.
    if (n.op() == "Const" && !n.modified() && origin->captures.count(origin->ValueOf(n.name())))
      continue;
    absl::Status s = n.op() == "Const" ? initializers.Write(n, &initializer_fields)
                     : Regular(n)      ? WriteNode(graph, *origin, id, value_name, &out)
                                       : absl::OkStatus();
    if (!s.ok()) return s;
  }
  for (const auto& [name, e] : value_name.identities()) {
    onnx::NodeProto* node = out.add_node();
    node->set_name(name + "/identity");
    node->set_op_type("Identity");
    node->add_input(value_name(e));
    node->add_output(name);
  }
  for (const onnx::ValueInfoProto& input : origin->inputs) {
    if (graph.Contains(origin->NodeOf(input.name()))) *out.add_input() = input;
  }
  for (const onnx::ValueInfoProto& output : origin->outputs) *out.add_output() = output;
  // value_info that still describes a value an unchanged node produces.
  absl::flat_hash_map<std::string, Endpoint> by_value = value_name.ByName();
  for (const auto& [name, info] : origin->value_info) {
    auto it = by_value.find(name);
    if (it == by_value.end()) continue;
    const Node& producer = graph.node(it->second.node);
    if (producer.modified() || !origin->nodes.count(producer.name())) continue;
    *out.add_value_info() = info;
  }
  // The model's bytes: protobuf's, with the initializers put by hand where
  // protobuf would write them (their large bytes not copied).
  auto [graph_before, graph_after] =
      onnx_data::SplitAt(out.SerializeAsString(), kGraphInitializer);
  model.clear_graph();
  auto [model_before, model_after] =
      onnx_data::SplitAt(model.SerializeAsString(), kModelGraph);
  onnx_data::Pieces graph_pieces;
  graph_pieces.Own(std::move(graph_before));
  graph_pieces.Append(std::move(initializer_fields));
  graph_pieces.Own(std::move(graph_after));
  OnnxFiles files;
  files.model.Own(std::move(model_before));
  files.model.Field(kModelGraph, std::move(graph_pieces));
  files.model.Own(std::move(model_after));
  if (files.model.size() > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    return absl::InvalidArgumentError(absl::StrCat(
        "the model would be ", files.model.size(),
        " bytes, past ONNX's 2 GiB limit for a model file; keep its weights "
        "as external data"));
  files.data = initializers.TakeFiles();
  return files;
}

absl::StatusOr<std::string> SerializeOnnx(const Graph& graph) {
  absl::StatusOr<OnnxFiles> files = PlanOnnxSave(graph, OnnxWriteOptions());
  if (!files.ok()) return files.status();
  std::string bytes;
  bytes.reserve(files->model.size());
  files->model.Emit([&](absl::string_view piece) { bytes.append(piece.data(), piece.size()); });
  return bytes;
}

}  // namespace graft
