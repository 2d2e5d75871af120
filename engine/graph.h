// The graph IR: nodes with data inputs as (node, port) endpoints, control
// inputs, device and attrs; a name index, per-output-port consumer lists and
// an op-type index, all kept current by every edit.
//
// A Graph is read-only to everyone but the Rewriter (engine/rewriter.h),
// through which every edit goes. Node ids are stable for the life of the
// graph; an erased node's id is never reused. Iteration is in id order,
// which is the order of the source file followed by nodes in order of
// insertion, so every walk is deterministic.
#ifndef GRAFT_ENGINE_GRAPH_H_
#define GRAFT_ENGINE_GRAPH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/tensor_content.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "proto/graph.pb.h"

namespace graft {

class DialectOrigin;  // engine/dialect.h


using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// A tensor: output `port` of `node`.
struct Endpoint {
  NodeId node = kNoNode;
  int32_t port = 0;

  bool valid() const { return node != kNoNode; }
  friend bool operator==(Endpoint a, Endpoint b) {
    return a.node == b.node && a.port == b.port;
  }
  friend bool operator!=(Endpoint a, Endpoint b) { return !(a == b); }
  friend bool operator<(Endpoint a, Endpoint b) {
    return a.node != b.node ? a.node < b.node : a.port < b.port;
  }
  template <typename H>
  friend H AbslHashValue(H h, Endpoint e) {
    return H::combine(std::move(h), e.node, e.port);
  }
};

// A consumer slot: data input number `index` of `node`.
struct InputSlot {
  NodeId node = kNoNode;
  int32_t index = 0;

  friend bool operator==(InputSlot a, InputSlot b) {
    return a.node == b.node && a.index == b.index;
  }
  friend bool operator<(InputSlot a, InputSlot b) {
    return a.node != b.node ? a.node < b.node : a.index < b.index;
  }
};

class Graph;

class Node {
 public:
  NodeId id() const { return id_; }
  bool alive() const { return alive_; }
  const std::string& name() const { return def_->name(); }
  const std::string& op() const { return def_->op(); }
  const std::string& device() const { return def_->device(); }
  const google::protobuf::Map<std::string, tf::AttrValue>& attrs() const {
    return def_->attr();
  }
  // The attr `name`, or nullptr.
  const tf::AttrValue* attr(absl::string_view name) const;

  // Data inputs in order. An input whose node is not in the graph has
  // `node == kNoNode`; UnresolvedInputName() gives the name it referred to.
  absl::Span<const Endpoint> inputs() const { return inputs_; }
  const Endpoint& input(int index) const { return inputs_[index]; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  absl::Span<const NodeId> control_inputs() const { return control_inputs_; }

  // The consumers of output `port`, in the order the edges were made.
  absl::Span<const InputSlot> consumers(int port) const;
  // 1 + the highest output port that has consumers (0 if none).
  int num_used_ports() const { return static_cast<int>(consumers_.size()); }
  // Nodes with a control edge from this node.
  absl::Span<const NodeId> control_consumers() const {
    return control_consumers_;
  }
  // True when some data or control consumer reads this node.
  bool HasConsumers() const;

  // The NodeDef: name, op, device, attrs and unknown fields. Its `input`
  // field is brought up to date only when the graph is saved; read inputs()
  // and control_inputs() instead.
  const tf::NodeDef& def() const { return *def_; }

  // True when the node no longer matches its bytes in the source file.
  bool modified() const { return modified_; }
  // True for a copy a rewrite's clone made of another node; copy_of() is
  // that node (recomputation where it is still alive).
  bool is_copy() const { return copy_of_ != kNoNode; }
  NodeId copy_of() const { return copy_of_; }

  // The bytes of the `value` attr's tensor_content. A large tensor of a
  // binary file is not copied into def(), nor is a large folded filter
  // computed into it: their bytes are kept apart (engine/tensor_content.h)
  // and def()'s tensor_content is empty, so read them here (and whole
  // NodeDefs through Graph::ExportNodeDef).
  absl::string_view value_content() const;
  // The content kept apart, or nullptr when it is in def().
  const std::shared_ptr<const TensorContent>& value_content_apart() const {
    return content_;
  }

 private:
  friend class Graph;
  friend class GraphBuilder;
  friend class Rewriter;

  NodeId id_ = kNoNode;
  bool alive_ = true;
  bool modified_ = false;
  NodeId copy_of_ = kNoNode;
  int32_t provenance_ = -1;
  tf::NodeDef* def_ = nullptr;  // owned by the graph (arena or source storage)
  // The `value` tensor_content kept apart from def_, or nullptr.
  std::shared_ptr<const TensorContent> content_;
  absl::InlinedVector<Endpoint, 2> inputs_;
  absl::InlinedVector<NodeId, 1> control_inputs_;
  absl::InlinedVector<absl::InlinedVector<InputSlot, 2>, 1> consumers_;
  absl::InlinedVector<NodeId, 1> control_consumers_;
  // Inputs that named a node not in the graph: (data index, name), or
  // (-1 - control index, name) for control inputs.
  std::vector<std::pair<int, std::string>> unresolved_;
};

namespace internal {

// Node storage with stable addresses: fixed-size chunks, so adding nodes
// never moves existing ones and costs one allocation per chunk.
class NodeStore {
 public:
  size_t size() const { return size_; }
  Node& operator[](size_t i) { return chunks_[i >> kShift][i & kMask]; }
  const Node& operator[](size_t i) const {
    return chunks_[i >> kShift][i & kMask];
  }
  Node& emplace_back() {
    if ((size_ & kMask) == 0) {
      chunks_.push_back(std::make_unique<Node[]>(kChunk));
    }
    return (*this)[size_++];
  }

 private:
  static constexpr size_t kShift = 10;
  static constexpr size_t kChunk = size_t{1} << kShift;
  static constexpr size_t kMask = kChunk - 1;
  std::vector<std::unique_ptr<Node[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace internal

class Graph {
 public:
  Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // Builds a graph from a GraphDef (nodes are moved out of it). Fails on
  // duplicate or empty node names; inputs naming missing nodes are kept as
  // unresolved and reported by the validator.
  static absl::StatusOr<Graph> FromGraphDef(tf::GraphDef graph_def);

  // Number of live nodes.
  int num_nodes() const { return num_alive_; }
  // Changes with every edit (for caches of analyses). Versions are unique
  // in the process: two graphs never share one, even at the same address.
  uint64_t version() const { return version_; }
  // Gives the graph a new version (the Rewriter calls it on every edit),
  // noting the node the edit touched; kNoNode: an edit of unknown reach
  // (analyses kept since an earlier version must be recomputed).
  void BumpVersion(NodeId touched = kNoNode);
  // The nodes edited since `version` (inserted, changed or erased; with
  // repeats), for analyses kept up to date incrementally. False when the
  // graph cannot say: `version` is not one of this graph's since its last
  // unknown edit (or the log grew past its bound and was dropped).
  bool EditsSince(uint64_t version, std::vector<NodeId>* touched) const;
  // One past the largest node id ever used.
  NodeId id_limit() const { return static_cast<NodeId>(nodes_.size()); }

  // The node with this id (alive or erased).
  const Node& node(NodeId id) const { return nodes_[id]; }
  // The live node called `name`, or nullptr.
  const Node* FindNode(absl::string_view name) const;
  NodeId FindId(absl::string_view name) const;
  bool Contains(absl::string_view name) const {
    return FindId(name) != kNoNode;
  }

  // Live node ids in id order.
  std::vector<NodeId> NodeIds() const;
  // Calls fn(const Node&) for every live node in id order.
  template <typename Fn>
  void ForEachNode(Fn&& fn) const {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      if (n.alive_) fn(n);
    }
  }
  // Live nodes of op type `op`, in id order.
  std::vector<NodeId> NodesWithOp(absl::string_view op) const;
  // Every op type present, sorted, with its count of live nodes.
  std::vector<std::pair<std::string, int>> OpHistogram() const;

  // The largest output port a tensor name may give (far above any op's
  // output count; a larger one would size the consumer lists).
  static constexpr int kMaxOutputPort = 65535;
  // Parses a tensor name: "node", "node:1", "^node" (control, port -1).
  static bool ParseTensorName(absl::string_view text, absl::string_view* node,
                              int* port);
  // "node" for port 0, "node:port" otherwise.
  std::string TensorName(Endpoint e) const;
  // The name an unresolved input referred to, or empty.
  absl::string_view UnresolvedInputName(NodeId node, int index) const;
  absl::string_view UnresolvedControlInputName(NodeId node, int index) const;

  // Graph-level fields: versions, library, debug info. Kept verbatim.
  const tf::GraphDef& header() const { return header_; }
  // Replaces the function library (rewritten function bodies); saving
  // writes it instead of the source's bytes for it.
  void SetLibrary(tf::FunctionDefLibrary library) {
    *header_.mutable_library() = std::move(library);
    library_modified_ = true;
  }
  bool library_modified() const { return library_modified_; }
  // What the graph keeps of the file it was read from, for its dialect's
  // writer (engine/dialect.h); nullptr for a graph of the default dialect
  // read from a plain file or built.
  const std::shared_ptr<const DialectOrigin>& origin() const { return origin_; }
  void set_origin(std::shared_ptr<const DialectOrigin> origin) {
    origin_ = std::move(origin);
  }
  // For codecs reading a source: node `id`'s `value` content lies apart
  // (in the source's mapping or a file beside it), not in its NodeDef.
  // The node stays unmodified.
  void SetSourceContent(NodeId id, std::shared_ptr<const TensorContent> content) {
    nodes_[id].content_ = std::move(content);
  }

  // The rule that created node `id`, or empty for nodes of the source file.
  const std::string& Provenance(NodeId id) const;

  // The NodeDef of `id` with its `input` field rebuilt from the IR.
  tf::NodeDef ExportNodeDef(NodeId id) const;
  // Just that `input` field: data inputs, then `^name` control inputs.
  google::protobuf::RepeatedPtrField<std::string> ExportInputs(NodeId id) const;
  // The whole graph as a GraphDef (nodes in output order).
  tf::GraphDef ToGraphDef() const;

  // The order nodes are written in: `order`'s live nodes first, then the
  // others (nodes made later included) in id order. Unset: id order.
  void SetOutputOrder(std::vector<NodeId> order) {
    output_order_ = std::move(order);
  }
  bool has_output_order() const { return !output_order_.empty(); }
  // Every live node, in the order they are written.
  std::vector<NodeId> OutputOrder() const;

  // For byte-preserving binary I/O (engine/graph_io.cc): bytes of the source
  // file and, per top-level field, where it lies.
  struct SourceSegment {
    int field_number = 0;  // 1 for a node
    NodeId node = kNoNode;
    size_t offset = 0;  // the whole field: tag, length and payload
    size_t size = 0;
  };
  absl::string_view source_bytes() const { return source_bytes_; }
  // An open descriptor of the mapped source file (kept for copying its
  // unmodified ranges kernel-side), or -1.
  int source_fd() const { return source_fd_; }
  const std::vector<SourceSegment>& source_segments() const {
    return source_segments_;
  }

 private:
  friend class GraphBuilder;
  friend class Rewriter;

  Node& mutable_node(NodeId id) { return nodes_[id]; }
  // A new, empty NodeDef owned by the graph's arena (for parsing).
  tf::NodeDef* NewNodeDef();
  // A new, empty NodeDef on the heap, owned by the graph (for nodes a
  // rewrite builds: their attrs move in without a copy).
  tf::NodeDef* NewHeapNodeDef();
  NodeId AppendNode(tf::NodeDef* def);
  // Appends node number `ordinal` of a source file and indexes it; fails on
  // an empty or duplicate name.
  absl::StatusOr<NodeId> AddSourceNode(tf::NodeDef* def, int ordinal);
  void IndexOp(NodeId id);
  void UnindexOp(NodeId id);
  // Rebuilds consumers and resolves inputs for all nodes from NodeDefs.
  absl::Status ResolveAllInputs();
  void AddConsumer(Endpoint producer, InputSlot slot);
  void RemoveConsumer(Endpoint producer, InputSlot slot);
  void AddControlConsumer(NodeId producer, NodeId consumer);
  void RemoveControlConsumer(NodeId producer, NodeId consumer);
  int32_t InternProvenance(const std::string& rule);

  // NodeDefs live in the arena (parsed binary nodes, new nodes) or in the
  // node list of a GraphDef the graph was built from.
  std::unique_ptr<google::protobuf::Arena> arena_;
  std::unique_ptr<google::protobuf::RepeatedPtrField<tf::NodeDef>>
      node_storage_;
  std::vector<std::unique_ptr<tf::NodeDef>> heap_defs_;
  internal::NodeStore nodes_;
  int num_alive_ = 0;
  std::vector<NodeId> output_order_;  // empty: id order
  uint64_t version_;
  // (version after the edit, node touched), in version order, since
  // `log_start_`.
  std::vector<std::pair<uint64_t, NodeId>> edit_log_;
  uint64_t log_start_;
  absl::flat_hash_map<absl::string_view, NodeId> name_index_;
  // Per op: node ids in increasing order. Removal is lazy (erased nodes stay
  // listed and are skipped) so that removing a node costs O(1); the list is
  // compacted when half of it is stale.
  struct OpList {
    std::vector<NodeId> ids;
    int live = 0;
  };
  absl::flat_hash_map<std::string, OpList> op_index_;
  std::vector<std::string> provenance_names_;
  tf::GraphDef header_;  // everything but the nodes
  bool library_modified_ = false;
  std::shared_ptr<const DialectOrigin> origin_;
  // The source file's bytes (a string or a read-only mapping) and what
  // keeps them alive.
  std::shared_ptr<const void> source_owner_;
  absl::string_view source_bytes_;
  int source_fd_ = -1;  // owned by source_owner_
  std::vector<SourceSegment> source_segments_;
};

}  // namespace graft

#endif  // GRAFT_ENGINE_GRAPH_H_
