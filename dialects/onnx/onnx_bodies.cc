#include "dialects/onnx/onnx_bodies.h"

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dialects/onnx/onnx_model.h"
#include "engine/rewriter.h"

namespace graft {
namespace {

// What the graph around declares of value `name`'s type, if anything.
const onnx::TypeProto* DeclaredType(const OnnxOrigin& origin, const std::string& name) {
  for (const onnx::ValueInfoProto& v : origin.inputs)
    if (v.name() == name && v.has_type()) return &v.type();
  if (auto it = origin.value_info.find(name); it != origin.value_info.end())
    return it->second.has_type() ? &it->second.type() : nullptr;
  for (const onnx::ValueInfoProto& v : origin.outputs)
    if (v.name() == name && v.has_type()) return &v.type();
  return nullptr;
}

const onnx::NodeProto* NodeMessage(const Graph& graph, const std::string& name) {
  const OnnxOrigin* origin = OnnxOf(graph);
  NodeId id = graph.FindId(name);
  if (origin == nullptr || id == kNoNode) return nullptr;
  auto it = origin->nodes.find(name);
  if (it == origin->nodes.end() ||
      OnnxOpName(it->second.domain(), it->second.op_type()) != graph.node(id).op())
    return nullptr;
  return &it->second;
}

}  // namespace

std::string OnnxBody::Label() const {
  return index < 0 ? absl::StrCat(node, "/", attr)
                   : absl::StrCat(node, "/", attr, "[", index, "]");
}

std::vector<OnnxBody> OnnxBodies(const Graph& graph) {
  std::vector<OnnxBody> out;
  if (OnnxOf(graph) == nullptr) return out;
  graph.ForEachNode([&](const Node& n) {  // any op's graph attrs, not only If/Loop/Scan's
    const onnx::NodeProto* node = NodeMessage(graph, n.name());
    if (node == nullptr) return;
    for (const onnx::AttributeProto& a : node->attribute()) {
      if (a.has_g()) out.push_back({n.name(), a.name(), -1});
      for (int i = 0; i < a.graphs_size(); ++i) out.push_back({n.name(), a.name(), i});
    }
  });
  return out;
}

namespace {

const onnx::GraphProto* FindBody(const onnx::NodeProto& node, const OnnxBody& body) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() != body.attr) continue;
    if (body.index < 0) return a.has_g() ? &a.g() : nullptr;
    return body.index < a.graphs_size() ? &a.graphs(body.index) : nullptr;
  }
  return nullptr;
}

absl::Status NoBody(const OnnxBody& body) {
  return absl::NotFoundError(
      absl::StrCat("the graph has no subgraph `", body.Label(), "`"));
}

}  // namespace

const onnx::GraphProto* OnnxBodyProto(const Graph& graph, const OnnxBody& body) {
  const onnx::NodeProto* node = NodeMessage(graph, body.node);
  return node == nullptr ? nullptr : FindBody(*node, body);
}

absl::StatusOr<Graph> OnnxBodyGraph(const Graph& graph, const OnnxBody& body) {
  const onnx::GraphProto* proto = OnnxBodyProto(graph, body);
  if (proto == nullptr) return NoBody(body);
  const OnnxOrigin& outer = *OnnxOf(graph);
  onnx::ModelProto model = outer.model;
  *model.mutable_graph() = *proto;
  std::vector<std::string> captures = OnnxSubgraphReads(*proto);
  std::set<std::string> seen(captures.begin(), captures.end());
  for (const std::string& name : captures) {
    onnx::ValueInfoProto* input = model.mutable_graph()->add_input();
    input->set_name(name);
    if (const onnx::TypeProto* type = DeclaredType(outer, name)) *input->mutable_type() = *type;
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return absl::InvalidArgumentError(
        absl::StrCat("subgraph `", body.Label(), "` does not serialize"));
  std::optional<std::string> folder;
  if (!outer.folder.empty()) folder = outer.folder;
  absl::StatusOr<Graph> parsed = ParseOnnx(bytes, body.Label(), nullptr, folder);
  if (!parsed.ok()) return parsed.status();
  // A captured constant (an outer initializer) is a constant in the body
  // too, so rules see its value.
  tf::GraphDef def = parsed->ToGraphDef();
  std::map<std::string, std::shared_ptr<const TensorContent>> apart;
  parsed->ForEachNode([&](const Node& n) {
    if (n.value_content_apart() != nullptr) apart[n.name()] = n.value_content_apart();
  });
  for (tf::NodeDef& n : *def.mutable_node()) {
    const std::string& value = OnnxOf(*parsed)->ValueOf(n.name());
    if (n.op() != "Placeholder" || !seen.count(value)) continue;
    NodeId id = graph.FindId(outer.NodeOf(value));
    if (id == kNoNode || graph.node(id).op() != "Const") continue;
    const std::string name = n.name();
    n = graph.node(id).def();
    n.set_name(name);
    if (graph.node(id).value_content_apart() != nullptr)
      apart[name] = graph.node(id).value_content_apart();
  }
  absl::StatusOr<Graph> out = Graph::FromGraphDef(std::move(def));
  if (!out.ok()) return out.status();
  for (auto& [name, content] : apart) out->SetSourceContent(out->FindId(name), content);
  auto origin = std::make_shared<OnnxOrigin>(*OnnxOf(*parsed));
  origin->captures = std::move(seen);
  origin->inputs.resize(origin->inputs.size() - captures.size());
  out->set_origin(std::move(origin));
  return out;
}

absl::Status SetOnnxBody(Graph& graph, const OnnxBody& body, const Graph& rewritten) {
  if (NodeMessage(graph, body.node) == nullptr) return NoBody(body);
  absl::StatusOr<std::string> bytes = SerializeOnnx(rewritten);
  if (!bytes.ok()) return bytes.status();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes))
    return absl::InternalError("a written subgraph does not parse");
  auto origin = std::make_shared<OnnxOrigin>(*OnnxOf(graph));
  onnx::NodeProto& node = origin->nodes.at(body.node);
  onnx::GraphProto* into = nullptr;
  for (onnx::AttributeProto& a : *node.mutable_attribute()) {
    if (a.name() != body.attr) continue;
    if (body.index < 0 && a.has_g()) into = a.mutable_g();
    if (body.index >= 0 && body.index < a.graphs_size()) into = a.mutable_graphs(body.index);
  }
  if (into == nullptr) return NoBody(body);
  *into = std::move(*model.mutable_graph());
  // The node's captures: what its subgraphs read now (a rewrite may have
  // dropped a read, never added an outer one).
  const NodeId id = graph.FindId(body.node);
  const Node& n = graph.node(id);
  const int first = n.num_inputs() - OnnxCaptureCount(n);
  std::map<std::string, Endpoint> captured;
  for (int k = first; k < n.num_inputs(); ++k)
    captured[n.attr(kCapturesAttr)->list().s(k - first)] = n.input(k);
  std::vector<Endpoint> inputs;
  tf::AttrValue names;
  names.mutable_list();
  for (const std::string& name : OnnxCapturedNames(node)) {
    auto it = captured.find(name);
    if (it == captured.end())
      return absl::InvalidArgumentError(absl::StrCat(
          "the rewritten subgraph `", body.Label(), "` reads `", name,
          "`, which the node does not capture from the graph around"));
    inputs.push_back(it->second);
    names.mutable_list()->add_s(name);
    captured.erase(it);
  }
  Rewriter rewriter(graph);
  rewriter.Begin();
  absl::Status s = absl::OkStatus();
  if (!captured.empty()) {
    s = rewriter.SetTrailingInputs(id, first, inputs);
    if (s.ok())
      s = inputs.empty() ? rewriter.RemoveAttr(id, kCapturesAttr)
                         : rewriter.SetAttr(id, kCapturesAttr, names);
    // An outer initializer no one reads any more goes.
    for (const auto& [name, e] : captured) {
      const Node& p = graph.node(e.node);
      if (s.ok() && p.alive() && p.op() == "Const" && !p.HasConsumers())
        s = rewriter.RemoveNode(e.node);
    }
  }
  if (!s.ok()) {
    rewriter.Rollback();
    return s;
  }
  rewriter.Commit();
  graph.set_origin(std::move(origin));
  return absl::OkStatus();
}

}  // namespace graft
