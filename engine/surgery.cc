#include "engine/surgery.h"

#include <deque>
#include <optional>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"
#include "google/protobuf/util/message_differencer.h"

namespace graft::surgery {

namespace {

template <typename T>
void AppendUnique(std::vector<T>* out, absl::flat_hash_set<T>* seen, T value) {
  if (seen->insert(value).second) out->push_back(value);
}

// Number of outputs of a node: from its op signature, else the ports read.
int NumOutputs(const Graph& graph, const Node& n) {
  if (auto types = OpRegistry::For(graph).OutputTypes(n)) {
    return static_cast<int>(types->size());
  }
  return n.num_used_ports();
}

bool Stopped(const WalkOptions& o, Endpoint t) {
  return std::find(o.stop_at.begin(), o.stop_at.end(), t) != o.stop_at.end();
}

bool Allowed(const WalkOptions& o, NodeId id) {
  return o.within == nullptr || o.within->contains(id);
}

// Breadth-first walk; `next` lists a node's neighbours as (node, tensor
// crossed or {kNoNode} for a control edge).
template <typename Next>
std::vector<NodeId> Walk(const Graph& graph, absl::Span<const NodeId> seeds,
                         const WalkOptions& options, Next next) {
  std::vector<NodeId> out;
  absl::flat_hash_set<NodeId> seen;
  std::deque<NodeId> queue;
  for (NodeId s : seeds) {
    if (!Allowed(options, s) || !seen.insert(s).second) continue;
    queue.push_back(s);
    if (options.inclusive) out.push_back(s);
  }
  while (!queue.empty()) {
    NodeId id = queue.front();
    queue.pop_front();
    next(graph.node(id), [&](NodeId to, Endpoint crossed) {
      if (crossed.node != kNoNode && Stopped(options, crossed)) return;
      if (!Allowed(options, to) || !seen.insert(to).second) return;
      out.push_back(to);
      queue.push_back(to);
    });
  }
  return out;
}

// Calls visit(reader, tensor crossed) for each node reading n's outputs,
// and with `control` for each waiting for n (crossed: {kNoNode}).
template <typename Visit>
void ForEachReader(const Node& n, bool control, Visit visit) {
  for (int p = 0; p < n.num_used_ports(); ++p) {
    for (InputSlot s : n.consumers(p)) visit(s.node, Endpoint{n.id(), p});
  }
  if (control) {
    for (NodeId c : n.control_consumers()) visit(c, Endpoint{kNoNode, 0});
  }
}

// Calls visit(producer, tensor crossed) for each input of n, and with
// `control` for each node n waits for (crossed: {kNoNode}).
template <typename Visit>
void ForEachInput(const Node& n, bool control, Visit visit) {
  for (Endpoint e : n.inputs()) {
    if (e.node != kNoNode) visit(e.node, e);
  }
  if (control) {
    for (NodeId c : n.control_inputs()) visit(c, Endpoint{kNoNode, 0});
  }
}

}  // namespace

SubgraphView::SubgraphView(const Graph& graph, std::vector<NodeId> nodes,
                           std::vector<Endpoint> passthroughs)
    : nodes_(std::move(nodes)), passthroughs_(std::move(passthroughs)) {
  set_.insert(nodes_.begin(), nodes_.end());
  absl::flat_hash_set<Endpoint> seen_in, seen_out;
  for (NodeId id : nodes_) {
    for (Endpoint e : graph.node(id).inputs()) {
      if (e.node != kNoNode && !set_.contains(e.node))
        AppendUnique(&inputs_, &seen_in, e);
    }
  }
  for (NodeId id : nodes_) {
    const Node& n = graph.node(id);
    int ports = std::max(NumOutputs(graph, n), n.num_used_ports());
    for (int p = 0; p < ports; ++p) {
      absl::Span<const InputSlot> readers = n.consumers(p);
      bool only_inside =
          !readers.empty() &&
          std::all_of(readers.begin(), readers.end(),
                      [&](InputSlot s) { return set_.contains(s.node); });
      if (!only_inside) AppendUnique(&outputs_, &seen_out, Endpoint{id, p});
    }
  }
  for (Endpoint t : passthroughs_) {
    AppendUnique(&inputs_, &seen_in, t);
    AppendUnique(&outputs_, &seen_out, t);
  }
}

std::vector<NodeId> ForwardWalk(const Graph& graph,
                                absl::Span<const NodeId> seeds,
                                const WalkOptions& options) {
  return Walk(graph, seeds, options, [&](const Node& n, auto visit) {
    ForEachReader(n, options.control, visit);
  });
}

std::vector<NodeId> BackwardWalk(const Graph& graph,
                                 absl::Span<const NodeId> seeds,
                                 const WalkOptions& options) {
  return Walk(graph, seeds, options, [&](const Node& n, auto visit) {
    ForEachInput(n, options.control, visit);
  });
}

bool Reaches(const Graph& graph, absl::Span<const NodeId> from,
             absl::Span<const NodeId> to, bool control) {
  // Forward from `from` and backward from `to`, one node of each in turn:
  // a path shows where the walks meet, and none as soon as either runs out,
  // after at most twice the smaller of from's descendants and to's
  // ancestors (whole walks would visit both).
  absl::flat_hash_set<NodeId> down(from.begin(), from.end());
  absl::flat_hash_set<NodeId> up(to.begin(), to.end());
  for (NodeId id : from) {
    if (up.contains(id)) return true;
  }
  std::deque<NodeId> down_queue(from.begin(), from.end());
  std::deque<NodeId> up_queue(to.begin(), to.end());
  // Takes the next node of one walk and adds its neighbours; true when one
  // is in the other walk.
  auto step = [&](std::deque<NodeId>& queue, absl::flat_hash_set<NodeId>& mine,
                  const absl::flat_hash_set<NodeId>& theirs, auto for_each) {
    const Node& n = graph.node(queue.front());
    queue.pop_front();
    bool met = false;
    for_each(n, control, [&](NodeId next, Endpoint) {
      if (met || !mine.insert(next).second) return;
      met = theirs.contains(next);
      queue.push_back(next);
    });
    return met;
  };
  while (!down_queue.empty() && !up_queue.empty()) {
    if (step(down_queue, down, up, [](const Node& n, bool c, auto visit) {
          ForEachReader(n, c, visit);
        }))
      return true;
    if (step(up_queue, up, down, [](const Node& n, bool c, auto visit) {
          ForEachInput(n, c, visit);
        }))
      return true;
  }
  return false;
}

std::vector<NodeId> WalksIntersection(const Graph& graph,
                                      absl::Span<const NodeId> forward_seeds,
                                      absl::Span<const NodeId> backward_seeds,
                                      const WalkOptions& forward,
                                      const WalkOptions& backward) {
  std::vector<NodeId> back = BackwardWalk(graph, backward_seeds, backward);
  absl::flat_hash_set<NodeId> in_back(back.begin(), back.end());
  std::vector<NodeId> out;
  for (NodeId id : ForwardWalk(graph, forward_seeds, forward)) {
    if (in_back.contains(id)) out.push_back(id);
  }
  return out;
}

std::vector<NodeId> FilterByOp(const Graph& graph,
                               absl::Span<const NodeId> nodes,
                               absl::string_view ops, bool matching) {
  const std::vector<std::string> globs = SplitGlobs(ops);
  std::vector<NodeId> out;
  for (NodeId id : nodes) {
    if (GlobsMatch(globs, graph.node(id).op()) == matching) out.push_back(id);
  }
  return out;
}

std::vector<NodeId> FilterByName(const Graph& graph,
                                 absl::Span<const NodeId> nodes,
                                 const NameRegex& regex, bool matching) {
  std::vector<NodeId> out;
  for (NodeId id : nodes) {
    if (regex.FullMatch(graph.node(id).name()) == matching) out.push_back(id);
  }
  return out;
}

absl::StatusOr<NodeId> GetByName(const Graph& graph, absl::string_view name) {
  NodeId id = graph.FindId(name);
  if (id == kNoNode)
    return absl::NotFoundError(absl::StrCat("no node `", name, "`"));
  return id;
}

absl::Status RemoveByName(Rewriter& rewriter, absl::string_view name) {
  absl::StatusOr<NodeId> id = GetByName(rewriter.graph(), name);
  if (!id.ok()) return id.status();
  return rewriter.RemoveNode(*id);
}

namespace {

// Consumers of `from` outside both views read `to`, for each pair.
absl::Status CheckSameCount(const SubgraphView& a, const SubgraphView& b) {
  if (a.outputs().size() == b.outputs().size()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the views have ", a.outputs().size(), " and ",
                   b.outputs().size(), " outputs"));
}

std::vector<NodeId> Union(const SubgraphView& a, const SubgraphView& b) {
  std::vector<NodeId> all = a.nodes();
  all.insert(all.end(), b.nodes().begin(), b.nodes().end());
  return all;
}

}  // namespace

absl::StatusOr<int> RerouteOutputs(Rewriter& rewriter, const SubgraphView& from,
                                   const SubgraphView& to) {
  absl::Status s = CheckSameCount(from, to);
  if (!s.ok()) return s;
  std::vector<NodeId> inside = Union(from, to);
  return rewriter.Reroute(to.outputs(), from.outputs(),
                          ConsumerFilter::Except(inside));
}

absl::StatusOr<int> SwapOutputs(Rewriter& rewriter, const SubgraphView& a,
                                const SubgraphView& b) {
  absl::Status s = CheckSameCount(a, b);
  if (!s.ok()) return s;
  return rewriter.Swap(a.outputs(), b.outputs(),
                       ConsumerFilter::Except(Union(a, b)));
}

absl::StatusOr<tf::GraphDef> AncestorsOf(
    const Graph& graph, const std::vector<std::string>& roots) {
  std::vector<NodeId> seeds;
  for (const std::string& r : roots) {
    absl::StatusOr<NodeId> id = GetByName(graph, r);
    if (!id.ok()) return id.status();
    seeds.push_back(*id);
  }
  WalkOptions options;
  options.control = true;
  std::vector<NodeId> nodes = BackwardWalk(graph, seeds, options);
  std::sort(nodes.begin(), nodes.end());  // the graph's own order
  tf::GraphDef out;
  for (NodeId id : nodes) *out.add_node() = graph.ExportNodeDef(id);
  return out;
}

namespace {

std::vector<const Node*> Placeholders(const Graph& g) {
  std::vector<const Node*> out;
  for (NodeId id : g.NodesWithOp("Placeholder")) out.push_back(&g.node(id));
  return out;
}

absl::Status CheckGraft(const Graph& target, const Graph& other,
                        const char* what, const char* suffix,
                        bool inputs_only) {
  std::vector<const Node*> placeholders = Placeholders(other);
  if (placeholders.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", what, " graph has no Placeholder"));
  }
  for (const Node* p : placeholders) {
    const Node* t = target.FindNode(p->name());
    if (t == nullptr || (inputs_only && t->op() != "Placeholder")) {
      std::vector<std::string> names;
      if (inputs_only) {
        for (const Node* ph : Placeholders(target)) names.push_back(ph->name());
      }
      return absl::NotFoundError(absl::StrCat(
          "the ", what, " graph's placeholder `", p->name(), "` names no ",
          inputs_only ? "input" : "node", " of the target graph",
          inputs_only
              ? absl::StrCat(" (its inputs: ", absl::StrJoin(names, ", "), ")")
              : ""));
    }
    std::string result = absl::StrCat(p->name(), suffix);
    if (!other.Contains(result)) {
      return absl::NotFoundError(
          absl::StrCat("the ", what, " graph has no node `", result,
                       "` for its placeholder `", p->name(), "`"));
    }
    if (!inputs_only && NumOutputs(target, *t) > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("`", t->name(), "` (", t->op(), ") has ", NumOutputs(target, *t),
                       " outputs; postprocessing takes an op with one output"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPreprocessing(const Graph& target, const Graph& pre) {
  return CheckGraft(target, pre, "preprocessing", "_preprocessed", true);
}

absl::Status CheckPostprocessing(const Graph& target, const Graph& post) {
  return CheckGraft(target, post, "postprocessing", "_postprocessed", false);
}

absl::Status AddPreprocessing(Rewriter& r, const Graph& pre) {
  absl::Status s = CheckPreprocessing(r.graph(), pre);
  if (!s.ok()) return s;
  for (const Node* p : Placeholders(pre)) {
    const std::string name = p->name();
    absl::StatusOr<tf::GraphDef> part =
        AncestorsOf(pre, {name + "_preprocessed"});
    if (!part.ok()) return part.status();
    absl::StatusOr<SpliceResult> spliced = r.Splice(*part, "");
    if (!spliced.ok()) return spliced.status();
    NodeId old_input = r.graph().FindId(name);
    auto placeholder = spliced->mapping.find(name);
    NodeId result = spliced->mapping.at(name + "_preprocessed");
    absl::StatusOr<int> n = r.Reroute({old_input, 0}, {result, 0});
    if (!n.ok()) return n.status();
    if (placeholder == spliced->mapping.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("`", name, "_preprocessed` does not read `", name, "`"));
    }
    // Orderings carry over to the node that takes the input's place: what
    // waited on the input waits on it, and it waits on what the input did.
    std::vector<NodeId> control(
        r.graph().node(old_input).control_consumers().begin(),
        r.graph().node(old_input).control_consumers().end());
    for (NodeId c : control) {
      if (!(s = r.RemoveControlEdge(old_input, c)).ok()) return s;
      if (!(s = r.AddControlEdge(placeholder->second, c)).ok()) return s;
    }
    std::vector<NodeId> waits_on(
        r.graph().node(old_input).control_inputs().begin(),
        r.graph().node(old_input).control_inputs().end());
    for (NodeId c : waits_on) {
      if (c == kNoNode || c == placeholder->second) continue;
      if (!(s = r.AddControlEdge(c, placeholder->second)).ok()) return s;
    }
    if (!(s = r.RemoveNode(old_input)).ok()) return s;
    if (!(s = r.Rename(placeholder->second, name)).ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status AddPostprocessing(Rewriter& r, const Graph& post) {
  absl::Status s = CheckPostprocessing(r.graph(), post);
  if (!s.ok()) return s;
  for (const Node* p : Placeholders(post)) {
    const std::string name = p->name();
    NodeId output = r.graph().FindId(name);
    absl::StatusOr<tf::GraphDef> part =
        AncestorsOf(post, {name + "_postprocessed"});
    if (!part.ok()) return part.status();
    absl::StatusOr<SpliceResult> spliced =
        r.Splice(*part, "", {{name, Endpoint{output, 0}}});
    if (!spliced.ok()) return spliced.status();
    NodeId result = spliced->mapping.at(name + "_postprocessed");
    if (!(s = r.Rename(output, r.UniqueName(name + "_raw"))).ok()) return s;
    if (!(s = r.Rename(result, name)).ok()) return s;
  }
  return absl::OkStatus();
}

namespace {

// Two Const values of one dtype and shape (checked first, before any bytes
// are read): the same bytes, encoded the same way (two encodings of one
// value compare unequal, which only shares less).
bool SameValue(const tf::TensorProto& a, absl::string_view a_content,
               const tf::TensorProto& b, absl::string_view b_content) {
  if (a_content != b_content) return false;
  tf::TensorProto a_rest = a, b_rest = b;
  a_rest.clear_tensor_content();
  b_rest.clear_tensor_content();
  return google::protobuf::util::MessageDifferencer::Equals(a_rest, b_rest);
}

}  // namespace

NodeId EqualNode(const Graph& graph, const NodeSpec& spec,
                 absl::Span<const NodeId> excluded) {
  const bool is_const = spec.op == "Const";
  if (!is_const) {
    if (!OpRegistry::SameInputsSameOutputs(
            OpRegistry::For(graph).Find(spec.op)))
      return kNoNode;
  }
  if (!spec.control_inputs.empty() || (spec.inputs.empty() && !is_const))
    return kNoNode;
  auto value_of =
      [](const google::protobuf::Map<std::string, tf::AttrValue>& attrs)
      -> const tf::TensorProto* {
    auto it = attrs.find("value");
    return it == attrs.end() ? nullptr : &it->second.tensor();
  };
  const tf::TensorProto* spec_value = is_const ? value_of(spec.attrs) : nullptr;
  // the spec's bytes (held apart, or in its tensor), read once, when a
  // candidate of its dtype and shape is found
  std::optional<absl::string_view> spec_content;
  auto equal = [&](const Node& n) {
    if (!n.alive() || n.op() != spec.op || n.device() != spec.device ||
        !n.control_inputs().empty() ||
        n.num_inputs() != static_cast<int>(spec.inputs.size()) ||
        n.attrs().size() != spec.attrs.size() ||
        absl::c_linear_search(excluded, n.id()))
      return false;
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (n.input(i) != spec.inputs[i]) return false;
    }
    for (const auto& [name, value] : spec.attrs) {
      auto it = n.attrs().find(name);
      if (it == n.attrs().end()) return false;
      if (is_const && name == "value") continue;
      if (!google::protobuf::util::MessageDifferencer::Equals(it->second,
                                                              value))
        return false;
    }
    if (!is_const) return true;
    const tf::TensorProto* value = value_of(n.attrs());
    if (value == nullptr || spec_value == nullptr) return value == spec_value;
    // cheap first: dtype and shape, before any bytes are read
    if (value->dtype() != spec_value->dtype() ||
        !google::protobuf::util::MessageDifferencer::Equals(
            value->tensor_shape(), spec_value->tensor_shape()))
      return false;
    if (!spec_content) {
      spec_content = spec.value_content != nullptr
                         ? spec.value_content->bytes()
                         : absl::string_view(spec_value->tensor_content());
    }
    return SameValue(*value, n.value_content(), *spec_value, *spec_content);
  };
  NodeId found = kNoNode;
  auto consider = [&](NodeId id) {
    if ((found == kNoNode || id < found) && equal(graph.node(id))) found = id;
  };
  if (!spec.inputs.empty()) {
    // an equal node reads the same first input
    const Endpoint first = spec.inputs[0];
    if (!first.valid()) return kNoNode;
    for (InputSlot s : graph.node(first.node).consumers(first.port))
      consider(s.node);
  } else {
    // a constant a rewrite made (never one of the model's: an ONNX
    // initializer may also be an input a caller feeds)
    for (NodeId id : graph.NodesWithOp("Const")) {
      if (!graph.Provenance(id).empty()) consider(id);
    }
  }
  return found;
}

}  // namespace graft::surgery
