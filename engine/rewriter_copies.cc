// The Rewriter's copying edits: Clone (copies of nodes, inputs replaced)
// and Splice (another graph's nodes grafted in under a prefix).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/graph_algorithms.h"
#include "engine/op_registry.h"
#include "engine/rewriter.h"

namespace graft {

absl::StatusOr<CloneResult> Rewriter::Clone(
    absl::Span<const NodeId> nodes,
    const absl::flat_hash_map<Endpoint, Endpoint>& replacements,
    absl::string_view name_prefix, absl::string_view name_suffix) {
  std::vector<NodeId> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  absl::flat_hash_set<NodeId> inside(sorted.begin(), sorted.end());
  for (NodeId id : sorted) {
    absl::Status s = CheckLive(id, "clone");
    if (!s.ok()) return s;
    const Node& node = graph_.node(id);
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (!node.input(i).valid()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot clone `", node.name(), "`: input ", i, " (`",
            graph_.UnresolvedInputName(id, i), "`) is not in the graph"));
      }
    }
  }
  for (const auto& [original, replacement] : replacements) {
    absl::Status s = CheckEndpoint(original, "clone replacement");
    if (s.ok()) s = CheckEndpoint(replacement, "clone replacement");
    if (s.ok()) s = CheckCompatible(original, replacement);
    if (!s.ok()) return s;
  }
  CloneResult result;
  for (NodeId id : sorted) {
    tf::NodeDef* def = graph_.NewNodeDef();
    def->CopyFrom(graph_.node(id).def());
    def->set_name(
        UniqueName(absl::StrCat(name_prefix, def->name(), name_suffix)));
    NodeId copy = Insert(def, {}, {});
    // The clone shares the source mapping's bytes of a large constant.
    graph_.mutable_node(copy).content_ = graph_.node(id).content_;
    graph_.mutable_node(copy).copy_of_ = id;
    result.mapping[id] = copy;
    result.created.push_back(copy);
  }
  for (NodeId id : sorted) {
    const Node& original = graph_.node(id);
    NodeId copy_id = result.mapping[id];
    Node& copy = graph_.mutable_node(copy_id);
    for (Endpoint e : original.inputs()) {
      Endpoint source = e;
      if (inside.contains(e.node)) {
        source = {result.mapping[e.node], e.port};
      } else if (auto it = replacements.find(e); it != replacements.end()) {
        source = it->second;
      }
      InputSlot slot{copy_id, static_cast<int32_t>(copy.inputs_.size())};
      copy.inputs_.push_back(source);
      graph_.AddConsumer(source, slot);
    }
    for (NodeId c : original.control_inputs()) {
      if (c == kNoNode) continue;
      NodeId source = inside.contains(c) ? result.mapping[c] : c;
      copy.control_inputs_.push_back(source);
      graph_.AddControlConsumer(source, copy_id);
    }
  }
  // The copies are ranked after their inputs, in their originals' order
  // (the originals are ranked topologically, so a copy's copied inputs are
  // ranked before it); they have no consumers yet.
  if (ranks_valid_) {
    std::vector<NodeId> by_rank = sorted;
    std::sort(by_rank.begin(), by_rank.end(), [&](NodeId a, NodeId b) {
      return ranks_[a] < ranks_[b] || (ranks_[a] == ranks_[b] && a < b);
    });
    for (NodeId id : by_rank) RankNewNode(result.mapping[id]);
  }
  for (NodeId id : result.created) {
    graph_.BumpVersion(id);
    for (RewriteListener* l : listeners_) l->NodeInserted(graph_, id);
  }
  return result;
}

absl::StatusOr<SpliceResult> Rewriter::Splice(
    const tf::GraphDef& other, absl::string_view prefix,
    const absl::flat_hash_map<std::string, Endpoint>& input_map) {
  // Resolve everything before the graph changes.
  absl::flat_hash_map<absl::string_view, int> index;
  for (int i = 0; i < other.node_size(); ++i) {
    const std::string& name = other.node(i).name();
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("splice: node #", i, " has no name"));
    }
    if (!index.emplace(name, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("splice: duplicate node name `", name, "`"));
    }
  }
  absl::flat_hash_map<std::string, Endpoint> mapped;
  for (const auto& [tensor, target] : input_map) {
    absl::string_view node;
    int port = 0;
    if (!Graph::ParseTensorName(tensor, &node, &port) || port < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("splice: `", tensor, "` is not a tensor name"));
    }
    absl::Status s = CheckEndpoint(target, "splice input map");
    if (!s.ok()) return s;
    mapped[port == 0 ? std::string(node) : absl::StrCat(node, ":", port)] =
        target;
  }
  struct Source {
    bool from_target = false;  // read a target tensor (input map)
    int other_index = -1;      // or node `other_index` of `other`
    Endpoint target;
    int port = 0;
  };
  std::vector<std::vector<Source>> data(other.node_size());
  std::vector<std::vector<Source>> control(other.node_size());
  for (int i = 0; i < other.node_size(); ++i) {
    for (const std::string& text : other.node(i).input()) {
      absl::string_view name;
      int port = 0;
      if (!Graph::ParseTensorName(text, &name, &port)) {
        return absl::InvalidArgumentError(
            absl::StrCat("splice: node `", other.node(i).name(),
                         "` has a malformed input `", text, "`"));
      }
      Source source;
      std::string key =
          port <= 0 ? std::string(name) : absl::StrCat(name, ":", port);
      if (auto it = mapped.find(key); it != mapped.end()) {
        source.from_target = true;
        source.target = it->second;
      } else if (auto it2 = index.find(name); it2 != index.end()) {
        source.other_index = it2->second;
        source.port = std::max(port, 0);
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "splice: input `", text, "` of `", other.node(i).name(),
            "` is neither in the spliced graph nor in the input map"));
      }
      (port < 0 ? control[i] : data[i]).push_back(source);
    }
  }
  SpliceResult result;
  std::vector<NodeId> ids(other.node_size(), kNoNode);
  for (int i = 0; i < other.node_size(); ++i) {
    // A placeholder the input map feeds is not copied.
    auto fed = mapped.find(other.node(i).name());
    if (other.node(i).op() == "Placeholder" && fed != mapped.end()) {
      result.mapping[other.node(i).name()] = fed->second.node;
      continue;
    }
    tf::NodeDef* def = graph_.NewNodeDef();
    def->CopyFrom(other.node(i));
    def->set_name(UniqueName(absl::StrCat(prefix, def->name())));
    ids[i] = Insert(def, {}, {});
    result.mapping[other.node(i).name()] = ids[i];
    result.created.push_back(ids[i]);
  }
  std::vector<NodeId> touched;
  for (int i = 0; i < other.node_size(); ++i) {
    if (ids[i] == kNoNode) continue;
    Node& node = graph_.mutable_node(ids[i]);
    for (const Source& s : data[i]) {
      Endpoint e =
          s.from_target ? s.target : Endpoint{ids[s.other_index], s.port};
      if (s.from_target) touched.push_back(e.node);
      InputSlot slot{ids[i], static_cast<int32_t>(node.inputs_.size())};
      node.inputs_.push_back(e);
      graph_.AddConsumer(e, slot);
    }
    for (const Source& s : control[i]) {
      NodeId c = s.from_target ? s.target.node : ids[s.other_index];
      if (s.from_target) touched.push_back(c);
      node.control_inputs_.push_back(c);
      graph_.AddControlConsumer(c, ids[i]);
    }
  }
  ranks_valid_ = false;
  for (NodeId id : result.created) {
    graph_.BumpVersion(id);
    for (RewriteListener* l : listeners_) l->NodeInserted(graph_, id);
  }
  NotifyChanged(std::move(touched));
  return result;
}

}  // namespace graft
