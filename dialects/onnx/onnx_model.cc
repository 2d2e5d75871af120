#include "dialects/onnx/onnx_model.h"
#include "dialects/onnx/onnx_ops.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "dialects/onnx/onnx_convert.h"
#include "dialects/onnx/onnx_data.h"
#include "engine/op_registry.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/text_format.h"

// The ONNX codec's reader; the writer is engine/onnx_write.cc.
namespace graft {

const OnnxOrigin* OnnxOf(const Graph& graph) {
  return dynamic_cast<const OnnxOrigin*>(graph.origin().get());
}

namespace {

using namespace onnx_internal;  // NOLINT: the codec's own conversions
using onnx::AttributeProto;

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": error: ", what));
}

}  // namespace

tf::DataType OnnxElemType(int elem_type) { return TfDtype(elem_type); }

int64_t OnnxOrigin::OpsetOf(absl::string_view op) const {
  size_t dot = op.rfind('.');
  if (dot == absl::string_view::npos) return opset;
  auto it = opsets.find(std::string(op.substr(0, dot)));
  return it == opsets.end() ? 0 : it->second;
}

std::string OnnxValueName(const Graph& graph, Endpoint tensor) {
  const OnnxOrigin* origin = OnnxOf(graph);
  if (origin == nullptr || !tensor.valid()) return "";
  const Node& node = graph.node(tensor.node);
  if ((node.op() == "Const" || node.op() == "Placeholder") && tensor.port == 0)
    return origin->ValueOf(node.name());
  auto it = origin->output_names.find(node.name());
  if (it == origin->output_names.end() || tensor.port >= static_cast<int>(it->second.size()))
    return "";
  return it->second[tensor.port];
}

bool OnnxOrigin::ImportsDomainOf(absl::string_view op) const {
  size_t dot = op.rfind('.');
  return dot == absl::string_view::npos || opsets.count(std::string(op.substr(0, dot))) > 0;
}

int64_t OnnxOrigin::OpsetWritten(absl::string_view op) const {
  return ImportsDomainOf(op) ? OpsetOf(op) : OnnxOps().NewestSince(op);
}

std::string OnnxOpName(absl::string_view domain, absl::string_view op_type) {
  if (domain.empty() || domain == "ai.onnx") return std::string(op_type);
  return absl::StrCat(domain, ".", op_type);
}

bool IsOnnxPath(absl::string_view path) {
  return absl::EndsWithIgnoreCase(path, ".onnx") || IsOnnxTextPath(path);
}

bool IsOnnxTextPath(absl::string_view path) {
  return absl::EndsWithIgnoreCase(path, ".onnxtxt");
}

namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (message_.empty())  // ONNX's names for ONNX's messages
      message_ = absl::StrCat(line + 1, ":", column + 1, ": error: ",
                              absl::StrReplaceAll(message, {{"graft.onnx.", "onnx."}}));
  }
  std::string message_;
};

}  // namespace

absl::StatusOr<std::string> OnnxTextToBinary(const std::string& text,
                                             const std::string& source) {
  onnx::ModelProto model;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &model))
    return absl::InvalidArgumentError(
        errors.message_.empty()
            ? absl::StrCat(source, ": error: not an ONNX model in text form")
            : absl::StrCat(source, ":", errors.message_));
  std::string bytes;
  google::protobuf::LogSilencer quiet;  // invalid UTF-8: ParseOnnx says so
  if (!model.SerializeToString(&bytes))
    return Bad(source, "the model does not serialize (over 2 GiB?)");
  return bytes;
}

absl::StatusOr<std::string> OnnxBinaryToText(const std::string& bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return absl::InternalError("the written ONNX model does not parse");
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);
  if (!printer.PrintToString(model, &text))
    return absl::InternalError("the ONNX model does not print as text");
  return text;
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

// Builds the GraphDef an ONNX graph maps onto (dialects/onnx/onnx_model.h),
// filling the origin with what saving needs.
class GraphReader {
 public:
  GraphReader(const std::string& source, OnnxOrigin* origin,
              std::vector<absl::string_view> raw_data,
              std::shared_ptr<const void> owner, onnx_data::ExternalFiles* files)
      : source_(source),
        origin_(origin),
        raw_data_(std::move(raw_data)),
        owner_(std::move(owner)),
        files_(files) {}

  absl::Status Read(onnx::GraphProto& graph) {
    for (const auto& t : graph.initializer()) reserved_.insert(t.name());
    for (const auto& v : graph.input()) reserved_.insert(v.name());
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
  // Initializers whose bytes lie apart, by name.
  const std::vector<std::pair<std::string, std::shared_ptr<const TensorContent>>>&
  apart() const {
    return apart_;
  }

 private:
  absl::Status AddValue(const std::string& value, const std::string& tensor) {
    if (value.empty() || values_.emplace(value, tensor).second)
      return absl::OkStatus();
    return Bad(source_, absl::StrCat("value `", value, "` is produced more than once"));
  }

  // The node name of an initializer or input: its value name, unless the
  // IR would read it as an endpoint (`:`, a leading `^`) or it is taken.
  std::string NodeNameFor(const std::string& value) {
    std::string name = value;
    if (!name.empty() && name[0] == '^') name[0] = '_';
    std::replace(name.begin(), name.end(), ':', '_');
    if (name == value) return name;
    std::string base = name;
    for (int i = 1; names_.count(name) || reserved_.count(name); ++i)
      name = absl::StrCat(base, "_", i);
    origin_->node_of_value[value] = name;
    origin_->value_of_node[name] = value;
    return name;
  }

  absl::Status Initializers(onnx::GraphProto& graph) {
    for (int i = 0; i < graph.initializer_size(); ++i) {
      onnx::TensorProto& init = *graph.mutable_initializer(i);
      if (init.name().empty()) return Bad(source_, "an initializer has no name");
      tf::NodeDef* n = def_.add_node();
      n->set_name(NodeNameFor(init.name()));
      n->set_op("Const");
      tf::AttrValue& value = (*n->mutable_attr())["value"];
      absl::StatusOr<std::shared_ptr<const TensorContent>> apart = DataApart(i, init);
      if (!apart.ok()) return apart.status();
      absl::Status s = ToTfTensor(init, value.mutable_tensor(), *apart != nullptr);
      if (!s.ok()) return Bad(source_, std::string(s.message()));
      if (*apart != nullptr) apart_.emplace_back(n->name(), *std::move(apart));
      (*n->mutable_attr())["dtype"].set_type(value.tensor().dtype());
      if (!names_.insert(n->name()).second)
        return Bad(source_, absl::StrCat("initializer `", init.name(), "` is given twice"));
      if (absl::Status s = AddValue(init.name(), n->name()); !s.ok()) return s;
      origin_->initializers[n->name()] = std::move(init);  // kept for saving, not copied
    }
    return absl::OkStatus();
  }

  // Where initializer `i`'s bytes lie when not in its message: cut out of
  // the source (left in its mapping) or in an external file; nullptr when
  // in the message.
  absl::StatusOr<std::shared_ptr<const TensorContent>> DataApart(
      int i, const onnx::TensorProto& init) {
    if (i < static_cast<int>(raw_data_.size()) && !raw_data_[i].empty())
      return ViewContent(raw_data_[i], owner_);
    if (init.data_location() != onnx::TensorProto::EXTERNAL) return nullptr;
    if (files_ == nullptr)
      return Bad(source_, absl::StrCat("tensor `", init.name(),
                                       "` keeps its data in an external file; "
                                       "read the model from its file so graft "
                                       "finds the data beside it"));
    absl::StatusOr<onnx_data::ExternalRef> ref = onnx_data::ExternalRefOf(init);
    if (!ref.ok()) return Bad(source_, std::string(ref.status().message()));
    int64_t elements = 1;
    for (int64_t d : init.dims()) {
      if (d < 0 || (d > 0 && elements > (int64_t{1} << 50) / d))
        return Bad(source_, absl::StrCat("tensor `", init.name(),
                                         "` has a bad or huge shape"));
      elements *= d;
    }
    const int64_t expected = TensorBytes(TfDtype(init.data_type()), elements);
    origin_->external_locations.insert(ref->location);
    return files_->Content(*ref, init.name(), expected > 0 ? expected : -1);
  }

  absl::Status Inputs(onnx::GraphProto& graph) {
    for (const onnx::ValueInfoProto& input : graph.input()) {
      origin_->inputs.push_back(input);
      if (origin_->initializers.count(origin_->NodeOf(input.name()))) continue;  // overridable
      if (input.name().empty()) return Bad(source_, "a graph input has no name");
      if (values_.count(input.name()))
        return Bad(source_, absl::StrCat("graph input `", input.name(), "` is given twice"));
      tf::NodeDef* n = def_.add_node();
      n->set_name(NodeNameFor(input.name()));
      n->set_op("Placeholder");
      const auto& tensor_type = input.type().tensor_type();
      tf::DataType dtype = TfDtype(tensor_type.elem_type());
      if (dtype != tf::DT_INVALID) (*n->mutable_attr())["dtype"].set_type(dtype);
      if (tensor_type.has_shape()) {
        tf::TensorShapeProto* shape = (*n->mutable_attr())["shape"].mutable_shape();
        for (const auto& d : tensor_type.shape().dim()) {
          tf::TensorShapeProto::Dim* dim = shape->add_dim();
          dim->set_size(d.has_dim_value() ? d.dim_value() : -1);
          // A symbolic dimension keeps its name: shape inference knows two
          // `batch` dimensions are equal without knowing either.
          if (!d.has_dim_value() && !d.dim_param().empty()) dim->set_name(d.dim_param());
        }
      }
      names_.insert(n->name());
      if (absl::Status s = AddValue(input.name(), n->name()); !s.ok()) return s;
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
      if (base[0] == '^') base[0] = '_';  // the IR reads `^x` and `x:1` as endpoints
      std::replace(base.begin(), base.end(), ':', '_');
      std::string name = base;
      while (names_.count(name) || name == kAbsent)
        name = absl::StrCat(base, "_", ++counters[base]);
      names_.insert(name);
      node_names_.push_back(name);
      for (int k = 0; k < node.output_size(); ++k) {
        absl::Status s =
            AddValue(node.output(k), k == 0 ? name : absl::StrCat(name, ":", k));
        if (!s.ok()) return s;
        written_by_.emplace(node.output(k), static_cast<int>(node_names_.size()) - 1);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Nodes(onnx::GraphProto& graph) {
    bool absent_used = false;
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto& node = graph.node(i);
      const std::string& name = node_names_[i];
      // graft's own ops for what is not a node in ONNX (initializers,
      // graph inputs and outputs, absent optional inputs)
      const std::string op = OnnxOpName(node.domain(), node.op_type());
      if (op == "Const" || op == "Placeholder" || op == "_Retval" || op == kAbsentOp)
        return Bad(source_, absl::StrCat("node `", name, "`: op type `", op,
                                         "` is graft's own mark of an initializer, a graph "
                                         "input or output or an absent optional input, no "
                                         "op a model may use"));
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
        auto order = value.empty() ? written_by_.end() : written_by_.find(value);
        if (order != written_by_.end() && order->second >= i &&
            !origin_->unsorted.count(name))
          origin_->unsorted[name] = value;
        n->add_input(value.empty() ? std::string(kAbsent) : it->second);
      }
      // Values its subgraphs read from the scopes around: trailing inputs
      // (so rewrites keep them produced and reroutes rename them).
      std::vector<std::string> captured = OnnxCapturedNames(node);
      for (const std::string& value : captured) {
        auto it = values_.find(value);
        if (it == values_.end())
          return Bad(source_, absl::StrCat("node `", name, "` (", node.op_type(),
                                           ") attr `", AttrReading(node, value),
                                           "` reads `", value,
                                           "`, which neither the subgraph nor the "
                                           "graph around it produces"));
        n->add_input(it->second);
      }
      if (!captured.empty()) {
        tf::AttrValue::ListValue* list =
            (*n->mutable_attr())[kCapturesAttr].mutable_list();
        for (const std::string& value : captured) list->add_s(value);
      }
      std::set<std::string> attr_names;
      for (const AttributeProto& a : node.attribute()) {
        // One attr per name (onnx.checker's rule): a subgraph is found by
        // its attr's name.
        if (a.name().empty())
          return Bad(source_, absl::StrCat("node `", name, "`: an attr has no name"));
        if (!attr_names.insert(a.name()).second)
          return Bad(source_, absl::StrCat("node `", name, "`: attr `", a.name(),
                                           "` is given twice"));
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

  // The name of the graph attr of `node` whose subgraph reads `value`.
  static std::string AttrReading(const onnx::NodeProto& node, const std::string& value) {
    for (const AttributeProto& a : node.attribute()) {
      for (const onnx::GraphProto* body : OnnxAttrBodies(a)) {
        std::vector<std::string> reads = OnnxSubgraphReads(*body);
        if (std::find(reads.begin(), reads.end(), value) != reads.end()) return a.name();
      }
    }
    return "";
  }

  absl::Status Outputs(onnx::GraphProto& graph) {
    for (int i = 0; i < graph.output_size(); ++i) {
      const onnx::ValueInfoProto& output = graph.output(i);
      auto it = values_.find(output.name());
      if (it == values_.end())
        return Bad(source_, absl::StrCat("graph output `", output.name(),
                                         "` is not produced"));
      std::string name = absl::StrCat(output.name(), "/output");
      if (name[0] == '^') name[0] = '_';
      std::replace(name.begin(), name.end(), ':', '_');
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
  std::vector<absl::string_view> raw_data_;  // cut out, by initializer
  std::shared_ptr<const void> owner_;        // keeps raw_data_ alive
  onnx_data::ExternalFiles* files_;          // nullptr: no folder known
  std::vector<std::pair<std::string, std::shared_ptr<const TensorContent>>> apart_;
  tf::GraphDef def_;
  std::set<std::string> names_;  // node names taken
  std::set<std::string> reserved_;  // initializers' and inputs' value names
  // Each value's tensor name in the graph ("node" or "node:port").
  absl::flat_hash_map<std::string, std::string> values_;
  std::vector<std::string> node_names_;  // of graph.node(i)
  absl::flat_hash_map<std::string, int> written_by_;  // value -> node index
};

}  // namespace

absl::StatusOr<Graph> ParseOnnx(absl::string_view bytes,
                                const std::string& source,
                                std::shared_ptr<const void> owner,
                                std::optional<std::string> folder) {
  auto origin = std::make_shared<OnnxOrigin>();
  onnx::ModelProto& model = origin->model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Bad(source, "larger than 2 GiB, the limit of an ONNX file (keep "
                       "the weights as external data)");
  // Large initializers' bytes stay where they are (the file's mapping);
  // protobuf parses the rest.
  std::optional<onnx_data::StrippedModel> stripped =
      onnx_data::StripInitializerData(bytes);
  if (stripped.has_value() && owner == nullptr) {
    bool cut = false;
    for (absl::string_view r : stripped->raw_data) cut = cut || !r.empty();
    if (cut) {  // the caller's bytes do not outlive the call: keep a copy
      auto copy = std::make_shared<std::string>(bytes);
      owner = copy;
      stripped = onnx_data::StripInitializerData(*copy);
    }
  }
  absl::string_view parsed = stripped.has_value() ? stripped->bytes : bytes;
  {
    google::protobuf::LogSilencer quiet;  // invalid UTF-8: the error below
    if (!model.ParseFromArray(parsed.data(), static_cast<int>(parsed.size())))
      return Bad(source, "not a valid ONNX model (the ModelProto does not parse)");
  }
  if (absl::Status s = CheckUtf8Names(model.graph(), source); !s.ok()) return s;
  // IR 3 (opsets) to what onnx 1.23, the schema snapshot's, writes.
  if (!model.has_ir_version() || model.ir_version() < 3 || model.ir_version() > 14)
    return Bad(source, absl::StrCat("IR version ", model.ir_version(),
                                    "; graft reads ONNX IR versions 3 to 14"));
  if (!model.has_graph()) return Bad(source, "the model has no graph");
  for (const auto& o : model.opset_import()) {
    const bool default_domain = o.domain().empty() || o.domain() == "ai.onnx";
    origin->opsets[default_domain ? "" : o.domain()] = o.version();
    if (default_domain) origin->opset = o.version();
  }
  // No default-domain opset: only other domains' ops (validation says so
  // of any default-domain op).
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
  std::optional<onnx_data::ExternalFiles> files;
  if (folder.has_value()) files.emplace(*folder, std::string(source));
  origin->folder = folder.value_or("");
  if (folder.has_value()) origin->model_file = std::string(source);
  GraphReader reader(source, origin.get(),
                     stripped.has_value() ? std::move(stripped->raw_data)
                                          : std::vector<absl::string_view>(),
                     owner, files.has_value() ? &*files : nullptr);
  if (absl::Status s = reader.Read(graph); !s.ok()) return s;
  absl::StatusOr<Graph> out = Graph::FromGraphDef(std::move(reader.def()));
  if (!out.ok()) return Bad(source, std::string(out.status().message()));
  for (const auto& [name, content] : reader.apart())
    out->SetSourceContent(out->FindId(name), content);
  out->set_origin(std::move(origin));
  return out;
}

}  // namespace graft
