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

// Whether graft holds attributes of this kind as attr values; the others
// (graphs, sparse tensors, type protos, lists of tensors or graphs) are
// kept only in the node's original message.
bool Modelled(AttributeProto::AttributeType type) {
  switch (type) {
    case AttributeProto::FLOAT: case AttributeProto::INT:
    case AttributeProto::STRING: case AttributeProto::FLOATS:
    case AttributeProto::INTS: case AttributeProto::STRINGS:
    case AttributeProto::TENSOR:
      return true;
    default:
      return false;
  }
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

namespace {

// ONNX's strings are UTF-8; protobuf's proto2 parse lets anything through.
absl::Status CheckUtf8Names(const onnx::GraphProto& graph,
                            const std::string& source) {
  std::vector<std::pair<const std::string*, const char*>> texts;
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string* t : {&node.name(), &node.op_type(), &node.domain()})
      texts.emplace_back(t, "a node's name or op");
    for (const std::string& v : node.input()) texts.emplace_back(&v, "a value");
    for (const std::string& v : node.output()) texts.emplace_back(&v, "a value");
    for (const AttributeProto& a : node.attribute())
      texts.emplace_back(&a.name(), "an attr");
  }
  for (const auto* list : {&graph.input(), &graph.output()}) {
    for (const onnx::ValueInfoProto& v : *list)
      texts.emplace_back(&v.name(), "graph input or output");
  }
  for (const onnx::TensorProto& t : graph.initializer())
    texts.emplace_back(&t.name(), "initializer");
  for (const auto& [text, what] : texts) {
    if (!google::protobuf::internal::IsStructurallyValidUTF8(
            text->data(), static_cast<int>(text->size())))
      return Bad(source, absl::StrCat(what, " `", absl::CHexEscape(*text),
                                      "` is not valid UTF-8"));
  }
  return absl::OkStatus();
}

// Builds the GraphDef an ONNX graph maps onto (engine/onnx_model.h),
// filling the origin with what saving needs.
class GraphReader {
 public:
  GraphReader(const std::string& source, OnnxOrigin* origin)
      : source_(source), origin_(origin) {}

  absl::Status Read(onnx::GraphProto& graph) {
    for (auto step : {&GraphReader::Initializers, &GraphReader::Inputs,
                      &GraphReader::NameNodes, &GraphReader::Nodes,
                      &GraphReader::Outputs}) {
      if (absl::Status s = (this->*step)(graph); !s.ok()) return s;
    }
    for (const onnx::ValueInfoProto& v : graph.value_info())
      origin_->value_info[v.name()] = v;
    return absl::OkStatus();
  }
  tf::GraphDef& def() { return def_; }

 private:
  absl::Status AddValue(const std::string& value, const std::string& tensor) {
    if (value.empty() || values_.emplace(value, tensor).second)
      return absl::OkStatus();
    return Bad(source_, absl::StrCat("value `", value, "` is produced more than once"));
  }

  absl::Status Initializers(onnx::GraphProto& graph) {
    for (onnx::TensorProto& init : *graph.mutable_initializer()) {
      if (init.name().empty()) return Bad(source_, "an initializer has no name");
      tf::NodeDef* n = def_.add_node();
      n->set_name(init.name());
      n->set_op("Const");
      tf::AttrValue& value = (*n->mutable_attr())["value"];
      if (absl::Status s = ToTfTensor(init, value.mutable_tensor()); !s.ok())
        return Bad(source_, std::string(s.message()));
      (*n->mutable_attr())["dtype"].set_type(value.tensor().dtype());
      if (!names_.insert(init.name()).second)
        return Bad(source_, absl::StrCat("initializer `", init.name(), "` is given twice"));
      if (absl::Status s = AddValue(init.name(), init.name()); !s.ok()) return s;
      const std::string name = init.name();
      origin_->initializers[name] = std::move(init);  // kept for saving, not copied
    }
    return absl::OkStatus();
  }

  absl::Status Inputs(onnx::GraphProto& graph) {
    for (const onnx::ValueInfoProto& input : graph.input()) {
      origin_->inputs.push_back(input);
      if (origin_->initializers.count(input.name())) continue;  // overridable
      if (input.name().empty()) return Bad(source_, "a graph input has no name");
      tf::NodeDef* n = def_.add_node();
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
      if (!names_.insert(input.name()).second)
        return Bad(source_, absl::StrCat("graph input `", input.name(), "` is given twice"));
      if (absl::Status s = AddValue(input.name(), input.name()); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Node names: as given, unique; unnamed or clashing ones numbered. Every
  // output value is known before any node reads one.
  absl::Status NameNodes(onnx::GraphProto& graph) {
    std::map<std::string, int> counters;
    for (const onnx::NodeProto& node : graph.node()) {
      std::string base = node.name().empty() ? node.op_type() : node.name();
      if (base.empty()) base = "node";
      std::string name = base;
      while (names_.count(name) || name == kAbsent)
        name = absl::StrCat(base, "_", ++counters[base]);
      names_.insert(name);
      node_names_.push_back(name);
      for (int k = 0; k < node.output_size(); ++k) {
        absl::Status s =
            AddValue(node.output(k), k == 0 ? name : absl::StrCat(name, ":", k));
        if (!s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Nodes(onnx::GraphProto& graph) {
    bool absent_used = false;
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& node = graph.node(i);
      const std::string& name = node_names_[i];
      tf::NodeDef* n = def_.add_node();
      n->set_name(name);
      n->set_op(OnnxOpName(node.domain(), node.op_type()));
      int last = node.input_size();
      while (last > 0 && node.input(last - 1).empty()) --last;  // trailing absent
      for (int k = 0; k < last; ++k) {
        const std::string& value = node.input(k);
        auto it = value.empty() ? values_.end() : values_.find(value);
        if (!value.empty() && it == values_.end())
          return Bad(source_, absl::StrCat("node `", name, "` (", node.op_type(),
                                           ") reads `", value,
                                           "`, which no node, input or "
                                           "initializer produces"));
        absent_used = absent_used || value.empty();
        n->add_input(value.empty() ? std::string(kAbsent) : it->second);
      }
      for (const AttributeProto& a : node.attribute()) {
        tf::AttrValue value;
        absl::StatusOr<bool> kept = ToAttrValue(a, &value);
        if (!kept.ok())
          return Bad(source_, absl::StrCat("node `", name, "` attr `", a.name(),
                                           "`: ", kept.status().message()));
        if (*kept) (*n->mutable_attr())[a.name()] = std::move(value);
      }
      origin_->nodes[name] = node;
      origin_->output_names[name].assign(node.output().begin(), node.output().end());
    }
    if (absent_used) {
      tf::NodeDef* n = def_.add_node();
      n->set_name(kAbsent);
      n->set_op(kAbsentOp);
    }
    return absl::OkStatus();
  }

  absl::Status Outputs(onnx::GraphProto& graph) {
    for (int i = 0; i < graph.output_size(); ++i) {
      const onnx::ValueInfoProto& output = graph.output(i);
      auto it = values_.find(output.name());
      if (it == values_.end())
        return Bad(source_, absl::StrCat("graph output `", output.name(),
                                         "` is not produced"));
      std::string name = absl::StrCat(output.name(), "/output");
      while (names_.count(name)) name += "_";
      names_.insert(name);
      tf::NodeDef* n = def_.add_node();
      n->set_name(name);
      n->set_op("_Retval");
      n->add_input(it->second);
      (*n->mutable_attr())["index"].set_i(i);
      origin_->outputs.push_back(output);
    }
    return absl::OkStatus();
  }

  const std::string& source_;
  OnnxOrigin* origin_;
  tf::GraphDef def_;
  std::set<std::string> names_;  // node names taken
  // Each value's tensor name in the graph ("node" or "node:port").
  absl::flat_hash_map<std::string, std::string> values_;
  std::vector<std::string> node_names_;  // of graph.node(i)
};

}  // namespace

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
  if (absl::Status s = CheckUtf8Names(model.graph(), source); !s.ok()) return s;
  // IR 3 (opsets) to what onnx 1.23, the schema snapshot's, writes.
  if (!model.has_ir_version() || model.ir_version() < 3 || model.ir_version() > 14)
    return Bad(source, absl::StrCat("IR version ", model.ir_version(),
                                    "; graft reads ONNX IR versions 3 to 14"));
  if (!model.has_graph()) return Bad(source, "the model has no graph");
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") origin->opset = o.version();
  }
  if (origin->opset <= 0)
    return Bad(source, "no opset imported for the default domain (ai.onnx)");
  // The graph's nodes, initializers, inputs and outputs become the graph;
  // the rest stays in the origin's model.
  onnx::GraphProto graph = std::move(*model.mutable_graph());
  onnx::GraphProto& header = *model.mutable_graph();
  *header.mutable_name() = graph.name();
  if (graph.has_doc_string()) header.set_doc_string(graph.doc_string());
  *header.mutable_sparse_initializer() = graph.sparse_initializer();
  *header.mutable_metadata_props() = graph.metadata_props();
  header.GetReflection()->MutableUnknownFields(&header)->MergeFrom(
      graph.GetReflection()->GetUnknownFields(graph));
  GraphReader reader(source, origin.get());
  if (absl::Status s = reader.Read(graph); !s.ok()) return s;
  absl::StatusOr<Graph> out = Graph::FromGraphDef(std::move(reader.def()));
  if (!out.ok()) return Bad(source, std::string(out.status().message()));
  out->set_onnx(std::move(origin));
  return out;
}

namespace {

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
      if (n.op() == "Const" || n.op() == "Placeholder") Claim({n.id(), 0}, n.name());
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
// smallest id first among those ready); an error for a cycle.
absl::StatusOr<std::vector<NodeId>> WriteOrder(const Graph& graph) {
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
  // A node keeps the name it was read with (none, when graft named it).
  if (original == nullptr) node.set_name(n.name());
  if (original == nullptr) {
    size_t dot = n.op().rfind('.');
    node.set_op_type(dot == std::string::npos ? n.op() : n.op().substr(dot + 1));
    if (dot != std::string::npos) node.set_domain(n.op().substr(0, dot));
  }
  for (const Endpoint& e : n.inputs()) node.add_input(value_name(e));
  const tf::OpDef* schema = OpRegistry::Onnx().FindAt(n.op(), origin.opset);
  int outputs = std::max(n.num_used_ports(), 1);
  if (original != nullptr) outputs = std::max(outputs, original->output_size());
  if (schema != nullptr) {
    int required = 0;
    for (const auto& a : schema->output_arg())
      required += a.description() != "optional" ? 1 : 0;
    outputs = std::max(outputs, required);
  }
  for (int k = 0; k < outputs; ++k) {
    bool used = k < n.num_used_ports() && !n.consumers(k).empty();
    bool was = original != nullptr && k < original->output_size() &&
               !original->output(k).empty();
    node.add_output(used || was || (schema != nullptr && k == 0)
                        ? value_name({id, k})
                        : "");
  }
  if (n.modified() || original == nullptr) {
    absl::Status s = WriteAttributes(n, original, schema, &node);
    if (!s.ok()) return s;
  }
  *out->add_node() = std::move(node);
  return absl::OkStatus();
}

absl::Status WriteInitializer(const Node& n, const OnnxOrigin& origin,
                              onnx::GraphProto* out) {
  auto it = origin.initializers.find(n.name());
  if (!n.modified() && it != origin.initializers.end()) {
    *out->add_initializer() = it->second;
    return absl::OkStatus();
  }
  const tf::AttrValue* value = n.attr("value");
  if (value == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("constant `", n.name(), "` has no value"));
  return ToOnnxTensor(value->tensor(), n.value_content(), n.name(),
                      out->add_initializer());
}

}  // namespace

absl::StatusOr<std::string> SerializeOnnx(const Graph& graph) {
  const OnnxOrigin* origin = graph.onnx().get();
  if (origin == nullptr)
    return absl::InvalidArgumentError("the graph is not an ONNX model's");
  ValueNames value_name(graph, *origin);
  absl::StatusOr<std::vector<NodeId>> order = WriteOrder(graph);
  if (!order.ok()) return order.status();
  onnx::ModelProto model = origin->model;
  onnx::GraphProto& out = *model.mutable_graph();
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    absl::Status s = n.op() == "Const" ? WriteInitializer(n, *origin, &out)
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
    if (graph.Contains(input.name())) *out.add_input() = input;
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
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return absl::InvalidArgumentError("the ONNX model does not serialize (over 2 GiB?)");
  return bytes;
}

}  // namespace graft
