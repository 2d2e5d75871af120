// A structural diff of two graphs, nodes matched by name: what was added,
// removed, rewired, or changed (op, attrs, device).
#ifndef GRAFT_ENGINE_GRAPH_DIFF_H_
#define GRAFT_ENGINE_GRAPH_DIFF_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/graph.h"

namespace graft {

struct NodeChange {
  std::string name;
  std::vector<std::string>
      changes;  // "input 1: `w` -> `w2`", "attr `padding`: ..."
};

struct GraphDiff;

// A library function (or an ONNX subgraph, named node/attr) that
// differs: added, removed, or its body changed.
struct FunctionDiff {
  std::string name;
  std::string what = "function";    // or "subgraph"
  std::string kind;                 // "added", "removed" or "changed"
  std::shared_ptr<GraphDiff> body;  // changed: the bodies' diff
  std::string note;                 // changed but a body cannot be read
};

struct GraphDiff {
  std::vector<std::string> added;  // "name (Op)", in the second graph's order
  // With DiffOptions::full, what each added node is: its inputs, device and
  // attrs (parallel to `added`).
  std::vector<std::vector<std::string>> added_details;
  std::vector<std::string> removed;  // "name (Op)", in the first graph's order
  std::vector<NodeChange> changed;   // in the second graph's order
  std::vector<FunctionDiff> functions;  // by name
  bool empty() const {
    return added.empty() && removed.empty() && changed.empty() &&
           functions.empty();
  }
};

struct DiffOptions {
  // Everything the second graph holds that the first does not: added nodes
  // in full, and every attr (tensors with their values) without shortening.
  // Golden cases store this as their expected result.
  bool full = false;
};

GraphDiff DiffGraphs(const Graph& before, const Graph& after,
                     const DiffOptions& options = {});

// What a node is, one line each: "input 0: `x`", "device: ...", "attr `T`:
// ..." (attrs sorted; tensors with their values and long values unshortened
// when `full`).
std::vector<std::string> NodeDetails(const Graph& g, const Node& n, bool full);

// "11 added, 3 removed, 2 changed": FormatDiffText's summary line.
std::string DiffSummary(const GraphDiff& diff);

struct DiffTextOptions {
  // Added and removed constants (an ONNX model's initializers too) on one
  // line each, "- 49 constant(s): a, b, c and 46 more", not one a line.
  bool group_constants = false;
};

// For terminals and code review: `+ added`, `- removed`, `~ changed` lines
// and a summary line; then each library function that differs, its body's
// diff indented.
std::string FormatDiffText(const GraphDiff& diff,
                           const DiffTextOptions& options = {});
// Graphviz DOT of the second graph, added nodes green, changed ones orange,
// removed ones (from the first graph) red and dashed. (The drawing people
// review, laid out and clickable, is draw/diff_drawing.h.)
std::string FormatDiffDot(const Graph& before, const Graph& after,
                          const GraphDiff& diff);
// Text for HTML: & < > " escaped.
std::string HtmlEscape(const std::string& text);

}  // namespace graft

#endif  // GRAFT_ENGINE_GRAPH_DIFF_H_
