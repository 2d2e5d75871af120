#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "builtins/internal.h"
#include "dialects/graph_io.h"
#include "engine/dialect.h"
#include "engine/graph_algorithms.h"
#include "engine/name_regex.h"
#include "engine/op_registry.h"
#include "engine/surgery.h"

namespace graft::builtins {
namespace {

// Walk options from hook arguments a[first..]: inclusive, within, stop_at,
// control; absent ones keep their defaults; an empty `within` is all nodes.
surgery::WalkOptions WalkOptionsOf(Args a, size_t first,
                                   absl::flat_hash_set<NodeId>* within) {
  surgery::WalkOptions o;
  if (a.size() > first) o.inclusive = a[first].b;
  if (a.size() > first + 1 && !a[first + 1].list.empty()) {
    for (NodeId id : NodesOf(a[first + 1])) within->insert(id);
    o.within = within;
  }
  if (a.size() > first + 2) {
    for (const Value& t : a[first + 2].list) o.stop_at.push_back(t.tensor);
  }
  if (a.size() > first + 3) o.control = a[first + 3].b;
  return o;
}

// The nodes named in a comma-separated list ("" is none), or an error that
// names the first missing one.
absl::StatusOr<std::vector<NodeId>> NamedNodes(const Graph& g,
                                               const std::string& names) {
  std::vector<NodeId> out;
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipEmpty())) {
    absl::StatusOr<NodeId> id =
        surgery::GetByName(g, std::string(absl::StripAsciiWhitespace(name)));
    if (!id.ok()) return id.status();
    out.push_back(*id);
  }
  return out;
}

// For each node that computes what an earlier node computes (same op,
// device, attrs, value, and inputs that are the same or themselves such
// duplicates; control inputs as a set), [the node, that earlier node], in
// topological order. Graph inputs, nodes nothing reads (outputs), ops that
// may compute otherwise (OpRegistry::SameInputsSameOutputs) and nodes whose
// attrs leave something out (Dialect::AttrsWhole) are never duplicates.
// A constant's bytes are hashed into its key and compared in full on a hit,
// so that the keys never copy a model's weights.
absl::StatusOr<std::vector<std::pair<NodeId, NodeId>>> DuplicateNodes(
    const Graph& g) {
  absl::StatusOr<std::vector<NodeId>> order = TopologicalOrder(g);
  if (!order.ok()) return order.status();
  const OpRegistry& ops = OpRegistry::For(g);
  const Dialect& dialect = DialectOf(g);
  std::vector<NodeId> rep(g.id_limit(), kNoNode);  // a node's representative
  // key -> the representatives with that key (more than one only where
  // values' bytes differ under one hash)
  std::map<std::string, std::vector<NodeId>> first;
  std::vector<std::pair<NodeId, NodeId>> out;
  for (NodeId id : *order) {
    const Node& n = g.node(id);
    rep[id] = id;
    if (n.op() == "Placeholder" ||
        !OpRegistry::SameInputsSameOutputs(ops.Find(n.op())) ||
        !dialect.AttrsWhole(g, n))
      continue;
    std::string key = absl::StrCat(n.op(), "|", n.device(), "|");
    for (Endpoint e : n.inputs()) {
      if (e.valid()) absl::StrAppend(&key, rep[e.node], ":", e.port, ",");
    }
    std::set<NodeId> controls;
    for (NodeId c : n.control_inputs()) {
      if (c != kNoNode) controls.insert(rep[c]);
    }
    absl::StrAppend(&key, "|^", absl::StrJoin(controls, ","), "|");
    std::map<std::string, const tf::AttrValue*> attrs;
    for (const auto& [k, v] : n.attrs()) attrs[k] = &v;
    for (const auto& [k, v] : attrs)
      absl::StrAppend(&key, k, "=", SerializeDeterministic(*v), ";");
    absl::string_view content = n.value_content();
    absl::StrAppend(&key, content.size(), "#",
                    absl::Hash<absl::string_view>{}(content));
    std::vector<NodeId>& same_key = first[key];
    auto it = std::find_if(same_key.begin(), same_key.end(), [&](NodeId m) {
      return g.node(m).value_content() == content;
    });
    bool read = n.num_used_ports() > 0 || !n.control_consumers().empty();
    if (it != same_key.end() && read) {
      rep[id] = *it;
      out.push_back({id, *it});
    } else if (it == same_key.end()) {
      same_key.push_back(id);
    }
  }
  return out;
}

}  // namespace

// The graph surgery hooks: walks, filters, views, nodes by name, and the
// `graph` params of pre-/post-processing grafts.
void RegisterSurgeryHooks(HookRegistry& r) {
  // forward_walk / backward_walk(seeds [, inclusive [, within [, stop_at [,
  // control]]]])
  for (const char* name : {"forward_walk", "backward_walk"}) {
    bool forward = std::string(name) == "forward_walk";
    AddBuiltinHook(
        r, name, {VT::kAny, VT::kBool, VT::kList, VT::kList, VT::kBool},
        VT::kList,
        forward ? "nodes reachable from seeds (a node or list): (seeds, "
                  "inclusive = true, "
                  "within = [] (all), stop_at = [] tensors, control = false)"
                : "nodes the seeds depend on: (seeds, inclusive = true, within "
                  "= [] (all), "
                  "stop_at = [] tensors, control = false)",
        [forward](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          absl::flat_hash_set<NodeId> within;
          surgery::WalkOptions options = WalkOptionsOf(a, 1, &within);
          std::vector<NodeId> seeds = NodesOf(a[0]);
          return NodeList(
              forward ? surgery::ForwardWalk(ctx.graph, seeds, options)
                      : surgery::BackwardWalk(ctx.graph, seeds, options));
        },
        false, 4);
  }
  AddBuiltinHook(
      r, "walks_intersection",
      {VT::kAny, VT::kAny, VT::kBool, VT::kBool, VT::kList, VT::kBool},
      VT::kList,
      "nodes forward of the first seeds and backward of the second: "
      "(forward_seeds, "
      "backward_seeds, forward_inclusive = true, backward_inclusive = true, "
      "within = [] (all), "
      "control = false)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::flat_hash_set<NodeId> within;
        surgery::WalkOptions forward, backward;
        forward.inclusive = a.size() > 2 ? a[2].b : true;
        backward.inclusive = a.size() > 3 ? a[3].b : true;
        if (a.size() > 4 && !a[4].list.empty()) {
          for (NodeId id : NodesOf(a[4])) within.insert(id);
          forward.within = backward.within = &within;
        }
        forward.control = backward.control = a.size() > 5 && a[5].b;
        return NodeList(surgery::WalksIntersection(
            ctx.graph, NodesOf(a[0]), NodesOf(a[1]), forward, backward));
      },
      false, 4);
  AddBuiltinHook(
      r, "reaches", {VT::kAny, VT::kAny, VT::kBool}, VT::kBool,
      "a path leads from a node of `a` to a node of `b` (a node or list; a "
      "node reaches itself), along data edges and control edges with "
      "`control` (default false); stops where the answer shows",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(surgery::Reaches(ctx.graph, NodesOf(a[0]),
                                            NodesOf(a[1]),
                                            a.size() > 2 && a[2].b));
      },
      false, 1);
  Add(r, "filter_ops", {VT::kList, VT::kOpList}, VT::kList, false,
      "the nodes whose op matches `A|B*`",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return NodeList(surgery::FilterByOp(ctx.graph, NodesOf(a[0]), a[1].s));
      });
  Add(r, "except_ops", {VT::kList, VT::kOpList}, VT::kList, false,
      "the nodes whose op does not match `A|B*` (`except_ops(readers(t), "
      "\"_Retval\")`: the ops reading t, not the graph's outputs)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return NodeList(surgery::FilterByOp(ctx.graph, NodesOf(a[0]), a[1].s,
                                            /*matching=*/false));
      });
  for (bool matching : {true, false}) {
    Add(r, matching ? "filter_names" : "except_names", {VT::kList, VT::kRegex},
        VT::kList, false,
        matching ? "the nodes whose whole name matches the regex"
                 : "the nodes whose whole name does not match the regex "
                   "(`except_names(list, \"\")`: those that have a name)",
        [matching](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          absl::StatusOr<std::shared_ptr<const NameRegex>> re = RegexOf(a[1]);
          if (!re.ok()) return re.status();
          return NodeList(
              surgery::FilterByName(ctx.graph, NodesOf(a[0]), **re, matching));
        });
  }
  Add(r, "subgraph_inputs", {VT::kList}, VT::kList, false,
      "the tensors the nodes read from outside them",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return TensorList(
            surgery::SubgraphView(ctx.graph, NodesOf(a[0])).inputs());
      });
  Add(r, "subgraph_outputs", {VT::kList}, VT::kList, false,
      "the tensors of the nodes read outside them, or by nothing",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return TensorList(
            surgery::SubgraphView(ctx.graph, NodesOf(a[0])).outputs());
      });
  Add(r, "contains", {VT::kString}, VT::kBool, false,
      "the graph has a node of that name",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        return Value::Bool(ctx.graph.Contains(a[0].s));
      });
  Add(r, "node_named", {VT::kString}, VT::kNode, false,
      "the node of that name (an error if none)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<NodeId> id = surgery::GetByName(ctx.graph, a[0].s);
        if (!id.ok()) return id.status();
        return Value::NodeRef(*id);
      });
  Add(r, "graph_op", {VT::kGraph, VT::kString}, VT::kString, false,
      "the op of the named node of a `graph` param, or \"\" (no such node, no "
      "graph)",
      [](const HookContext&, Args a) -> absl::StatusOr<Value> {
        const Node* n = a[0].graph ? a[0].graph->FindNode(a[1].s) : nullptr;
        return Value::String(n ? n->op() : "");
      });
  for (const char* name : {"check_preprocessing", "check_postprocessing"}) {
    bool pre = std::string(name) == "check_preprocessing";
    Add(r, name, {VT::kGraph}, VT::kBool, false,
        "the `graph` param can be grafted onto this graph (an error says why "
        "not); true "
        "when no graph is given",
        [pre](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          if (a[0].graph == nullptr) return Value::Bool(true);
          absl::Status s =
              pre ? surgery::CheckPreprocessing(ctx.graph, *a[0].graph)
                  : surgery::CheckPostprocessing(ctx.graph, *a[0].graph);
          if (!s.ok())
            return absl::Status(s.code(),
                                absl::StrCat("`", a[0].s, "`: ", s.message()));
          return Value::Bool(true);
        });
  }
  Add(r, "nodes_named", {VT::kString}, VT::kList, false,
      "the nodes of a comma-separated list of names (\"\" is none; an error "
      "names a missing one)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<std::vector<NodeId>> ids = NamedNodes(ctx.graph, a[0].s);
        if (!ids.ok()) return ids.status();
        return NodeList(*ids);
      });
  Add(r, "not_needed_by", {VT::kString}, VT::kList, false,
      "the nodes that none of the named nodes (comma-separated) depends on, "
      "through data or control edges",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<std::vector<NodeId>> keep =
            NamedNodes(ctx.graph, a[0].s);
        if (!keep.ok()) return keep.status();
        std::vector<bool> needed(ctx.graph.id_limit(), false);
        std::vector<NodeId> todo = *keep;
        for (NodeId id : todo) needed[id] = true;
        while (!todo.empty()) {
          const Node& n = ctx.graph.node(todo.back());
          todo.pop_back();
          auto need = [&](NodeId id) {
            if (id != kNoNode && !needed[id]) {
              needed[id] = true;
              todo.push_back(id);
            }
          };
          for (Endpoint e : n.inputs()) {
            if (e.valid()) need(e.node);
          }
          for (NodeId c : n.control_inputs()) need(c);
        }
        std::vector<NodeId> out;
        ctx.graph.ForEachNode([&](const Node& n) {
          if (!needed[n.id()]) out.push_back(n.id());
        });
        return NodeList(out);
      });
  Add(r, "duplicate_nodes", {}, VT::kList, false,
      "[n, m] for each node n that computes what an earlier node m does "
      "(same op, device, attrs and inputs, or inputs that are themselves "
      "duplicates); never stateful ops or outputs",
      [](const HookContext& ctx, Args) -> absl::StatusOr<Value> {
        absl::StatusOr<std::vector<std::pair<NodeId, NodeId>>> d =
            DuplicateNodes(ctx.graph);
        if (!d.ok()) return d.status();
        std::vector<Value> pairs;
        for (const auto& [dup, original] : *d)
          pairs.push_back(NodeList({dup, original}));
        return Value::List(std::move(pairs));
      });
  AddBuiltinHook(
      r, "node_outputs", {VT::kNode, VT::kNode}, VT::kList,
      "the tensors of a node that anything reads: n:0, n:1, ...; with a "
      "second node, as many as that one's",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& n = ctx.graph.node(a[0].tensor.node);
        int ports =
            ctx.graph.node(a[a.size() - 1].tensor.node).num_used_ports();
        std::vector<Value> out;
        for (int p = 0; p < ports; ++p)
          out.push_back(Value::Tensor({n.id(), p}));
        return Value::List(std::move(out));
      },
      false, /*optional=*/1);
  Add(r, "short_names", {VT::kString}, VT::kList, false,
      "[n, name] for every node not named in the comma-separated list and "
      "not already named by a number, in topological order: numbers no node "
      "has as its name",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        absl::StatusOr<std::vector<NodeId>> order = TopologicalOrder(ctx.graph);
        if (!order.ok()) return order.status();
        std::set<std::string> keep;
        for (absl::string_view k :
             absl::StrSplit(a[0].s, ',', absl::SkipEmpty()))
          keep.insert(std::string(absl::StripAsciiWhitespace(k)));
        int64_t counter = 0;
        auto next_name = [&] {
          while (true) {
            std::string name = absl::StrCat(counter++);
            if (!ctx.graph.Contains(name) && !keep.count(name)) return name;
          }
        };
        std::vector<Value> out;
        for (NodeId id : *order) {
          const std::string& name = ctx.graph.node(id).name();
          if (keep.count(name) ||
              std::all_of(name.begin(), name.end(), absl::ascii_isdigit))
            continue;  // kept, or named already
          out.push_back(
              Value::List({Value::NodeRef(id), Value::String(next_name())}));
        }
        return Value::List(std::move(out));
      });
  Add(r, "named_in", {VT::kNode, VT::kString}, VT::kBool, false,
      "the node's name is one of a comma-separated list",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const std::string& name = ctx.graph.node(a[0].tensor.node).name();
        for (absl::string_view item :
             absl::StrSplit(a[1].s, ',', absl::SkipEmpty())) {
          if (absl::StripAsciiWhitespace(item) == name)
            return Value::Bool(true);
        }
        return Value::Bool(false);
      });
  Add(r, "inputs_of", {VT::kNode}, VT::kList, false,
      "the tensors a node reads, in input order (a new node given the list "
      "reads the same)",
      [](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
        const Node& n = ctx.graph.node(a[0].tensor.node);
        std::vector<Value> out;
        for (int i = 0; i < n.num_inputs(); ++i) {
          if (!n.input(i).valid()) {
            return absl::FailedPreconditionError(
                absl::StrCat("`", n.name(), "` input ", i, " names `",
                             ctx.graph.UnresolvedInputName(n.id(), i),
                             "`, not in the graph"));
          }
          out.push_back(Value::Tensor(n.input(i)));
        }
        return Value::List(std::move(out));
      });
  for (const char* name : {"control_inputs", "control_readers"}) {
    bool inputs = std::string(name) == "control_inputs";
    Add(r, name, {VT::kNode}, VT::kList, false,
        inputs ? "the nodes a node waits for (its control inputs)"
               : "the nodes that wait for a node (control edges from it)",
        [inputs](const HookContext& ctx, Args a) -> absl::StatusOr<Value> {
          const Node& n = ctx.graph.node(a[0].tensor.node);
          std::vector<NodeId> out;
          for (NodeId c : inputs ? n.control_inputs() : n.control_consumers()) {
            if (c != kNoNode) out.push_back(c);
          }
          return NodeList(out);
        });
  }
}

}  // namespace graft::builtins
