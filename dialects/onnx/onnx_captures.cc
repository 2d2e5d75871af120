#include <map>
#include <set>
#include <string>
#include <vector>

#include "dialects/onnx/onnx_model.h"

// Subgraph captures in the ONNX codec (dialects/onnx/onnx_model.h).
namespace graft {
namespace {

std::vector<onnx::GraphProto*> MutableBodies(onnx::AttributeProto* a) {
  std::vector<onnx::GraphProto*> out;
  if (a->has_g()) out.push_back(a->mutable_g());
  for (onnx::GraphProto& g : *a->mutable_graphs()) out.push_back(&g);
  return out;
}

// Adds to `out` (in order, once) what `body` reads that neither it nor
// `inner` (the enclosing subgraphs' values) produces.
void AddFreeNames(const onnx::GraphProto& body, std::set<std::string> inner,
                  std::vector<std::string>* out, std::set<std::string>* seen) {
  for (const auto& v : body.input()) inner.insert(v.name());
  for (const auto& t : body.initializer()) inner.insert(t.name());
  for (const auto& t : body.sparse_initializer()) inner.insert(t.values().name());
  for (const onnx::NodeProto& n : body.node())
    for (const std::string& o : n.output()) inner.insert(o);
  auto read = [&](const std::string& v) {
    if (!v.empty() && !inner.count(v) && seen->insert(v).second) out->push_back(v);
  };
  for (const onnx::NodeProto& n : body.node()) {
    for (const std::string& v : n.input()) read(v);
    for (const onnx::AttributeProto& a : n.attribute())
      for (const onnx::GraphProto* nested : OnnxAttrBodies(a)) AddFreeNames(*nested, inner, out, seen);
  }
  for (const auto& v : body.output()) read(v.name());
}

}  // namespace

std::vector<const onnx::GraphProto*> OnnxAttrBodies(const onnx::AttributeProto& a) {
  std::vector<const onnx::GraphProto*> out;
  if (a.has_g()) out.push_back(&a.g());
  for (const onnx::GraphProto& g : a.graphs()) out.push_back(&g);
  return out;
}

int OnnxCaptureCount(const Node& node) {
  const tf::AttrValue* captures = node.attr(kCapturesAttr);
  return captures == nullptr ? 0 : captures->list().s_size();
}

std::vector<std::string> OnnxSubgraphReads(const onnx::GraphProto& body) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  AddFreeNames(body, {}, &out, &seen);
  return out;
}

std::vector<std::string> OnnxCapturedNames(const onnx::NodeProto& node) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const onnx::AttributeProto& a : node.attribute())
    for (const onnx::GraphProto* body : OnnxAttrBodies(a)) AddFreeNames(*body, {}, &out, &seen);
  return out;
}

void RenameCaptures(const std::map<std::string, std::string>& renames,
                    onnx::GraphProto* body) {
  if (renames.empty()) return;
  auto rename = [&](std::string* v) {
    auto it = renames.find(*v);
    if (it != renames.end()) *v = it->second;
  };
  for (onnx::NodeProto& n : *body->mutable_node()) {
    for (std::string& v : *n.mutable_input()) rename(&v);
    RenameCaptures(renames, &n);
  }
  for (onnx::ValueInfoProto& v : *body->mutable_output()) rename(v.mutable_name());
}

void RenameCaptures(const std::map<std::string, std::string>& renames,
                    onnx::NodeProto* node) {
  if (renames.empty()) return;
  for (onnx::AttributeProto& a : *node->mutable_attribute())
    for (onnx::GraphProto* nested : MutableBodies(&a)) RenameCaptures(renames, nested);
}

}  // namespace graft
