// The Rewriter: every edit to a Graph goes through it.
//
// Each operation checks everything it needs before it changes anything, so a
// failed operation leaves the graph exactly as it was. Listeners hear of
// every inserted, changed and erased node (the fixpoint driver keeps its
// worklist right this way), and every node the Rewriter creates records the
// rule that made it (provenance).
//
// The reroute family follows TF's graph_editor: `Reroute(from, to)` makes
// the consumers of `from` read `to` instead; a ConsumerFilter restricts it to
// some consumers (`can_modify`) or spares some (`cannot_modify`).
#ifndef GRAFT_ENGINE_REWRITER_H_
#define GRAFT_ENGINE_REWRITER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/graph.h"

namespace graft {

class RewriteListener {
 public:
  virtual ~RewriteListener() = default;
  virtual void NodeInserted(const Graph& /*graph*/, NodeId /*id*/) {}
  // Inputs, name, device, attrs or consumers of `id` changed.
  virtual void NodeChanged(const Graph& /*graph*/, NodeId /*id*/) {}
  virtual void NodeErased(const Graph& /*graph*/, NodeId /*id*/) {}
};

// Which consumers an edit may touch.
class ConsumerFilter {
 public:
  // Every consumer.
  static ConsumerFilter All() { return ConsumerFilter(Mode::kAll, {}); }
  // Only these consumer nodes (graph_editor's can_modify).
  static ConsumerFilter Only(absl::Span<const NodeId> nodes) {
    return ConsumerFilter(Mode::kOnly, nodes);
  }
  // Every consumer but these (graph_editor's cannot_modify).
  static ConsumerFilter Except(absl::Span<const NodeId> nodes) {
    return ConsumerFilter(Mode::kExcept, nodes);
  }
  bool Allows(NodeId consumer) const;

 private:
  enum class Mode { kAll, kOnly, kExcept };
  ConsumerFilter(Mode mode, absl::Span<const NodeId> nodes)
      : mode_(mode), nodes_(nodes.begin(), nodes.end()) {}
  Mode mode_;
  absl::flat_hash_set<NodeId> nodes_;
};

// A node to add.
struct NodeSpec {
  std::string name;  // a base name; made unique if taken (`name_1`, ...)
  std::string op;
  std::vector<Endpoint> inputs;
  std::vector<NodeId> control_inputs;
  std::string device;
  google::protobuf::Map<std::string, tf::AttrValue> attrs;
  // The `value` tensor's content, kept apart (its tensor_content in attrs
  // stays empty); see Node::value_content().
  std::shared_ptr<const TensorContent> value_content;
};

// The nodes a Clone or Splice created, keyed by the original.
struct CloneResult {
  absl::flat_hash_map<NodeId, NodeId> mapping;  // original id -> new id
  std::vector<NodeId> created;                  // new ids, in creation order
};
struct SpliceResult {
  // name in the spliced graph -> new id in the target
  absl::flat_hash_map<std::string, NodeId> mapping;
  std::vector<NodeId> created;
};

class Rewriter {
 public:
  explicit Rewriter(Graph& graph) : graph_(graph) {}

  const Graph& graph() const { return graph_; }
  void AddListener(RewriteListener* listener) {
    listeners_.push_back(listener);
  }
  // The rule recorded as the maker of nodes created from now on.
  void SetProvenance(std::string rule) { rule_ = std::move(rule); }

  // Transactions: after Begin, every edit is journaled; Rollback undoes
  // them all (newest first) and leaves the graph as it was at Begin, byte
  // for byte when saved; Commit keeps them. Not nested.
  void Begin();
  void Commit();
  void Rollback();
  bool in_transaction() const { return recording_; }

  // A name not yet in the graph: `base` if free, else `base_1`, `base_2`...
  std::string UniqueName(absl::string_view base) const;

  absl::StatusOr<NodeId> AddNode(NodeSpec spec);
  // Removes a node with no consumers (data or control), and its input edges.
  absl::Status RemoveNode(NodeId id);
  // Removes a set of nodes; consumers must all be inside the set.
  absl::Status RemoveNodes(absl::Span<const NodeId> ids);
  absl::Status Rename(NodeId id, absl::string_view new_name);
  absl::Status SetDevice(NodeId id, absl::string_view device);
  absl::Status SetAttr(NodeId id, absl::string_view name, tf::AttrValue value);
  // Removes an attr (nothing when the node has none of that name).
  absl::Status RemoveAttr(NodeId id, absl::string_view name);
  // Data input `index` of `id` reads `source` from now on.
  absl::Status SetInput(NodeId id, int index, Endpoint source);
  // Sets `id`'s data inputs from `first` on to `sources` (dropping or
  // adding trailing inputs): for inputs an op has a variable count of.
  absl::Status SetTrailingInputs(NodeId id, int first, absl::Span<const Endpoint> sources);
  absl::Status AddControlEdge(NodeId from, NodeId to);
  absl::Status RemoveControlEdge(NodeId from, NodeId to);

  // The consumers of `from` that `filter` allows read `to` instead. Returns
  // the number of inputs changed.
  absl::StatusOr<int> Reroute(
      Endpoint from, Endpoint to,
      const ConsumerFilter& filter = ConsumerFilter::All());
  // Pairwise: the consumers of from[i] read to[i]. All pairs are checked
  // before any input changes.
  absl::StatusOr<int> Reroute(
      absl::Span<const Endpoint> from, absl::Span<const Endpoint> to,
      const ConsumerFilter& filter = ConsumerFilter::All());
  // The consumers of `a` read `b` and those of `b` read `a`.
  absl::StatusOr<int> Swap(
      Endpoint a, Endpoint b,
      const ConsumerFilter& filter = ConsumerFilter::All());
  // Pairwise: a[i] and b[i] trade consumers; all pairs are checked, and
  // all consumers found, before any input changes.
  absl::StatusOr<int> Swap(
      absl::Span<const Endpoint> a, absl::Span<const Endpoint> b,
      const ConsumerFilter& filter = ConsumerFilter::All());

  // Copies `nodes`. Edges among them are copied; an input from outside reads
  // `replacements[input]` if given, else the original tensor. Control inputs
  // from outside are kept. Copies keep op, attrs and device; names are
  // `name_prefix + name + name_suffix` made unique.
  absl::StatusOr<CloneResult> Clone(
      absl::Span<const NodeId> nodes,
      const absl::flat_hash_map<Endpoint, Endpoint>& replacements = {},
      absl::string_view name_prefix = "", absl::string_view name_suffix = "");

  // Copies every node of `other` into the graph as `prefix + name` (made
  // unique when taken). A tensor of `other` named in `input_map` ("x" or
  // "x:1") is read from the given target tensor instead; a Placeholder fed
  // that way is not copied (its mapping is the feeding node).
  absl::StatusOr<SpliceResult> Splice(
      const tf::GraphDef& other, absl::string_view prefix,
      const absl::flat_hash_map<std::string, Endpoint>& input_map = {});

 private:
  absl::Status CheckLive(NodeId id, absl::string_view what) const;
  absl::Status CheckEndpoint(Endpoint e, absl::string_view what) const;
  // An error if `to` depends on any of `consumers` (the edit would close a
  // cycle).
  absl::Status CheckNoCycle(Endpoint to,
                            absl::Span<const NodeId> consumers) const;
  // Same dtype and compatible static shapes, where known.
  absl::Status CheckCompatible(Endpoint from, Endpoint to) const;
  // Inserts a node whose inputs are resolved; returns its id.
  NodeId Insert(tf::NodeDef* def, absl::Span<const Endpoint> inputs,
                absl::Span<const NodeId> control_inputs);
  void SetInputUnchecked(NodeId id, int index, Endpoint source);
  void MarkChanged(NodeId id);
  void NotifyChanged(NodeId id);
  // Each node once, in id order.
  void NotifyChanged(std::vector<NodeId> ids);
  // Topological ranks (edges go from lower to higher) make most cycle checks
  // O(1); computed lazily, kept up as nodes are added, recomputed when an
  // edit breaks them.
  double Rank(NodeId id) const;
  void RankNewNode(NodeId id);
  void RankEdge(NodeId producer, NodeId consumer);
  static constexpr double kRankStep = 1e-6;
  // Journals an undo step while a transaction is open.
  void OnUndo(std::function<void()> undo);
  // Detaches a node from its producers and the indexes (undo of Insert).
  void Unlink(NodeId id);
  // Links a removed node back in (undo of RemoveNodes).
  void Relink(NodeId id);

  Graph& graph_;
  std::vector<RewriteListener*> listeners_;
  std::string rule_;
  bool recording_ = false;
  uint64_t begin_version_ = 0;  // the graph's version when Begin was called
  // Names UniqueName made by numbering a stem, and the next number to try
  // for each stem: a copy of a copy is `s_2`, not `s_1_1`, and finding a
  // free name does not rescan the numbers already taken.
  mutable absl::flat_hash_map<std::string, std::string> stem_of_;
  mutable absl::flat_hash_map<std::string, int> next_number_;
  mutable std::vector<double> ranks_;
  mutable bool ranks_valid_ = false;
  std::vector<std::function<void()>> undo_;
};

}  // namespace graft

#endif  // GRAFT_ENGINE_REWRITER_H_
