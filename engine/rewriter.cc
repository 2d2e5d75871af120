#include "engine/rewriter.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/dialect.h"
#include "engine/graph_algorithms.h"
#include "engine/op_registry.h"

namespace graft {
namespace {


}  // namespace

bool ConsumerFilter::Allows(NodeId consumer) const {
  switch (mode_) {
    case Mode::kAll:
      return true;
    case Mode::kOnly:
      return nodes_.contains(consumer);
    case Mode::kExcept:
      return !nodes_.contains(consumer);
  }
  return false;
}

std::string Rewriter::UniqueName(absl::string_view base) const {
  std::string root = base.empty() ? "node" : std::string(base);
  if (!graph_.Contains(root)) return root;
  // A name this rewriter numbered is renumbered from its stem.
  if (auto it = stem_of_.find(root); it != stem_of_.end()) root = it->second;
  int& next = next_number_[root];
  for (int i = std::max(next, 1);; ++i) {
    std::string candidate = absl::StrCat(root, "_", i);
    if (!graph_.Contains(candidate)) {
      next = i + 1;
      stem_of_[candidate] = root;
      return candidate;
    }
  }
}

absl::Status Rewriter::CheckLive(NodeId id, absl::string_view what) const {
  if (id < 0 || id >= graph_.id_limit() || !graph_.node(id).alive()) {
    return absl::NotFoundError(
        absl::StrCat(what, ": node #", id, " is not in the graph"));
  }
  return absl::OkStatus();
}

absl::Status Rewriter::CheckEndpoint(Endpoint e, absl::string_view what) const {
  absl::Status live = CheckLive(e.node, what);
  if (!live.ok()) return live;
  if (e.port < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": negative output port on `", graph_.node(e.node).name(), "`"));
  }
  std::optional<std::vector<tf::DataType>> types =
      OpRegistry::For(graph_).OutputTypes(graph_.node(e.node));
  if (types && e.port >= static_cast<int>(types->size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": `", graph_.node(e.node).name(), "` (",
                     graph_.node(e.node).op(), ") has ", types->size(),
                     " output(s), there is no output ", e.port));
  }
  return absl::OkStatus();
}

absl::Status Rewriter::CheckCompatible(Endpoint from, Endpoint to) const {
  // A dialect whose nodes carry their dtypes as attrs (TensorFlow's) has
  // them from its op registry; another's (ONNX's) are its validator's,
  // checked after each rewrite.
  const OpRegistry& ops = OpRegistry::For(graph_);
  const bool tensorflow = DialectOf(graph_).has_type_attrs();
  tf::DataType a = tensorflow ? ops.OutputType(graph_.node(from.node), from.port) : tf::DT_INVALID;
  tf::DataType b = tensorflow ? ops.OutputType(graph_.node(to.node), to.port) : tf::DT_INVALID;
  if (a != tf::DT_INVALID && b != tf::DT_INVALID &&
      BaseType(a) != BaseType(b)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reroute `", graph_.TensorName(from), "` (",
                     DataTypeName(a), ") to `", graph_.TensorName(to), "` (",
                     DataTypeName(b), "): their dtypes differ"));
  }
  std::optional<std::vector<int64_t>> sa = StaticShape(graph_, from);
  std::optional<std::vector<int64_t>> sb = StaticShape(graph_, to);
  if (sa && sb && !ShapesCompatible(*sa, *sb)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reroute `", graph_.TensorName(from), "` ",
                     ShapeText(*sa), " to `", graph_.TensorName(to), "` ",
                     ShapeText(*sb), ": their shapes differ"));
  }
  return absl::OkStatus();
}

double Rewriter::Rank(NodeId id) const {
  if (!ranks_valid_) {
    ranks_.assign(graph_.id_limit(), 0.0);
    absl::StatusOr<std::vector<NodeId>> order = TopologicalOrder(graph_);
    if (!order.ok()) return -1;  // a cyclic graph: no fast path
    for (size_t i = 0; i < order->size(); ++i)
      ranks_[(*order)[i]] = static_cast<double>(i);
    ranks_valid_ = true;
  }
  return id < static_cast<NodeId>(ranks_.size()) ? ranks_[id] : -1;
}

void Rewriter::RankNewNode(NodeId id) {
  if (!ranks_valid_) return;
  // After every producer, before anything (it has no consumers yet).
  double rank = 0;
  const Node& n = graph_.node(id);
  for (Endpoint e : n.inputs())
    rank = std::max(rank, ranks_[e.node] + kRankStep);
  for (NodeId c : n.control_inputs())
    rank = std::max(rank, ranks_[c] + kRankStep);
  if (ranks_.size() <= static_cast<size_t>(id)) ranks_.resize(id + 1, 0.0);
  ranks_[id] = rank;
}

void Rewriter::RankEdge(NodeId producer, NodeId consumer) {
  if (!ranks_valid_ || ranks_[producer] < ranks_[consumer]) return;
  // A new edge against the order: move one end locally when there is room
  // (the consumer up, below its own consumers; or the producer down, above
  // its own inputs), as recomputing the order costs the whole graph.
  const Node& c = graph_.node(consumer);
  double above = std::numeric_limits<double>::infinity();
  for (int p = 0; p < c.num_used_ports(); ++p) {
    for (InputSlot s : c.consumers(p)) above = std::min(above, ranks_[s.node]);
  }
  for (NodeId n : c.control_consumers()) above = std::min(above, ranks_[n]);
  double low = ranks_[producer];
  if (above - low > 1e-9) {
    ranks_[consumer] = std::isinf(above) ? low + kRankStep : (low + above) / 2;
    return;
  }
  const Node& p = graph_.node(producer);
  double below = -1;
  for (Endpoint e : p.inputs()) {
    if (e.valid()) below = std::max(below, ranks_[e.node]);
  }
  for (NodeId n : p.control_inputs()) {
    if (n != kNoNode) below = std::max(below, ranks_[n]);
  }
  double high = ranks_[consumer];
  if (high - below > 1e-9) {
    ranks_[producer] = (below + high) / 2;
    return;
  }
  ranks_valid_ = false;
}

absl::Status Rewriter::CheckNoCycle(Endpoint to,
                                    absl::Span<const NodeId> consumers) const {
  if (consumers.empty()) return absl::OkStatus();
  // Fast path: edges run from lower to higher rank, so a consumer ranked
  // above `to` cannot feed it.
  double to_rank = Rank(to.node);
  if (to_rank >= 0 &&
      std::all_of(consumers.begin(), consumers.end(),
                  [&](NodeId c) { return to_rank < Rank(c); })) {
    return absl::OkStatus();
  }
  absl::flat_hash_set<NodeId> targets(consumers.begin(), consumers.end());
  // Walk the ancestors of `to`: reaching a consumer means it feeds `to`.
  std::vector<bool> seen(graph_.id_limit(), false);
  std::vector<NodeId> stack = {to.node};
  seen[to.node] = true;
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (targets.contains(id)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "edit would create a cycle: `", graph_.TensorName(to),
          "` depends on `", graph_.node(id).name(), "`, which would read it"));
    }
    const Node& node = graph_.node(id);
    auto visit = [&](NodeId p) {
      if (p != kNoNode && !seen[p]) {
        seen[p] = true;
        stack.push_back(p);
      }
    };
    for (Endpoint e : node.inputs()) visit(e.node);
    for (NodeId c : node.control_inputs()) visit(c);
  }
  return absl::OkStatus();
}

void Rewriter::Begin() {
  recording_ = true;
  undo_.clear();
  begin_version_ = graph_.version();
}

void Rewriter::Commit() {
  recording_ = false;
  undo_.clear();
}

void Rewriter::Rollback() {
  // The nodes the transaction touched are touched again by the undo.
  std::vector<NodeId> touched;
  bool known = graph_.EditsSince(begin_version_, &touched);
  recording_ = false;
  ranks_valid_ = false;  // restored edges may not respect ranks made since
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  undo_.clear();
  if (!known) {
    graph_.BumpVersion();
    return;
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (NodeId id : touched) graph_.BumpVersion(id);
}

void Rewriter::OnUndo(std::function<void()> undo) {
  if (recording_) undo_.push_back(std::move(undo));
}

void Rewriter::Unlink(NodeId id) {
  Node& node = graph_.mutable_node(id);
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (node.inputs_[i].valid())
      graph_.RemoveConsumer(node.inputs_[i], {id, i});
  }
  for (NodeId c : node.control_inputs_) {
    if (c != kNoNode) graph_.RemoveControlConsumer(c, id);
  }
  graph_.UnindexOp(id);
  graph_.name_index_.erase(node.name());
  node.alive_ = false;
  --graph_.num_alive_;
}

void Rewriter::Relink(NodeId id) {
  Node& node = graph_.mutable_node(id);
  node.alive_ = true;
  ++graph_.num_alive_;
  graph_.name_index_.emplace(node.name(), id);
  graph_.IndexOp(id);
  for (int i = 0; i < node.num_inputs(); ++i) {
    if (node.inputs_[i].valid()) graph_.AddConsumer(node.inputs_[i], {id, i});
  }
  for (NodeId c : node.control_inputs_) {
    if (c != kNoNode) graph_.AddControlConsumer(c, id);
  }
}

void Rewriter::MarkChanged(NodeId id) {
  Node& node = graph_.mutable_node(id);
  if (!node.modified_) {
    OnUndo([this, id] { graph_.mutable_node(id).modified_ = false; });
  }
  node.modified_ = true;
}

void Rewriter::NotifyChanged(std::vector<NodeId> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (NodeId id : ids) NotifyChanged(id);
}

void Rewriter::NotifyChanged(NodeId id) {
  if (id == kNoNode) return;
  graph_.BumpVersion(id);
  for (RewriteListener* l : listeners_) l->NodeChanged(graph_, id);
}

NodeId Rewriter::Insert(tf::NodeDef* def, absl::Span<const Endpoint> inputs,
                        absl::Span<const NodeId> control_inputs) {
  def->clear_input();
  NodeId id = graph_.AppendNode(def);
  Node& node = graph_.mutable_node(id);
  graph_.name_index_.emplace(node.name(), id);
  graph_.IndexOp(id);
  node.modified_ = true;
  if (!rule_.empty()) node.provenance_ = graph_.InternProvenance(rule_);
  for (Endpoint e : inputs) {
    InputSlot slot{id, static_cast<int32_t>(node.inputs_.size())};
    node.inputs_.push_back(e);
    graph_.AddConsumer(e, slot);
  }
  for (NodeId c : control_inputs) {
    node.control_inputs_.push_back(c);
    graph_.AddControlConsumer(c, id);
  }
  OnUndo([this, id] { Unlink(id); });
  RankNewNode(id);
  return id;
}

absl::StatusOr<NodeId> Rewriter::AddNode(NodeSpec spec) {
  if (spec.op.empty()) return absl::InvalidArgumentError("add node: no op");
  for (Endpoint e : spec.inputs) {
    absl::Status s =
        CheckEndpoint(e, absl::StrCat("add node `", spec.name, "`"));
    if (!s.ok()) return s;
  }
  for (NodeId c : spec.control_inputs) {
    absl::Status s = CheckLive(c, absl::StrCat("add node `", spec.name, "`"));
    if (!s.ok()) return s;
  }
  std::string base = spec.name.empty() ? spec.op : spec.name;
  if (!DialectOf(graph_).IsValidNodeName(base)) {
    return absl::InvalidArgumentError(
        absl::StrCat("add node: `", base, "` is not a valid node name"));
  }
  tf::NodeDef* def = graph_.NewHeapNodeDef();
  def->set_name(UniqueName(base));
  def->set_op(std::move(spec.op));
  def->set_device(std::move(spec.device));
  *def->mutable_attr() = std::move(spec.attrs);
  NodeId id = Insert(def, spec.inputs, spec.control_inputs);
  graph_.mutable_node(id).content_ = std::move(spec.value_content);
  graph_.BumpVersion(id);
  for (RewriteListener* l : listeners_) l->NodeInserted(graph_, id);
  for (Endpoint e : spec.inputs) NotifyChanged(e.node);
  for (NodeId c : spec.control_inputs) NotifyChanged(c);
  return id;
}

absl::Status Rewriter::RemoveNode(NodeId id) {
  return RemoveNodes(absl::MakeConstSpan(&id, 1));
}

absl::Status Rewriter::RemoveNodes(absl::Span<const NodeId> ids) {
  absl::flat_hash_set<NodeId> doomed;
  for (NodeId id : ids) {
    absl::Status s = CheckLive(id, "remove");
    if (!s.ok()) return s;
    doomed.insert(id);
  }
  for (NodeId id : ids) {
    const Node& node = graph_.node(id);
    for (int port = 0; port < node.num_used_ports(); ++port) {
      for (InputSlot slot : node.consumers(port)) {
        if (!doomed.contains(slot.node)) {
          return absl::FailedPreconditionError(
              absl::StrCat("cannot remove `", node.name(), "`: `",
                           graph_.node(slot.node).name(), "` still reads it"));
        }
      }
    }
    for (NodeId c : node.control_consumers()) {
      if (!doomed.contains(c)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot remove `", node.name(), "`: `", graph_.node(c).name(),
            "` has a control edge from it"));
      }
    }
  }
  std::vector<NodeId> sorted(doomed.begin(), doomed.end());
  std::sort(sorted.begin(), sorted.end());
  absl::flat_hash_set<NodeId> neighbours;
  for (NodeId id : sorted) {
    Node& node = graph_.mutable_node(id);
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (node.inputs_[i].valid()) {
        graph_.RemoveConsumer(node.inputs_[i], {id, i});
        neighbours.insert(node.inputs_[i].node);
      }
    }
    for (NodeId c : node.control_inputs_) {
      if (c != kNoNode) {
        graph_.RemoveControlConsumer(c, id);
        neighbours.insert(c);
      }
    }
  }
  for (NodeId id : sorted) {
    graph_.BumpVersion(id);
    for (RewriteListener* l : listeners_) l->NodeErased(graph_, id);
    Node& node = graph_.mutable_node(id);
    graph_.UnindexOp(id);
    graph_.name_index_.erase(node.name());
    node.alive_ = false;
    --graph_.num_alive_;
    // A removed node keeps its inputs, so that a rollback can link it back.
    OnUndo([this, id] { Relink(id); });
  }
  std::vector<NodeId> touched;
  for (NodeId n : neighbours) {
    if (!doomed.contains(n)) touched.push_back(n);
  }
  std::sort(touched.begin(), touched.end());
  for (NodeId n : touched) NotifyChanged(n);
  return absl::OkStatus();
}

absl::Status Rewriter::Rename(NodeId id, absl::string_view new_name) {
  absl::Status s = CheckLive(id, "rename");
  if (!s.ok()) return s;
  Node& node = graph_.mutable_node(id);
  if (node.name() == new_name) return absl::OkStatus();
  if (!DialectOf(graph_).IsValidNodeName(new_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rename `", node.name(), "`: `", new_name,
                     "` is not a valid node name"));
  }
  if (graph_.Contains(new_name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("cannot rename `", node.name(), "` to `", new_name,
                     "`: a node of that name exists"));
  }
  std::string old_name = node.name();
  graph_.name_index_.erase(node.name());
  node.def_->set_name(std::string(new_name));
  graph_.name_index_.emplace(node.name(), id);
  OnUndo([this, id, old_name] {
    Node& n = graph_.mutable_node(id);
    graph_.name_index_.erase(n.name());
    n.def_->set_name(old_name);
    graph_.name_index_.emplace(n.name(), id);
  });
  MarkChanged(id);
  // Consumers spell the name in their inputs.
  std::vector<NodeId> consumers(node.control_consumers().begin(),
                                node.control_consumers().end());
  for (int port = 0; port < node.num_used_ports(); ++port) {
    for (InputSlot slot : node.consumers(port)) consumers.push_back(slot.node);
  }
  std::sort(consumers.begin(), consumers.end());
  consumers.erase(std::unique(consumers.begin(), consumers.end()),
                  consumers.end());
  for (NodeId c : consumers) MarkChanged(c);
  NotifyChanged(id);
  for (NodeId c : consumers) NotifyChanged(c);
  return absl::OkStatus();
}

absl::Status Rewriter::SetDevice(NodeId id, absl::string_view device) {
  absl::Status s = CheckLive(id, "set device");
  if (!s.ok()) return s;
  tf::NodeDef* def = graph_.mutable_node(id).def_;
  OnUndo([def, old = def->device()] { def->set_device(old); });
  def->set_device(std::string(device));
  MarkChanged(id);
  NotifyChanged(id);
  return absl::OkStatus();
}

absl::Status Rewriter::SetAttr(NodeId id, absl::string_view name,
                               tf::AttrValue value) {
  absl::Status s = CheckLive(id, "set attr");
  if (!s.ok()) return s;
  if (name.empty()) return absl::InvalidArgumentError("set attr: empty name");
  Node& node = graph_.mutable_node(id);
  tf::NodeDef* def = node.def_;
  std::string key(name);
  if (key == "value" && node.content_ != nullptr) {
    // The new value replaces the one whose bytes were kept apart.
    OnUndo([&node, old = node.content_] { node.content_ = old; });
    node.content_ = nullptr;
  }
  auto old = def->attr().find(key);
  if (old == def->attr().end()) {
    OnUndo([def, key] { def->mutable_attr()->erase(key); });
  } else {
    OnUndo([def, key, value = old->second] {
      (*def->mutable_attr())[key] = value;
    });
  }
  (*def->mutable_attr())[key] = std::move(value);
  MarkChanged(id);
  NotifyChanged(id);
  return absl::OkStatus();
}

absl::Status Rewriter::RemoveAttr(NodeId id, absl::string_view name) {
  absl::Status s = CheckLive(id, "remove attr");
  if (!s.ok()) return s;
  Node& node = graph_.mutable_node(id);
  tf::NodeDef* def = node.def_;
  std::string key(name);
  auto old = def->attr().find(key);
  if (old == def->attr().end()) return absl::OkStatus();
  if (key == "value" && node.content_ != nullptr) {
    OnUndo(
        [&node, old_content = node.content_] { node.content_ = old_content; });
    node.content_ = nullptr;
  }
  OnUndo(
      [def, key, value = old->second] { (*def->mutable_attr())[key] = value; });
  def->mutable_attr()->erase(key);
  MarkChanged(id);
  NotifyChanged(id);
  return absl::OkStatus();
}

void Rewriter::SetInputUnchecked(NodeId id, int index, Endpoint source) {
  Node& node = graph_.mutable_node(id);
  Endpoint old = node.inputs_[index];
  InputSlot slot{id, index};
  OnUndo([this, id, index, old, source, unresolved = node.unresolved_] {
    Node& n = graph_.mutable_node(id);
    graph_.RemoveConsumer(source, {id, index});
    if (old.valid()) graph_.AddConsumer(old, {id, index});
    n.inputs_[index] = old;
    n.unresolved_ = unresolved;
  });
  if (old.valid()) {
    graph_.RemoveConsumer(old, slot);
  } else {
    auto& unresolved = node.unresolved_;
    unresolved.erase(
        std::remove_if(unresolved.begin(), unresolved.end(),
                       [&](const auto& entry) { return entry.first == index; }),
        unresolved.end());
  }
  node.inputs_[index] = source;
  graph_.AddConsumer(source, slot);
  RankEdge(source.node, id);
  MarkChanged(id);
}

absl::Status Rewriter::SetInput(NodeId id, int index, Endpoint source) {
  absl::Status s = CheckLive(id, "set input");
  if (!s.ok()) return s;
  const Node& node = graph_.node(id);
  if (index < 0 || index >= node.num_inputs()) {
    return absl::OutOfRangeError(
        absl::StrCat("set input: `", node.name(), "` has ", node.num_inputs(),
                     " data input(s), there is no input ", index));
  }
  s = CheckEndpoint(source, absl::StrCat("set input of `", node.name(), "`"));
  if (!s.ok()) return s;
  Endpoint old = node.input(index);
  if (old == source) return absl::OkStatus();
  if (old.valid()) {
    s = CheckCompatible(old, source);
    if (!s.ok()) return s;
  }
  s = CheckNoCycle(source, {id});
  if (!s.ok()) return s;
  SetInputUnchecked(id, index, source);
  NotifyChanged(id);
  NotifyChanged(old.node);
  NotifyChanged(source.node);
  return absl::OkStatus();
}

absl::Status Rewriter::SetTrailingInputs(NodeId id, int first,
                                         absl::Span<const Endpoint> sources) {
  absl::Status s = CheckLive(id, "set inputs");
  if (!s.ok()) return s;
  Node& node = graph_.mutable_node(id);
  if (first < 0 || first > node.num_inputs() || !node.unresolved_.empty())
    return absl::OutOfRangeError(absl::StrCat(
        "set inputs: `", node.name(), "` has ", node.num_inputs(),
        " resolved data input(s), none to set from ", first));
  for (const Endpoint& e : sources) {
    s = CheckEndpoint(e, absl::StrCat("set inputs of `", node.name(), "`"));
    if (s.ok()) s = CheckNoCycle(e, {id});
    if (!s.ok()) return s;
  }
  std::vector<Endpoint> old(node.inputs_.begin() + first, node.inputs_.end());
  auto relink = [this, id, first](absl::Span<const Endpoint> from,
                                  absl::Span<const Endpoint> to) {
    Node& n = graph_.mutable_node(id);
    for (size_t k = 0; k < from.size(); ++k)
      graph_.RemoveConsumer(from[k], {id, first + static_cast<int>(k)});
    n.inputs_.resize(first);
    for (size_t k = 0; k < to.size(); ++k) {
      n.inputs_.push_back(to[k]);
      graph_.AddConsumer(to[k], {id, first + static_cast<int>(k)});
    }
  };
  std::vector<Endpoint> now(sources.begin(), sources.end());
  relink(old, now);
  OnUndo([relink, old, now] { relink(now, old); });
  for (const Endpoint& e : now) RankEdge(e.node, id);
  MarkChanged(id);
  NotifyChanged(id);
  for (const Endpoint& e : old) NotifyChanged(e.node);
  return absl::OkStatus();
}

absl::Status Rewriter::AddControlEdge(NodeId from, NodeId to) {
  absl::Status s = CheckLive(from, "add control edge");
  if (s.ok()) s = CheckLive(to, "add control edge");
  if (!s.ok()) return s;
  if (from == to) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot add a control edge from `",
                     graph_.node(from).name(), "` to itself"));
  }
  const Node& target = graph_.node(to);
  if (std::find(target.control_inputs().begin(), target.control_inputs().end(),
                from) != target.control_inputs().end()) {
    return absl::OkStatus();
  }
  s = CheckNoCycle({from, 0}, {to});
  if (!s.ok()) return s;
  graph_.mutable_node(to).control_inputs_.push_back(from);
  graph_.AddControlConsumer(from, to);
  RankEdge(from, to);
  OnUndo([this, from, to] {
    graph_.mutable_node(to).control_inputs_.pop_back();
    graph_.RemoveControlConsumer(from, to);
  });
  MarkChanged(to);
  NotifyChanged(to);
  NotifyChanged(from);
  return absl::OkStatus();
}

absl::Status Rewriter::RemoveControlEdge(NodeId from, NodeId to) {
  absl::Status s = CheckLive(from, "remove control edge");
  if (s.ok()) s = CheckLive(to, "remove control edge");
  if (!s.ok()) return s;
  Node& target = graph_.mutable_node(to);
  auto& controls = target.control_inputs_;
  auto it = std::find(controls.begin(), controls.end(), from);
  if (it == controls.end()) {
    return absl::NotFoundError(absl::StrCat("there is no control edge from `",
                                            graph_.node(from).name(), "` to `",
                                            target.name(), "`"));
  }
  int removed = static_cast<int>(it - controls.begin());
  controls.erase(it);
  OnUndo([this, from, to, removed, unresolved = target.unresolved_] {
    Node& n = graph_.mutable_node(to);
    n.control_inputs_.insert(n.control_inputs_.begin() + removed, from);
    n.unresolved_ = unresolved;
    graph_.AddControlConsumer(from, to);
  });
  // Unresolved control inputs are keyed by position; shift those after it.
  for (auto& [key, name] : target.unresolved_) {
    if (key < 0 && -1 - key > removed) ++key;
  }
  graph_.RemoveControlConsumer(from, to);
  MarkChanged(to);
  NotifyChanged(to);
  NotifyChanged(from);
  return absl::OkStatus();
}

absl::StatusOr<int> Rewriter::Reroute(Endpoint from, Endpoint to,
                                      const ConsumerFilter& filter) {
  return Reroute(absl::MakeConstSpan(&from, 1), absl::MakeConstSpan(&to, 1),
                 filter);
}

absl::StatusOr<int> Rewriter::Reroute(absl::Span<const Endpoint> from,
                                      absl::Span<const Endpoint> to,
                                      const ConsumerFilter& filter) {
  if (from.size() != to.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("reroute: ", from.size(), " source tensor(s) but ",
                     to.size(), " target tensor(s)"));
  }
  // Snapshot every pair's consumers first, so that pairs which share
  // tensors (a swap) see the graph as it was before the edit.
  std::vector<std::vector<InputSlot>> slots(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    absl::Status s = CheckEndpoint(from[i], "reroute");
    if (s.ok()) s = CheckEndpoint(to[i], "reroute");
    if (!s.ok()) return s;
    if (from[i] == to[i]) continue;
    std::vector<NodeId> nodes;
    for (InputSlot slot : graph_.node(from[i].node).consumers(from[i].port)) {
      if (filter.Allows(slot.node)) {
        slots[i].push_back(slot);
        nodes.push_back(slot.node);
      }
    }
    // Only a tensor that gets consumers must fit them.
    if (!nodes.empty()) s = CheckCompatible(from[i], to[i]);
    if (s.ok()) s = CheckNoCycle(to[i], nodes);
    if (!s.ok()) return s;
  }
  int changed = 0;
  std::vector<NodeId> touched;
  for (size_t i = 0; i < from.size(); ++i) {
    for (InputSlot slot : slots[i]) {
      SetInputUnchecked(slot.node, slot.index, to[i]);
      touched.push_back(slot.node);
      ++changed;
    }
    if (!slots[i].empty()) {
      touched.push_back(from[i].node);
      touched.push_back(to[i].node);
    }
  }
  NotifyChanged(std::move(touched));
  return changed;
}

absl::StatusOr<int> Rewriter::Swap(Endpoint a, Endpoint b,
                                   const ConsumerFilter& filter) {
  return Swap(absl::MakeConstSpan(&a, 1), absl::MakeConstSpan(&b, 1), filter);
}

absl::StatusOr<int> Rewriter::Swap(absl::Span<const Endpoint> a,
                                   absl::Span<const Endpoint> b,
                                   const ConsumerFilter& filter) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("swap: ", a.size(), " tensor(s) against ", b.size()));
  }
  // One reroute of both directions: it finds every pair's consumers
  // before it changes any.
  std::vector<Endpoint> from(a.begin(), a.end()), to(b.begin(), b.end());
  from.insert(from.end(), b.begin(), b.end());
  to.insert(to.end(), a.begin(), a.end());
  return Reroute(from, to, filter);
}

}  // namespace graft
