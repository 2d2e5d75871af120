#include "engine/onnx_model.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/const_tensor.h"
#include "engine/op_registry.h"
#include "google/protobuf/stubs/common.h"

namespace graft {
namespace {

using onnx::AttributeProto;

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": error: ", what));
}

// ONNX element types (TensorProto.DataType) and TensorFlow's DataType.
constexpr std::pair<int, tf::DataType> kDtypes[] = {
    {1, tf::DT_FLOAT},      {2, tf::DT_UINT8},      {3, tf::DT_INT8},
    {4, tf::DT_UINT16},     {5, tf::DT_INT16},      {6, tf::DT_INT32},
    {7, tf::DT_INT64},      {8, tf::DT_STRING},     {9, tf::DT_BOOL},
    {10, tf::DT_HALF},      {11, tf::DT_DOUBLE},    {12, tf::DT_UINT32},
    {13, tf::DT_UINT64},    {14, tf::DT_COMPLEX64}, {15, tf::DT_COMPLEX128},
    {16, tf::DT_BFLOAT16},
};

tf::DataType TfDtype(int onnx_type) {
  for (const auto& [o, t] : kDtypes) {
    if (o == onnx_type) return t;
  }
  return tf::DT_INVALID;
}

int OnnxDtype(tf::DataType type) {
  for (const auto& [o, t] : kDtypes) {
    if (t == type) return o;
  }
  return 0;
}

// An initializer (or a tensor attr) as TensorFlow's TensorProto.
absl::Status ToTfTensor(const onnx::TensorProto& in, tf::TensorProto* out) {
  tf::DataType dtype = TfDtype(in.data_type());
  if (dtype == tf::DT_INVALID)
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor `", in.name(), "` has element type ", in.data_type(),
        ", which graft does not read"));
  if (in.data_location() == onnx::TensorProto::EXTERNAL)
    return absl::UnimplementedError(absl::StrCat(
        "tensor `", in.name(), "` keeps its data in an external file, which "
        "graft does not read yet"));
  if (in.has_segment())
    return absl::UnimplementedError(
        absl::StrCat("tensor `", in.name(), "` is a segment"));
  out->set_dtype(dtype);
  for (int64_t d : in.dims()) {
    if (d < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("tensor `", in.name(), "` has a negative dimension"));
    out->mutable_tensor_shape()->add_dim()->set_size(d);
  }
  if (in.has_raw_data()) {
    if (dtype == tf::DT_STRING)
      return absl::InvalidArgumentError(
          absl::StrCat("string tensor `", in.name(), "` has raw_data"));
    out->set_tensor_content(in.raw_data());
    return absl::OkStatus();
  }
  switch (dtype) {
    case tf::DT_FLOAT:
    case tf::DT_COMPLEX64:
      for (float v : in.float_data())
        (dtype == tf::DT_FLOAT ? out->add_float_val(v) : out->add_scomplex_val(v));
      break;
    case tf::DT_DOUBLE:
    case tf::DT_COMPLEX128:
      for (double v : in.double_data())
        (dtype == tf::DT_DOUBLE ? out->add_double_val(v) : out->add_dcomplex_val(v));
      break;
    case tf::DT_INT64:
      for (int64_t v : in.int64_data()) out->add_int64_val(v);
      break;
    case tf::DT_UINT32:
      for (uint64_t v : in.uint64_data()) out->add_uint32_val(static_cast<uint32_t>(v));
      break;
    case tf::DT_UINT64:
      for (uint64_t v : in.uint64_data()) out->add_uint64_val(v);
      break;
    case tf::DT_BOOL:
      for (int32_t v : in.int32_data()) out->add_bool_val(v != 0);
      break;
    case tf::DT_HALF:
    case tf::DT_BFLOAT16:
      for (int32_t v : in.int32_data()) out->add_half_val(v);
      break;
    case tf::DT_STRING:
      for (const std::string& s : in.string_data()) out->add_string_val(s);
      break;
    default:  // int32, int16, int8, uint16, uint8
      for (int32_t v : in.int32_data()) out->add_int_val(v);
  }
  return absl::OkStatus();
}

// A graph Const's value (its content kept apart or in the proto) as an
// ONNX tensor.
absl::Status ToOnnxTensor(const tf::TensorProto& in, absl::string_view content,
                          const std::string& name, onnx::TensorProto* out) {
  out->set_name(name);
  out->set_data_type(OnnxDtype(in.dtype()));
  if (out->data_type() == 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "constant `", name, "` has a dtype ONNX has no element type for"));
  for (const auto& d : in.tensor_shape().dim()) out->add_dims(d.size());
  if (in.dtype() == tf::DT_STRING) {
    for (const std::string& s : in.string_val()) out->add_string_data(s);
    return absl::OkStatus();
  }
  if (!content.empty() || in.tensor_content().size() > 0) {
    out->set_raw_data(std::string(content.empty() ? in.tensor_content() : content));
    return absl::OkStatus();
  }
  // Typed values (possibly one value filling the shape): decoded, encoded.
  absl::StatusOr<ConstTensor> t = FromTensorProto(in);
  if (!t.ok()) return t.status();
  out->set_raw_data(ToTensorProto(*t).tensor_content());
  return absl::OkStatus();
}

// An ONNX attribute as an attr value; false for kinds graft keeps only in
// the node's original message (graphs, sparse tensors, type protos).
absl::StatusOr<bool> ToAttrValue(const AttributeProto& a, tf::AttrValue* out) {
  switch (a.type()) {
    case AttributeProto::FLOAT:
      out->set_f(a.f());
      return true;
    case AttributeProto::INT:
      out->set_i(a.i());
      return true;
    case AttributeProto::STRING:
      out->set_s(a.s());
      return true;
    case AttributeProto::FLOATS:
      out->mutable_list();
      for (float f : a.floats()) out->mutable_list()->add_f(f);
      return true;
    case AttributeProto::INTS:
      out->mutable_list();
      for (int64_t i : a.ints()) out->mutable_list()->add_i(i);
      return true;
    case AttributeProto::STRINGS:
      out->mutable_list();
      for (const std::string& s : a.strings()) out->mutable_list()->add_s(s);
      return true;
    case AttributeProto::TENSOR: {
      absl::Status s = ToTfTensor(a.t(), out->mutable_tensor());
      if (!s.ok()) return s;
      return true;
    }
    default:
      return false;
  }
}

// An attr value as an ONNX attribute of `type` (from the original node or
// the op's schema; UNDEFINED: from the value's kind).
absl::Status ToAttribute(const std::string& name, const tf::AttrValue& v,
                         AttributeProto::AttributeType type,
                         AttributeProto* out) {
  out->set_name(name);
  if (type == AttributeProto::UNDEFINED) {
    switch (v.value_case()) {
      case tf::AttrValue::kF: type = AttributeProto::FLOAT; break;
      case tf::AttrValue::kI:
      case tf::AttrValue::kB: type = AttributeProto::INT; break;
      case tf::AttrValue::kS: type = AttributeProto::STRING; break;
      case tf::AttrValue::kTensor: type = AttributeProto::TENSOR; break;
      case tf::AttrValue::kList:
        type = v.list().f_size() > 0   ? AttributeProto::FLOATS
               : v.list().s_size() > 0 ? AttributeProto::STRINGS
                                       : AttributeProto::INTS;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "attr `", name, "` has a kind ONNX attributes do not hold"));
    }
  }
  out->set_type(type);
  switch (type) {
    case AttributeProto::FLOAT: out->set_f(v.f()); break;
    case AttributeProto::INT:
      out->set_i(v.value_case() == tf::AttrValue::kB ? v.b() : v.i());
      break;
    case AttributeProto::STRING: out->set_s(v.s()); break;
    case AttributeProto::FLOATS:
      for (float f : v.list().f()) out->add_floats(f);
      break;
    case AttributeProto::INTS:
      for (int64_t i : v.list().i()) out->add_ints(i);
      break;
    case AttributeProto::STRINGS:
      for (const std::string& s : v.list().s()) out->add_strings(s);
      break;
    case AttributeProto::TENSOR:
      return ToOnnxTensor(v.tensor(), "", "", out->mutable_t());
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("attr `", name, "` of an ONNX type graft does not write"));
  }
  return absl::OkStatus();
}

AttributeProto::AttributeType SchemaAttrType(const tf::OpDef* op,
                                             const std::string& name) {
  if (op == nullptr) return AttributeProto::UNDEFINED;
  for (const auto& a : op->attr()) {
    if (a.name() != name) continue;
    const std::string& t = a.type();
    if (t == "float") return AttributeProto::FLOAT;
    if (t == "int") return AttributeProto::INT;
    if (t == "string") return AttributeProto::STRING;
    if (t == "tensor") return AttributeProto::TENSOR;
    if (t == "list(float)") return AttributeProto::FLOATS;
    if (t == "list(int)") return AttributeProto::INTS;
    if (t == "list(string)") return AttributeProto::STRINGS;
  }
  return AttributeProto::UNDEFINED;
}

bool SchemaHasAttr(const tf::OpDef* op, const std::string& name) {
  if (op == nullptr) return true;  // unknown op: keep what it has
  for (const auto& a : op->attr()) {
    if (a.name() == name && a.type() != "type") return true;
  }
  return false;
}

constexpr char kAbsent[] = "_absent";
constexpr char kAbsentOp[] = "_Absent";

}  // namespace

std::string OnnxOpName(absl::string_view domain, absl::string_view op_type) {
  if (domain.empty() || domain == "ai.onnx") return std::string(op_type);
  return absl::StrCat(domain, ".", op_type);
}

bool IsOnnxPath(absl::string_view path) {
  return absl::EndsWithIgnoreCase(path, ".onnx");
}

absl::StatusOr<Graph> ParseOnnx(absl::string_view bytes,
                                const std::string& source) {
  auto origin = std::make_shared<OnnxOrigin>();
  onnx::ModelProto& model = origin->model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Bad(source, "larger than 2 GiB, the limit of an ONNX file (keep "
                       "the weights as external data)");
  {
    google::protobuf::LogSilencer quiet;  // invalid UTF-8: the error below
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return Bad(source, "not a valid ONNX model (the ModelProto does not parse)");
  }
  // IR 3 (opsets) to what onnx 1.23, the schema snapshot's, writes.
  // Names must be UTF-8 (ONNX's strings are; protobuf's proto2 parse lets
  // anything through).
  auto utf8 = [&](const std::string& text, const std::string& what) {
    return google::protobuf::internal::IsStructurallyValidUTF8(
               text.data(), static_cast<int>(text.size()))
               ? absl::OkStatus()
               : Bad(source, absl::StrCat(what, " `", absl::CHexEscape(text),
                                          "` is not valid UTF-8"));
  };
  for (const onnx::NodeProto& node : model.graph().node()) {
    std::vector<const std::string*> texts = {&node.name(), &node.op_type(),
                                             &node.domain()};
    for (const std::string& v : node.input()) texts.push_back(&v);
    for (const std::string& v : node.output()) texts.push_back(&v);
    for (const AttributeProto& a : node.attribute()) texts.push_back(&a.name());
    for (const std::string* t : texts) {
      if (absl::Status s = utf8(*t, "a node's name or value"); !s.ok()) return s;
    }
  }
  for (const auto* list : {&model.graph().input(), &model.graph().output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (absl::Status s = utf8(v.name(), "graph input or output"); !s.ok()) return s;
    }
  }
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    if (absl::Status s = utf8(t.name(), "initializer"); !s.ok()) return s;
  }
  if (!model.has_ir_version() || model.ir_version() < 3 || model.ir_version() > 14)
    return Bad(source, absl::StrCat("IR version ", model.ir_version(),
                                    "; graft reads ONNX IR versions 3 to 14"));
  if (!model.has_graph()) return Bad(source, "the model has no graph");
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") origin->opset = o.version();
  }
  if (origin->opset <= 0)
    return Bad(source, "no opset imported for the default domain (ai.onnx)");
  onnx::GraphProto graph = std::move(*model.mutable_graph());
  model.mutable_graph()->Clear();
  onnx::GraphProto& header = *model.mutable_graph();
  *header.mutable_name() = graph.name();
  if (graph.has_doc_string()) header.set_doc_string(graph.doc_string());
  *header.mutable_sparse_initializer() = graph.sparse_initializer();
  *header.mutable_metadata_props() = graph.metadata_props();
  header.GetReflection()->MutableUnknownFields(&header)->MergeFrom(
      graph.GetReflection()->GetUnknownFields(graph));

  tf::GraphDef def;
  std::set<std::string> names;  // node names taken
  // Each value's tensor name in the graph ("node" or "node:port").
  absl::flat_hash_map<std::string, std::string> values;
  auto add_value = [&](const std::string& value, const std::string& tensor)
      -> absl::Status {
    if (value.empty()) return absl::OkStatus();
    if (!values.emplace(value, tensor).second)
      return Bad(source, absl::StrCat("value `", value,
                                      "` is produced more than once"));
    return absl::OkStatus();
  };
  for (onnx::TensorProto& init : *graph.mutable_initializer()) {
    if (init.name().empty()) return Bad(source, "an initializer has no name");
    tf::NodeDef* n = def.add_node();
    n->set_name(init.name());
    n->set_op("Const");
    tf::AttrValue& value = (*n->mutable_attr())["value"];
    if (absl::Status s = ToTfTensor(init, value.mutable_tensor()); !s.ok())
      return Bad(source, std::string(s.message()));
    (*n->mutable_attr())["dtype"].set_type(value.tensor().dtype());
    if (!names.insert(init.name()).second)
      return Bad(source, absl::StrCat("initializer `", init.name(),
                                      "` is given twice"));
    if (absl::Status s = add_value(init.name(), init.name()); !s.ok()) return s;
    const std::string name = init.name();
    origin->initializers[name] = std::move(init);  // kept for saving, not copied
  }
  for (const onnx::ValueInfoProto& input : graph.input()) {
    origin->inputs.push_back(input);
    if (origin->initializers.count(input.name())) continue;  // overridable
    if (input.name().empty()) return Bad(source, "a graph input has no name");
    tf::NodeDef* n = def.add_node();
    n->set_name(input.name());
    n->set_op("Placeholder");
    const auto& tensor_type = input.type().tensor_type();
    tf::DataType dtype = TfDtype(tensor_type.elem_type());
    if (dtype != tf::DT_INVALID) (*n->mutable_attr())["dtype"].set_type(dtype);
    if (tensor_type.has_shape()) {
      tf::TensorShapeProto* shape = (*n->mutable_attr())["shape"].mutable_shape();
      for (const auto& d : tensor_type.shape().dim())
        shape->add_dim()->set_size(d.has_dim_value() ? d.dim_value() : -1);
    }
    if (!names.insert(input.name()).second)
      return Bad(source, absl::StrCat("graph input `", input.name(),
                                      "` is given twice"));
    if (absl::Status s = add_value(input.name(), input.name()); !s.ok()) return s;
  }
  // Node names: as given, unique; unnamed or clashing ones numbered.
  std::vector<std::string> node_names;
  std::map<std::string, int> counters;
  for (const onnx::NodeProto& node : graph.node()) {
    std::string base = node.name().empty() ? node.op_type() : node.name();
    if (base.empty()) base = "node";
    std::string name = base;
    while (names.count(name) || name == kAbsent)
      name = absl::StrCat(base, "_", ++counters[base]);
    names.insert(name);
    node_names.push_back(name);
    for (int k = 0; k < node.output_size(); ++k) {
      absl::Status s =
          add_value(node.output(k), k == 0 ? name : absl::StrCat(name, ":", k));
      if (!s.ok()) return s;
    }
  }
  bool absent_used = false;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const std::string& name = node_names[i];
    tf::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op(OnnxOpName(node.domain(), node.op_type()));
    int last = node.input_size();
    while (last > 0 && node.input(last - 1).empty()) --last;  // trailing absent
    for (int k = 0; k < last; ++k) {
      const std::string& value = node.input(k);
      if (value.empty()) {
        n->add_input(kAbsent);
        absent_used = true;
        continue;
      }
      auto it = values.find(value);
      if (it == values.end())
        return Bad(source, absl::StrCat("node `", name, "` (", node.op_type(),
                                        ") reads `", value,
                                        "`, which no node, input or "
                                        "initializer produces"));
      n->add_input(it->second);
    }
    for (const AttributeProto& a : node.attribute()) {
      tf::AttrValue value;
      absl::StatusOr<bool> kept = ToAttrValue(a, &value);
      if (!kept.ok())
        return Bad(source, absl::StrCat("node `", name, "` attr `", a.name(),
                                        "`: ", kept.status().message()));
      if (*kept) (*n->mutable_attr())[a.name()] = std::move(value);
    }
    origin->nodes[name] = node;
    origin->output_names[name].assign(node.output().begin(), node.output().end());
  }
  if (absent_used) {
    tf::NodeDef* n = def.add_node();
    n->set_name(kAbsent);
    n->set_op(kAbsentOp);
  }
  for (int i = 0; i < graph.output_size(); ++i) {
    const onnx::ValueInfoProto& output = graph.output(i);
    auto it = values.find(output.name());
    if (it == values.end())
      return Bad(source, absl::StrCat("graph output `", output.name(),
                                      "` is not produced"));
    std::string name = absl::StrCat(output.name(), "/output");
    while (names.count(name)) name += "_";
    names.insert(name);
    tf::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op("_Retval");
    n->add_input(it->second);
    (*n->mutable_attr())["index"].set_i(i);
    origin->outputs.push_back(output);
  }
  for (const onnx::ValueInfoProto& v : graph.value_info())
    origin->value_info[v.name()] = v;
  absl::StatusOr<Graph> out = Graph::FromGraphDef(std::move(def));
  if (!out.ok()) return Bad(source, std::string(out.status().message()));
  out->set_onnx(std::move(origin));
  return out;
}

absl::StatusOr<std::string> SerializeOnnx(const Graph& graph) {
  const OnnxOrigin* origin = graph.onnx().get();
  if (origin == nullptr)
    return absl::InvalidArgumentError("the graph is not an ONNX model's");
  const OpRegistry& registry = OpRegistry::Onnx();
  auto regular = [](const Node& n) {
    return n.op() != "Const" && n.op() != "Placeholder" && n.op() != "_Retval" &&
           n.op() != kAbsentOp;
  };
  // Value names: graph inputs and initializers keep theirs, graph outputs
  // name what they read, nodes keep their outputs' names as read (by node
  // name); the rest are made from the node name, unique.
  absl::flat_hash_map<Endpoint, std::string> names;
  std::set<std::string> taken;
  auto claim = [&](Endpoint e, const std::string& name) {
    if (names.count(e) || taken.count(name) || name.empty()) return false;
    names[e] = name;
    taken.insert(name);
    return true;
  };
  std::vector<NodeId> retvals;
  graph.ForEachNode([&](const Node& n) {
    if (n.op() == "Const" || n.op() == "Placeholder") claim({n.id(), 0}, n.name());
    if (n.op() == "_Retval") retvals.push_back(n.id());
  });
  std::sort(retvals.begin(), retvals.end(), [&](NodeId a, NodeId b) {
    return graph.node(a).attr("index")->i() < graph.node(b).attr("index")->i();
  });
  // An output whose tensor is named otherwise (an input, another output)
  // is written through an Identity.
  std::vector<std::pair<std::string, Endpoint>> identities;
  for (NodeId r : retvals) {
    const Node& n = graph.node(r);
    const std::string& want =
        origin->outputs.at(static_cast<size_t>(n.attr("index")->i())).name();
    Endpoint e = n.input(0);
    auto it = names.find(e);
    if (it != names.end() && it->second == want) continue;
    if (it == names.end() && regular(graph.node(e.node)) && claim(e, want)) continue;
    identities.emplace_back(want, e);
    taken.insert(want);
  }
  graph.ForEachNode([&](const Node& n) {
    if (!regular(n)) return;
    auto it = origin->output_names.find(n.name());
    if (it == origin->output_names.end()) return;
    for (size_t k = 0; k < it->second.size(); ++k)
      claim({n.id(), static_cast<int>(k)}, it->second[k]);
  });
  auto value_name = [&](Endpoint e) -> std::string {
    if (graph.node(e.node).op() == kAbsentOp) return "";
    auto it = names.find(e);
    if (it != names.end()) return it->second;
    std::string base = e.port == 0 ? graph.node(e.node).name()
                                   : absl::StrCat(graph.node(e.node).name(), ":",
                                                  e.port);
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = absl::StrCat(base, "_", i);
    names[e] = name;
    taken.insert(name);
    return name;
  };

  // Nodes in topological order, the original order where it is one (the
  // smallest id first among those ready).
  std::vector<int> waiting(graph.id_limit(), 0);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<NodeId>> ready;
  graph.ForEachNode([&](const Node& n) {
    waiting[n.id()] = n.num_inputs() + static_cast<int>(n.control_inputs().size());
    if (waiting[n.id()] == 0) ready.push(n.id());
  });
  std::vector<NodeId> order;
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    const Node& n = graph.node(id);
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

  onnx::ModelProto model = origin->model;
  onnx::GraphProto& out = *model.mutable_graph();
  std::set<std::string> initializers;
  for (NodeId id : order) {
    const Node& n = graph.node(id);
    if (n.op() == "Const") {
      initializers.insert(n.name());
      auto it = origin->initializers.find(n.name());
      if (!n.modified() && it != origin->initializers.end()) {
        *out.add_initializer() = it->second;
        continue;
      }
      const tf::AttrValue* value = n.attr("value");
      if (value == nullptr)
        return absl::InvalidArgumentError(
            absl::StrCat("constant `", n.name(), "` has no value"));
      absl::Status s = ToOnnxTensor(value->tensor(), n.value_content(), n.name(),
                                    out.add_initializer());
      if (!s.ok()) return s;
      continue;
    }
    if (!regular(n)) continue;
    onnx::NodeProto node;
    auto original = origin->nodes.find(n.name());
    bool known = original != origin->nodes.end() &&
                 OnnxOpName(original->second.domain(), original->second.op_type()) ==
                     n.op();
    if (known) node = original->second;
    node.clear_input();
    node.clear_output();
    node.set_name(n.name());
    if (!known) {
      node.set_op_type(n.op());
      size_t dot = n.op().rfind('.');
      if (dot != std::string::npos) {
        node.set_domain(n.op().substr(0, dot));
        node.set_op_type(n.op().substr(dot + 1));
      }
    }
    for (const Endpoint& e : n.inputs()) node.add_input(value_name(e));
    int outputs = n.num_used_ports();
    if (known) outputs = std::max(outputs, original->second.output_size());
    const tf::OpDef* schema = registry.FindAt(n.op(), origin->opset);
    if (schema != nullptr) {
      int required = 0;
      for (const auto& a : schema->output_arg())
        required += a.description() != "optional" ? 1 : 0;
      outputs = std::max(outputs, required);
    }
    outputs = std::max(outputs, 1);
    for (int k = 0; k < outputs; ++k) {
      bool used = k < n.num_used_ports() && !n.consumers(k).empty();
      bool was = known && k < original->second.output_size() &&
                 !original->second.output(k).empty();
      node.add_output(used || was || (schema != nullptr && k == 0)
                          ? value_name({id, k})
                          : "");
    }
    if (n.modified() || !known) {
      // Attributes from the graph; kinds graft does not model come from
      // the original node.
      std::vector<AttributeProto> kept;
      for (const AttributeProto& a : node.attribute()) {
        tf::AttrValue ignored;
        absl::StatusOr<bool> modelled = ToAttrValue(a, &ignored);
        if (modelled.ok() && !*modelled) kept.push_back(a);
      }
      node.clear_attribute();
      std::map<std::string, const tf::AttrValue*> sorted;
      for (const auto& [name, v] : n.attrs()) sorted[name] = &v;
      for (const auto& [name, v] : sorted) {
        if (name.empty() || name[0] == '_' || !SchemaHasAttr(schema, name)) continue;
        AttributeProto::AttributeType type = SchemaAttrType(schema, name);
        if (known) {
          for (const AttributeProto& a : original->second.attribute())
            if (a.name() == name) type = a.type();
        }
        absl::Status s = ToAttribute(name, *v, type, node.add_attribute());
        if (!s.ok())
          return absl::InvalidArgumentError(
              absl::StrCat("node `", n.name(), "`: ", s.message()));
      }
      for (AttributeProto& a : kept) *node.add_attribute() = std::move(a);
    }
    *out.add_node() = std::move(node);
  }
  for (const auto& [name, e] : identities) {
    onnx::NodeProto* node = out.add_node();
    node->set_name(name + "/identity");
    node->set_op_type("Identity");
    node->add_input(value_name(e));
    node->add_output(name);
  }
  for (const onnx::ValueInfoProto& input : origin->inputs) {
    if (graph.Contains(input.name())) *out.add_input() = input;
  }
  for (const onnx::ValueInfoProto& output : origin->outputs) *out.add_output() = output;
  // value_info that still describes a value an unchanged node produces.
  absl::flat_hash_map<std::string, Endpoint> by_value;
  for (const auto& [e, name] : names) by_value[name] = e;
  for (const auto& [name, info] : origin->value_info) {
    auto it = by_value.find(name);
    if (it == by_value.end()) continue;
    const Node& producer = graph.node(it->second.node);
    if (producer.modified() || !origin->nodes.count(producer.name())) continue;
    *out.add_value_info() = info;
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return absl::InvalidArgumentError("the ONNX model does not serialize (over 2 GiB?)");
  return bytes;
}

}  // namespace graft
