#include "dialects/tf/freeze.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dialects/tf/function_body.h"
#include "engine/rewriter.h"
#include "dialects/tf/saved_model.h"
#include "engine/wire_format.h"

namespace graft {
namespace {

using Library = absl::flat_hash_map<std::string, const tf::FunctionDef*>;

std::string Where(const SavedModelOrigin& origin) {
  return absl::StrCat(origin.dir.empty() ? "" : origin.dir + "/",
                      "saved_model.pb");
}

absl::Status FreezeError(const SavedModelOrigin& origin,
                         const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(origin), ": error: freeze: ", what));
}

Library LibraryOf(const Graph& graph) {
  Library library;
  for (const tf::FunctionDef& f : graph.header().library().function())
    library[f.signature().name()] = &f;
  return library;
}

// The function a call node runs: PartitionedCall's and
// StatefulPartitionedCall's `f`, or a library function used as an op.
const tf::FunctionDef* CalledFunction(const Node& node, const Library& library) {
  if (node.op() == "PartitionedCall" || node.op() == "StatefulPartitionedCall") {
    const tf::AttrValue* f = node.attr("f");
    if (f == nullptr || !f->has_func()) return nullptr;
    auto it = library.find(f->func().name());
    return it == library.end() ? nullptr : it->second;
  }
  auto it = library.find(node.op());
  return it == library.end() ? nullptr : it->second;
}

// Follows Identity nodes back to what they forward.
Endpoint ThroughIdentity(const Graph& graph, Endpoint e) {
  for (int hops = 0; e.valid() && hops < graph.id_limit(); ++hops) {
    const Node& n = graph.node(e.node);
    if (n.op() != "Identity" || n.num_inputs() < 1) break;
    e = n.input(0);
  }
  return e;
}

// The variables `graph`'s restore assignments write, by the node that
// produces each assigned handle (`handle_source` maps a handle's node to
// the variable's node name, or "" when it is none), and their keys.
absl::Status ScanRestoreAssignments(
    const Graph& graph,
    const std::function<std::string(Endpoint)>& handle_source,
    std::map<std::string, std::string>* keys) {
  absl::Status status;
  graph.ForEachNode([&](const Node& n) {
    if (n.op() != "AssignVariableOp" || n.num_inputs() < 2) return;
    Endpoint value = ThroughIdentity(graph, n.input(1));
    if (!value.valid()) return;
    const Node& restore = graph.node(value.node);
    if (restore.op() != "RestoreV2" || restore.num_inputs() < 2) return;
    Endpoint names_at = ThroughIdentity(graph, restore.input(1));
    if (!names_at.valid()) return;
    const Node& names = graph.node(names_at.node);
    const tf::AttrValue* tensor = names.attr("value");
    if (names.op() != "Const" || tensor == nullptr ||
        value.port >= tensor->tensor().string_val_size()) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "the restore op's `", restore.name(),
          "` names its tensors other than by a constant list"));
      return;
    }
    Endpoint handle = ThroughIdentity(graph, n.input(0));
    std::string variable = handle.valid() ? handle_source(handle) : "";
    if (!variable.empty())
      (*keys)[variable] = tensor->tensor().string_val(value.port);
  });
  return status;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> RestoredVariableKeys(
    const Graph& graph) {
  std::map<std::string, std::string> keys;
  const SavedModelOrigin* origin = SavedModelOf(graph);
  if (origin == nullptr) return keys;
  const tf::SaverDef& saver =
      origin->proto.meta_graphs(origin->meta_graph).saver_def();
  std::string restore_name =
      saver.restore_op_name().substr(0, saver.restore_op_name().find(':'));
  if (restore_name.empty()) return keys;
  const Node* restore = graph.FindNode(restore_name);
  if (restore == nullptr)
    return FreezeError(*origin, absl::StrCat("the saver's restore op `",
                                             restore_name, "` is not in the graph"));
  auto variable_of = [&](Endpoint e) {
    e = ThroughIdentity(graph, e);
    if (!e.valid()) return std::string();
    const Node& v = graph.node(e.node);
    return v.op() == "VarHandleOp" ? v.name() : std::string();
  };
  Library library = LibraryOf(graph);
  const tf::FunctionDef* function = CalledFunction(*restore, library);
  absl::Status scanned;
  if (function == nullptr) {  // restore ops in the top-level graph
    scanned = ScanRestoreAssignments(graph, variable_of, &keys);
  } else {  // TensorFlow 2: `__inference__traced_restore` with handle args
    absl::StatusOr<Graph> body =
        FunctionBodyGraph(*function, graph.header().library());
    if (!body.ok()) return FreezeError(*origin, std::string(body.status().message()));
    scanned = ScanRestoreAssignments(
        *body,
        [&](Endpoint e) {
          const Node& arg = body->node(e.node);
          const tf::AttrValue* index = arg.attr("index");
          if (arg.op() != "_Arg" || index == nullptr || index->i() < 0 ||
              index->i() >= restore->num_inputs())
            return std::string();
          return variable_of(restore->input(static_cast<int>(index->i())));
        },
        &keys);
  }
  if (!scanned.ok()) return FreezeError(*origin, std::string(scanned.message()));
  return keys;
}

absl::StatusOr<CheckpointKeys> CheckpointKeys::Of(const Graph& graph) {
  absl::StatusOr<std::map<std::string, std::string>> restored =
      RestoredVariableKeys(graph);
  if (!restored.ok()) return restored.status();
  CheckpointKeys keys;
  keys.by_node_ = *std::move(restored);
  for (const auto& [variable, key] : keys.by_node_) {
    const Node* v = graph.FindNode(variable);
    const tf::AttrValue* shared = v != nullptr ? v->attr("shared_name") : nullptr;
    if (shared != nullptr && !shared->s().empty()) keys.by_shared_name_[shared->s()] = key;
  }
  return keys;
}

const std::string* CheckpointKeys::Find(const Graph& graph, Endpoint handle) const {
  handle = ThroughIdentity(graph, handle);
  if (!handle.valid() || graph.node(handle.node).op() != "VarHandleOp") return nullptr;
  const Node& v = graph.node(handle.node);
  auto key = by_node_.find(v.name());
  if (key != by_node_.end()) return &key->second;
  // Another handle to the same resource (equal shared_name) may be the one
  // restored.
  const tf::AttrValue* shared = v.attr("shared_name");
  if (shared == nullptr || shared->s().empty()) return nullptr;
  auto by_shared = by_shared_name_.find(shared->s());
  return by_shared != by_shared_name_.end() ? &by_shared->second : nullptr;
}

absl::StatusOr<NodeSpec> CheckpointConstant(const TensorBundle& bundle,
                                            const std::string& key,
                                            const tf::AttrValue* dtype,
                                            const std::string& name) {
  const tf::BundleEntryProto* entry = bundle.Find(key);
  if (entry == nullptr)
    return absl::NotFoundError(
        absl::StrCat("the checkpoint has no tensor `", key, "`"));
  if (dtype == nullptr || dtype->type() != entry->dtype() ||
      entry->dtype() == tf::DT_STRING || entry->slices_size() > 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint key `", key, "` is not a whole numeric tensor of its dtype"));
  absl::StatusOr<std::shared_ptr<const TensorContent>> content = bundle.Content(key);
  if (!content.ok()) return content.status();
  NodeSpec constant;
  constant.name = name;
  constant.op = "Const";
  constant.attrs["dtype"].set_type(entry->dtype());
  tf::TensorProto* value = constant.attrs["value"].mutable_tensor();
  value->set_dtype(entry->dtype());
  *value->mutable_tensor_shape() = entry->shape();
  if ((*content)->size() >= wire::kApartMinBytes) {
    constant.value_content = *content;
  } else {
    value->set_tensor_content(std::string((*content)->bytes()));
  }
  return constant;
}

namespace {

class Freezer {
 public:
  Freezer(Graph& graph, const SavedModelOrigin& origin, FreezeSummary& summary)
      : graph_(graph), origin_(origin), rewriter_(graph), summary_(summary) {
    rewriter_.SetProvenance("freeze");
  }

  absl::Status Run(const FreezeOptions& options) {
    // Every edge must name a node (the validator reports the rest).
    absl::Status unresolved;
    graph_.ForEachNode([&](const Node& n) {
      for (int i = 0; i < n.num_inputs() && unresolved.ok(); ++i) {
        if (!n.input(i).valid())
          unresolved = FreezeError(origin_, absl::StrCat(
              "`", n.name(), "` reads `", graph_.UnresolvedInputName(n.id(), i),
              "`, which is not in the graph"));
      }
      for (size_t i = 0; i < n.control_inputs().size() && unresolved.ok(); ++i) {
        if (n.control_inputs()[i] == kNoNode)
          unresolved = FreezeError(origin_, absl::StrCat(
              "`", n.name(), "` waits for `",
              graph_.UnresolvedControlInputName(n.id(), static_cast<int>(i)),
              "`, which is not in the graph"));
      }
    });
    if (!unresolved.ok()) return unresolved;
    absl::Status s = ChooseSignatures(options);
    if (!s.ok()) return s;
    absl::StatusOr<CheckpointKeys> keys = CheckpointKeys::Of(graph_);
    if (!keys.ok()) return keys.status();
    keys_ = *std::move(keys);
    library_ = LibraryOf(graph_);
    for (int round = 0;; ++round) {
      std::vector<NodeId> calls;
      for (NodeId id : Needed()) {
        if (CalledFunction(graph_.node(id), library_) != nullptr)
          calls.push_back(id);
      }
      if (calls.empty()) break;
      // Each round inlines one level of calls; the library has no
      // recursion (checked before freezing), so rounds are bounded by it.
      if (round > static_cast<int>(library_.size()))
        return FreezeError(origin_, "calls nest deeper than the library");
      for (NodeId id : calls) {
        if (absl::Status s = Inline(id); !s.ok()) return s;
        if (graph_.num_nodes() > options.max_nodes)
          return FreezeError(origin_, absl::StrCat(
              "inlining the signatures makes more than ", options.max_nodes,
              " nodes"));
      }
    }
    if (absl::Status s = RemoveUnneeded(); !s.ok()) return s;
    if (absl::Status s = FreezeVariables(); !s.ok()) return s;
    // Each pass can free work for the other (a bypassed Identity makes a
    // control edge redundant, a dropped edge frees an Identity).
    for (uint64_t before = 0; before != graph_.version();) {
      before = graph_.version();
      if (absl::Status s = DropVacuousControlEdges(); !s.ok()) return s;
      if (absl::Status s = BypassIdentities(); !s.ok()) return s;
    }
    if (absl::Status s = RemoveUnneeded(); !s.ok()) return s;
    KeepCalledFunctions();
    return absl::OkStatus();
  }

  // The MetaGraph the frozen graph belongs to.
  tf::MetaGraphDef FrozenMetaGraph() const {
    const tf::MetaGraphDef& meta = origin_.proto.meta_graphs(origin_.meta_graph);
    tf::MetaGraphDef out;
    *out.mutable_meta_info_def() = meta.meta_info_def();
    out.mutable_meta_info_def()->clear_stripped_op_list();
    for (const auto& [key, signature] : meta.signature_def()) {
      if (signatures_.count(key)) (*out.mutable_signature_def())[key] = signature;
    }
    *out.mutable_asset_file_def() = meta.asset_file_def();
    return out;
  }

 private:
  static constexpr const char* kInitOp = "__saved_model_init_op";

  absl::Status ChooseSignatures(const FreezeOptions& options) {
    const tf::MetaGraphDef& meta = origin_.proto.meta_graphs(origin_.meta_graph);
    std::vector<std::string> known;
    for (const auto& entry : meta.signature_def()) {
      if (entry.first != kInitOp) known.push_back(entry.first);
    }
    std::sort(known.begin(), known.end());
    if (options.signatures.empty()) {
      signatures_.insert(known.begin(), known.end());
    } else {
      for (const std::string& name : options.signatures) {
        if (!meta.signature_def().count(name) || name == kInitOp)
          return absl::NotFoundError(absl::StrCat(
              Where(origin_), ": error: no signature `", name,
              "`; the SavedModel's signatures: ",
              known.empty() ? "none" : absl::StrJoin(known, ", ")));
        signatures_.insert(name);
      }
    }
    if (signatures_.empty())
      return FreezeError(origin_, "the SavedModel has no signature to freeze");
    summary_.signatures.assign(signatures_.begin(), signatures_.end());
    if (meta.signature_def().count(kInitOp)) signatures_.insert(kInitOp);
    for (const std::string& key : signatures_) {
      const tf::SignatureDef& signature = meta.signature_def().at(key);
      for (const auto* map : {&signature.inputs(), &signature.outputs()}) {
        for (const auto& [name, info] : *map) {
          if (info.name().empty())
            return FreezeError(origin_, absl::StrCat(
                "signature `", key, "`: `", name,
                "` is not a dense tensor (sparse and composite tensors are "
                "not frozen)"));
          absl::string_view node;
          int port = 0;
          if (!Graph::ParseTensorName(info.name(), &node, &port) ||
              !graph_.Contains(node))
            return FreezeError(origin_, absl::StrCat(
                "signature `", key, "`: `", name, "` names `", info.name(),
                "`, which is not in the graph"));
          roots_.insert(std::string(node));
        }
      }
    }
    return absl::OkStatus();
  }

  // The roots and everything they read (data or control), in id order.
  std::vector<NodeId> Needed() const {
    std::vector<bool> seen(graph_.id_limit(), false);
    std::vector<NodeId> todo;
    for (const std::string& name : roots_) {
      NodeId id = graph_.FindId(name);
      if (id != kNoNode && !seen[id]) {
        seen[id] = true;
        todo.push_back(id);
      }
    }
    std::vector<NodeId> out;
    while (!todo.empty()) {
      NodeId id = todo.back();
      todo.pop_back();
      out.push_back(id);
      const Node& n = graph_.node(id);
      auto visit = [&](NodeId p) {
        // (An input that does not resolve reads no node.)
        if (p >= 0 && p < graph_.id_limit() && !seen[p]) {
          seen[p] = true;
          todo.push_back(p);
        }
      };
      for (const Endpoint& e : n.inputs()) visit(e.node);
      for (NodeId c : n.control_inputs()) visit(c);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Replaces call `id` by the body of the function it calls.
  absl::Status Inline(NodeId id) {
    const Node& call = graph_.node(id);
    const std::string name = call.name();
    const tf::FunctionDef& function = *CalledFunction(call, library_);
    auto fail = [&](const std::string& what) {
      return FreezeError(origin_, absl::StrCat("inlining `", name, "` (",
                                               function.signature().name(),
                                               "): ", what));
    };
    absl::StatusOr<Graph> body =
        FunctionBodyGraph(function, graph_.header().library());
    if (!body.ok()) return fail(std::string(body.status().message()));
    tf::GraphDef body_def = body->ToGraphDef();
    // Args become placeholders the call's inputs feed (Splice does not copy
    // a fed placeholder).
    absl::flat_hash_map<std::string, Endpoint> input_map;
    std::map<int, std::string> retvals;
    for (tf::NodeDef& n : *body_def.mutable_node()) {
      auto index = n.attr().find("index");
      int i = index == n.attr().end() ? -1 : static_cast<int>(index->second.i());
      if (n.op() == "_Arg") {
        if (i < 0 || i >= call.num_inputs())
          return fail(absl::StrCat("arg `", n.name(), "` has no input to read"));
        input_map[n.name()] = call.input(i);
        n.set_op("Placeholder");
      } else if (n.op() == "_Retval") {
        retvals[i] = n.name();
      }
    }
    std::vector<NodeId> control_inputs(call.control_inputs().begin(),
                                       call.control_inputs().end());
    std::vector<NodeId> control_consumers(call.control_consumers().begin(),
                                          call.control_consumers().end());
    absl::StatusOr<SpliceResult> spliced =
        rewriter_.Splice(body_def, absl::StrCat(name, "/"), input_map);
    if (!spliced.ok()) return fail(std::string(spliced.status().message()));
    absl::flat_hash_set<NodeId> created(spliced->created.begin(),
                                        spliced->created.end());
    // The call's outputs are its rets' tensors.
    std::vector<Endpoint> outputs;
    std::vector<NodeId> retval_nodes;
    for (const auto& [index, retval] : retvals) {
      if (index != static_cast<int>(outputs.size()))
        return fail("its rets are not numbered 0, 1, ...");
      NodeId r = spliced->mapping.at(retval);
      if (graph_.node(r).num_inputs() < 1)
        return fail(absl::StrCat("ret `", retval, "` reads nothing"));
      retval_nodes.push_back(r);
      outputs.push_back(graph_.node(r).input(0));
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      absl::StatusOr<int> moved =
          rewriter_.Reroute({id, static_cast<int>(k)}, outputs[k]);
      if (!moved.ok()) return fail(std::string(moved.status().message()));
    }
    if (absl::Status s = rewriter_.RemoveNodes(retval_nodes); !s.ok())
      return fail(std::string(s.message()));
    // What ran after the call's control inputs still does: every body node
    // that reads nothing of the body waits for them.
    for (NodeId n : spliced->created) {
      if (!graph_.node(n).alive()) continue;
      bool reads_body = false;
      for (const Endpoint& e : graph_.node(n).inputs())
        reads_body = reads_body || created.count(e.node);
      for (NodeId c : graph_.node(n).control_inputs())
        reads_body = reads_body || created.count(c);
      if (reads_body) continue;
      for (NodeId c : control_inputs) {
        if (absl::Status s = rewriter_.AddControlEdge(c, n); !s.ok())
          return fail(std::string(s.message()));
      }
    }
    // What waited for the call waits for its outputs and control rets.
    std::vector<NodeId> finished;
    for (const Endpoint& e : outputs) finished.push_back(e.node);
    for (const auto& entry : function.control_ret()) {
      auto it = spliced->mapping.find(entry.second);
      if (it != spliced->mapping.end()) finished.push_back(it->second);
    }
    std::sort(finished.begin(), finished.end());
    finished.erase(std::unique(finished.begin(), finished.end()), finished.end());
    for (NodeId consumer : control_consumers) {
      if (absl::Status s = rewriter_.RemoveControlEdge(id, consumer); !s.ok())
        return fail(std::string(s.message()));
      for (NodeId f : finished) {
        if (f == consumer || !graph_.node(f).alive()) continue;
        if (absl::Status s = rewriter_.AddControlEdge(f, consumer); !s.ok())
          return fail(std::string(s.message()));
      }
    }
    tf::AttrValue types;
    const tf::AttrValue* tout = call.attr("Tout");
    for (size_t k = 0; k < outputs.size(); ++k) {
      tf::DataType t = tout != nullptr && static_cast<int>(k) < tout->list().type_size()
                           ? tout->list().type(static_cast<int>(k))
                           : function.signature().output_arg(static_cast<int>(k)).type();
      types.mutable_list()->add_type(t);
    }
    if (absl::Status s = rewriter_.RemoveNode(id); !s.ok())
      return fail(std::string(s.message()));
    ++summary_.calls_inlined;
    // A signature names the call's outputs: they keep their names.
    if (roots_.count(name) && !outputs.empty()) {
      NodeSpec keep;
      keep.name = name;
      keep.inputs = outputs;
      if (outputs.size() == 1) {
        keep.op = "Identity";
        keep.attrs["T"].set_type(types.list().type(0));
      } else {
        keep.op = "IdentityN";
        keep.attrs["T"] = types;
      }
      absl::StatusOr<NodeId> added = rewriter_.AddNode(std::move(keep));
      if (!added.ok()) return fail(std::string(added.status().message()));
    }
    return absl::OkStatus();
  }

  // What reads `id`'s output 0 reads `value` instead, what waits for `id`
  // waits for `value`'s node, and `id` goes: `id` => `value`.
  absl::Status ReplaceWith(NodeId id, Endpoint value, const std::string& what) {
    const Node& n = graph_.node(id);
    if (n.num_used_ports() > 0) {
      absl::StatusOr<int> moved = rewriter_.Reroute({id, 0}, value);
      if (!moved.ok())
        return FreezeError(origin_, absl::StrCat(what, " `", n.name(), "`: ",
                                                 moved.status().message()));
    }
    std::vector<NodeId> waiting(n.control_consumers().begin(),
                                n.control_consumers().end());
    for (NodeId c : waiting) {
      absl::Status s = rewriter_.RemoveControlEdge(id, c);
      if (s.ok() && c != value.node) s = rewriter_.AddControlEdge(value.node, c);
      if (!s.ok()) return FreezeError(origin_, std::string(s.message()));
    }
    absl::Status s = rewriter_.RemoveNode(id);
    return s.ok() ? s : FreezeError(origin_, std::string(s.message()));
  }

  // A node that reads nothing and waits for nothing (a Const, a NoOp
  // with no inputs) is ready at once: waiting for it orders nothing, so
  // control edges from it are dropped (the read variables' constants and
  // the NoOps functions use to gather their reads), and a NoOp left with
  // no inputs is such a node in turn: ^c => nothing, c ready at once.
  //
  // And an edge ^c into n orders nothing when n already waits for what c
  // is: c is one of n's data inputs' producers, or c is a NoOp that only
  // gathers nodes n reads or waits for (a function's return through
  // Identity(x) ^NoOp, the NoOp waiting for x's producer).
  absl::Status DropVacuousControlEdges() {
    auto ready = [&](const Node& n) {
      return (n.op() == "Const" || n.op() == "NoOp") && n.num_inputs() == 0 &&
             n.control_inputs().empty();
    };
    std::vector<NodeId> todo;
    graph_.ForEachNode([&](const Node& n) {
      if (ready(n) && !n.control_consumers().empty()) todo.push_back(n.id());
    });
    while (!todo.empty()) {
      NodeId id = todo.back();
      todo.pop_back();
      const Node& n = graph_.node(id);
      std::vector<NodeId> waiting(n.control_consumers().begin(),
                                  n.control_consumers().end());
      for (NodeId c : waiting) {
        if (absl::Status s = rewriter_.RemoveControlEdge(id, c); !s.ok())
          return FreezeError(origin_, std::string(s.message()));
        if (ready(graph_.node(c)) && !graph_.node(c).control_consumers().empty())
          todo.push_back(c);
      }
    }
    std::vector<std::pair<NodeId, NodeId>> redundant;
    graph_.ForEachNode([&](const Node& n) {
      absl::flat_hash_set<NodeId> waits;
      for (const Endpoint& e : n.inputs()) waits.insert(e.node);
      for (NodeId c : n.control_inputs()) {
        const Node& gate = graph_.node(c);
        bool covered = waits.count(c) > 0;
        if (!covered && gate.op() == "NoOp" && gate.num_inputs() == 0) {
          covered = true;
          for (NodeId g : gate.control_inputs()) {
            covered = covered && (waits.count(g) > 0 ||
                                  std::find(n.control_inputs().begin(),
                                            n.control_inputs().end(),
                                            g) != n.control_inputs().end());
          }
        }
        if (covered) redundant.emplace_back(c, n.id());
      }
    });
    for (const auto& [from, to] : redundant) {
      if (absl::Status s = rewriter_.RemoveControlEdge(from, to); !s.ok())
        return FreezeError(origin_, std::string(s.message()));
    }
    return absl::OkStatus();
  }

  // The Identity nodes call boundaries leave (each function returns its
  // result through one) are bypassed: Identity(x) => x, so that patterns
  // see the producer. Identities with control inputs, or that a
  // signature names, stay.
  absl::Status BypassIdentities() {
    for (NodeId id : Needed()) {
      const Node& n = graph_.node(id);
      if (n.op() != "Identity" || n.num_inputs() != 1 ||
          !n.control_inputs().empty() || roots_.count(n.name()))
        continue;
      if (absl::Status s = ReplaceWith(id, n.input(0), "bypassing"); !s.ok())
        return s;
      ++summary_.identities_bypassed;
    }
    return absl::OkStatus();
  }

  absl::Status RemoveUnneeded() {
    std::vector<NodeId> needed = Needed();
    std::vector<bool> keep(graph_.id_limit(), false);
    for (NodeId id : needed) keep[id] = true;
    std::vector<NodeId> doomed;
    graph_.ForEachNode([&](const Node& n) {
      if (!keep[n.id()]) doomed.push_back(n.id());
    });
    absl::Status s = rewriter_.RemoveNodes(doomed);
    return s.ok() ? s : FreezeError(origin_, std::string(s.message()));
  }

  absl::Status FreezeVariables() {
    if (!graph_.NodesWithOp("VariableV2").empty() ||
        !graph_.NodesWithOp("Variable").empty())
      return FreezeError(origin_, absl::StrCat(
          "reference variables (TensorFlow 1's VariableV2) are not frozen; "
          "rewrite this SavedModel in place (--saved-model in-place)"));
    for (NodeId id : graph_.NodesWithOp("VarHandleOp")) {
      if (absl::Status s = FreezeVariable(id); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status FreezeVariable(NodeId id) {
    const Node& var = graph_.node(id);
    const std::string name = var.name();
    std::vector<InputSlot> readers(var.consumers(0).begin(), var.consumers(0).end());
    for (const InputSlot& slot : readers) {
      const Node& reader = graph_.node(slot.node);
      if ((reader.op() != "ReadVariableOp" && reader.op() != "ResourceGather") ||
          slot.index != 0)
        return FreezeError(origin_, absl::StrCat(
            "`", reader.name(), "` (", reader.op(), ") uses the variable `", name,
            "` other than by reading it; only ReadVariableOp and ResourceGather "
            "are frozen (rewrite in place with --saved-model in-place)"));
    }
    const std::string* key = keys_.Find(graph_, {id, 0});
    if (key == nullptr)
      return FreezeError(origin_, absl::StrCat(
          "the variable `", name, "` is read but the checkpoint does not "
          "restore it"));
    if (!origin_.variables.has_value())
      return FreezeError(origin_, "variables/ holds no checkpoint to freeze from");
    absl::StatusOr<NodeSpec> constant = CheckpointConstant(
        *origin_.variables, *key, var.attr("dtype"), name);
    if (!constant.ok())
      return FreezeError(origin_, absl::StrCat("the variable `", name, "`: ",
                                               constant.status().message()));
    constant->name = name + "/frozen";
    constant->device = var.device();
    const int64_t bytes = constant->value_content != nullptr
                              ? static_cast<int64_t>(constant->value_content->size())
                              : static_cast<int64_t>(constant->attrs["value"]
                                                         .tensor().tensor_content().size());
    absl::StatusOr<NodeId> made = rewriter_.AddNode(*std::move(constant));
    if (!made.ok()) return FreezeError(origin_, std::string(made.status().message()));
    NodeId frozen = *made;
    for (const InputSlot& slot : readers) {
      if (absl::Status s = ReplaceReader(slot.node, frozen); !s.ok()) return s;
    }
    absl::Status s = ReplaceWith(id, {frozen, 0}, "freezing");
    if (s.ok()) s = rewriter_.Rename(frozen, name);
    if (!s.ok()) return FreezeError(origin_, std::string(s.message()));
    ++summary_.variables;
    summary_.variable_bytes += bytes;
    return absl::OkStatus();
  }

  absl::Status ReplaceReader(NodeId reader_id, NodeId frozen) {
    const Node& reader = graph_.node(reader_id);
    Endpoint value{frozen, 0};
    if (reader.op() == "ResourceGather") {
      // ResourceGather(v, i) = GatherV2(v, i, axis = batch_dims)
      const tf::AttrValue* batch = reader.attr("batch_dims");
      int64_t batch_dims = batch != nullptr ? batch->i() : 0;
      NodeSpec axis;
      axis.name = reader.name() + "/axis";
      axis.op = "Const";
      axis.attrs["dtype"].set_type(tf::DT_INT32);
      tf::TensorProto* t = axis.attrs["value"].mutable_tensor();
      t->set_dtype(tf::DT_INT32);
      t->add_int_val(static_cast<int32_t>(batch_dims));
      absl::StatusOr<NodeId> axis_id = rewriter_.AddNode(std::move(axis));
      if (!axis_id.ok()) return axis_id.status();
      NodeSpec gather;
      gather.name = reader.name() + "/gather";
      gather.op = "GatherV2";
      gather.device = reader.device();
      gather.inputs = {value, reader.input(1), Endpoint{*axis_id, 0}};
      gather.attrs["Tparams"] = *reader.attr("dtype");
      if (const tf::AttrValue* ti = reader.attr("Tindices")) gather.attrs["Tindices"] = *ti;
      gather.attrs["Taxis"].set_type(tf::DT_INT32);
      gather.attrs["batch_dims"].set_i(batch_dims);
      absl::StatusOr<NodeId> g = rewriter_.AddNode(std::move(gather));
      if (!g.ok()) return g.status();
      value = {*g, 0};
    }
    return ReplaceWith(reader_id, value, "replacing");
  }

  // The library keeps what the frozen graph still calls (If/While bodies).
  void KeepCalledFunctions() {
    const CallGraph calls(graph_.header().library());
    std::set<std::string> kept;
    graph_.ForEachNode([&](const Node& n) { calls.AddReached(n.def(), &kept); });
    tf::FunctionDefLibrary library;
    for (const tf::FunctionDef& f : graph_.header().library().function()) {
      if (kept.count(f.signature().name())) *library.add_function() = f;
    }
    for (const tf::GradientDef& g : graph_.header().library().gradient()) {
      if (kept.count(g.function_name())) *library.add_gradient() = g;
    }
    summary_.functions_kept = library.function_size();
    library_.clear();
    graph_.SetLibrary(std::move(library));
  }

  Graph& graph_;
  const SavedModelOrigin& origin_;
  Rewriter rewriter_;
  FreezeSummary& summary_;
  std::set<std::string> signatures_;
  std::set<std::string> roots_;  // node names the kept signatures name
  CheckpointKeys keys_;
  Library library_;
};

}  // namespace

absl::StatusOr<Graph> FreezeSavedModel(Graph graph, const FreezeOptions& options,
                                       FreezeSummary* summary) {
  std::shared_ptr<const SavedModelOrigin> origin =
      std::dynamic_pointer_cast<const SavedModelOrigin>(graph.origin());
  if (origin == nullptr)
    return absl::InvalidArgumentError(
        "freeze: the graph is not a SavedModel's (freezing reads a SavedModel "
        "folder)");
  if (origin->frozen) return graph;
  FreezeSummary local;
  Freezer freezer(graph, *origin, summary != nullptr ? *summary : local);
  if (absl::Status s = freezer.Run(options); !s.ok()) return s;
  auto frozen = std::make_shared<SavedModelOrigin>();
  frozen->dir = origin->dir;
  frozen->frozen = true;
  frozen->proto.set_saved_model_schema_version(
      origin->proto.saved_model_schema_version());
  *frozen->proto.add_meta_graphs() = freezer.FrozenMetaGraph();
  frozen->meta_graph = 0;
  graph.set_origin(std::move(frozen));
  return graph;
}

absl::StatusOr<Graph> ReadSavedModel(const std::string& dir,
                                     const SavedModelReading& reading,
                                     FreezeSummary* summary) {
  absl::StatusOr<Graph> graph = LoadSavedModel(dir, reading.tag);
  if (!graph.ok() || !reading.freeze) {
    if (graph.ok() && !reading.signatures.empty())
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": error: signatures are chosen when freezing; read in place, "
               "a SavedModel keeps all of them"));
    return graph;
  }
  return FreezeSavedModel(*std::move(graph), FreezeOptions{reading.signatures},
                          summary);
}

}  // namespace graft
