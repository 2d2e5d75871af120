// A dialect: one graph format (TensorFlow, ONNX) behind the interface the
// core calls. The core (graph IR, Rewriter, driver, surgery, values,
// validation, the rule language) knows no format by name: it asks the
// graph's dialect for its op signatures, its checks, its node names, its
// model outputs, its nested bodies and its files. Each dialect lives in
// its own folder (dialects/tf, dialects/onnx) and registers itself when it
// is linked in (docs/dialects.md: adding one).
#ifndef GRAFT_ENGINE_DIALECT_H_
#define GRAFT_ENGINE_DIALECT_H_

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "proto/report.pb.h"

namespace graft {

class OpRegistry;
struct ValidateOptions;

// What a graph keeps of the file it was read from (the model around it, a
// SavedModel's folder), for its dialect's writer; only that dialect reads
// it. A graph without one is the default dialect's.
class DialectOrigin {
 public:
  virtual ~DialectOrigin() = default;
  virtual absl::string_view dialect() const = 0;
};

// One dialect's node checks over one graph, made once per validation (ONNX
// infers its types as it goes).
class NodeChecker {
 public:
  using Report = std::function<void(std::string)>;
  virtual ~NodeChecker() = default;
  // What makes `node` disagree with its op's signature; with
  // `signature_only`, only what per-op analyses rely on (attrs, a Const's
  // value, input counts, the ports inputs read), else dtypes, unresolved
  // inputs and control inputs too.
  virtual void CheckNode(const Node& node, bool signature_only, const Report& report) = 0;
  // An op the dialect does not define (custom ops and library functions
  // excepted), said the way its runtime would.
  virtual void CheckOpName(const Node& node, const Report& report) = 0;
};

// The node that stands in for an optional input left out (ONNX writes its
// name empty).
struct AbsentInputNode {
  std::string name;
  std::string op;
};

// A graph nested in another (a TensorFlow library function, an ONNX node's
// subgraph), as a diff or a report names it; `open` reads it while the
// graph it came from lives.
struct NestedBody {
  std::string label;
  std::string kind;   // "function" or "subgraph"
  std::string bytes;  // its serialized form: equal bytes, equal bodies
  std::function<absl::StatusOr<Graph>()> open;
  // What a diff says when the bytes differ and the graphs do not (a
  // function's signature or attrs); empty: nothing to say.
  std::string same_graph_note;
};

// A body opened for the rules as a rewrite sees it (a SavedModel's variable
// reads and a frozen graph's constant arguments as constants).
struct ShownBody {
  std::string function;
  Graph body;
  int variable_reads = 0;
  int constant_args = 0;
};

// What rewriting inside bodies is given: which ("all", "none" or names),
// the ops a validation allows, and the rules run over one body (its
// rewrites, or an error); `keep` names nodes the body must keep.
struct BodyRun {
  std::string functions = "all";
  std::set<std::string> custom_ops;
  std::function<absl::StatusOr<int>(Graph& body, const std::string& what,
                                    const std::vector<std::string>& keep)>
      run;
};

class Dialect {
 public:
  virtual ~Dialect() = default;
  // The name rule files give it (`dialect onnx`) and origins carry.
  virtual absl::string_view name() const = 0;
  // How messages name its graphs: "a tensorflow graph", "an onnx graph".
  virtual absl::string_view graph_noun() const = 0;
  // Where its shipped rule libraries live ("rules/onnx").
  virtual absl::string_view rules_folder() const = 0;

  // ---- files ----
  // Whether `path` is this dialect's file by its name (the default dialect
  // takes what no other claims).
  virtual bool Claims(absl::string_view path) const = 0;
  // Reads the graph at `path`; `format` is a name the dialect knows ("pb",
  // "pbtxt", "onnx") or empty for its default.
  virtual absl::StatusOr<Graph> Load(const std::string& path, absl::string_view format,
                                     bool allow_empty) const = 0;

  // ---- ops ----
  virtual const OpRegistry& Ops() const = 0;
  // Raises the opset `graph` imports to `opset` where its ops mean the same
  // there (ONNX's: dialects/onnx/onnx_opset.h); an error, the graph
  // unchanged, otherwise, and for a dialect without opsets.
  virtual absl::Status RaiseOpset(Graph& graph, int64_t opset) const;
  // The signature `op` has in `graph` (ONNX: at the model's opset).
  virtual const tf::OpDef* OpDefIn(const Graph& graph, absl::string_view op) const;
  // Whether nodes carry their dtypes as the attrs their signatures name
  // (TensorFlow's `T`): the registry then gives every output's dtype,
  // checked when an edge is rerouted and inferred for a new node. ONNX's
  // types are its validator's, checked after each rewrite.
  virtual bool has_type_attrs() const = 0;
  virtual bool IsValidNodeName(absl::string_view name) const = 0;
  // The stand-in for a left-out optional input, where the dialect has them.
  virtual std::optional<AbsentInputNode> AbsentInput() const { return std::nullopt; }

  // ---- shapes ----
  // The dtypes of a node's outputs, its inputs' being `type_of` (as
  // inferred so far); nullopt where unknown. By default its signature's.
  virtual std::optional<std::vector<tf::DataType>> OutputTypes(
      const Graph& graph, const Node& node,
      const std::function<tf::DataType(Endpoint)>& type_of) const;
  // The shape the dialect's file declares for a tensor (ONNX's value_info;
  // a symbolic dimension is size -1 with its name), or nullopt.
  virtual std::optional<tf::TensorShapeProto> DeclaredShape(const Graph& /*graph*/,
                                                            Endpoint /*tensor*/) const {
    return std::nullopt;
  }

  // ---- checks ----
  virtual std::unique_ptr<NodeChecker> Checker(const Graph& graph,
                                               const ValidateOptions& options,
                                               const std::set<std::string>& functions) const = 0;
  // The graph's library: every function called exists, none calls itself.
  using IssueReport = std::function<void(NodeId, std::string)>;
  virtual void CheckLibrary(const Graph& /*graph*/, const std::set<std::string>& /*custom_ops*/,
                            const IssueReport& /*report*/) const {}

  // ---- the model's interface ----
  // The nodes that are the model's outputs.
  virtual std::vector<std::string> ModelOutputs(const Graph& graph) const = 0;
  // Whether a node is part of the model's interface (an ONNX initializer,
  // input or output) rather than an op a user counts.
  bool IsInterfaceNode(const Node& node) const {
    return IsInterfaceOp(node.op());
  }
  // Whether nodes of `op` are that interface (ops of the IR its registry
  // need not hold: an ONNX graph's `_Retval` outputs).
  virtual bool IsInterfaceOp(absl::string_view /*op*/) const { return false; }
  // Whether an unread producer of removed nodes may go with them (ONNX ops
  // compute their outputs alone); `node` is such a producer.
  virtual bool MayDropUnreadProducer(const Graph& /*graph*/, const Node& /*node*/) const {
    return false;
  }
  // Whether a node's attrs hold everything it computes with besides its
  // inputs, so that two nodes of one op, attrs and inputs compute the same
  // (ONNX keeps a node's graphs, sparse tensors and type protos in its
  // original message, not as attrs).
  virtual bool AttrsWhole(const Graph& /*graph*/, const Node& /*node*/) const {
    return true;
  }
  // Whether the dialect's files name tensors by value names (ONNX) rather
  // than `node:port`.
  virtual bool has_value_names() const { return false; }
  // The name of a tensor in the dialect's file ("x:0" in TensorFlow, the
  // value name in ONNX; empty for none).
  virtual std::string TensorNameInFile(const Graph& graph, Endpoint tensor) const;

  // ---- nested bodies ----
  virtual std::vector<NestedBody> NestedBodies(const Graph& /*graph*/) const { return {}; }
  // What "--functions" may name in `graph`, for errors: "its library
  // functions".
  virtual absl::string_view bodies_noun() const = 0;
  // Runs `run` inside the bodies it selects, each validated and written
  // back when changed; one FunctionReport each in `report`.
  virtual absl::Status RewriteBodies(Graph& /*graph*/, const BodyRun& /*run*/,
                                     report::ApplyReport* /*report*/) const {
    return absl::OkStatus();
  }
  // Calls `fn` with every body RewriteBodies would rewrite with "all".
  virtual absl::Status ForEachShownBody(
      const Graph& /*graph*/, const std::function<void(const ShownBody&)>& /*fn*/) const {
    return absl::OkStatus();
  }
};

// A dialect whose graphs are a model's with an explicit interface (ONNX's,
// ATen's): its outputs are `_Retval` nodes; its weights (Const), inputs
// (Placeholder), outputs and left-out optional inputs (`_absent`, an
// `_Absent` node) are that interface, not ops; a node may have any name
// the IR can hold (no `:`, which names ports, nor a leading `^`).
class ModelDialect : public Dialect {
 public:
  bool IsValidNodeName(absl::string_view name) const override;
  std::optional<AbsentInputNode> AbsentInput() const override;
  std::vector<std::string> ModelOutputs(const Graph& graph) const override;
  bool IsInterfaceOp(absl::string_view op) const override;
};

// Registers a dialect (at static initialization, by the dialect's own
// library); `is_default`: graphs without an origin are its.
void RegisterDialect(const Dialect* dialect, bool is_default = false);
// The dialect named `name`, or nullptr when none is linked in.
const Dialect* FindDialect(absl::string_view name);
// Every dialect linked in, the default last.
std::vector<const Dialect*> Dialects();
// The dialect of `graph` (its origin's, else the default).
const Dialect& DialectOf(const Graph& graph);
// The dialect of graphs without an origin, and of rule files that name none.
const Dialect& DefaultDialect();

// A graph file read by the dialect that claims it.
absl::StatusOr<Graph> LoadGraphFile(const std::string& path);

// The selection helpers the dialects' RewriteBodies share: the names in
// "a,b,c", and an error for a name `known` does not hold.
std::set<std::string> SelectedNames(const std::string& functions);
absl::Status CheckSelection(const std::set<std::string>& known, const std::string& functions,
                            absl::string_view what);

}  // namespace graft

#endif  // GRAFT_ENGINE_DIALECT_H_
