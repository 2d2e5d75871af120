#include "engine/graph_diff.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/op_registry.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace graft {
namespace {

std::string Label(const Node& n) { return absl::StrCat(n.name(), " (", n.op(), ")"); }

std::vector<std::string> Inputs(const Graph& g, NodeId id) {
  tf::NodeDef def = g.ExportNodeDef(id);
  return {def.input().begin(), def.input().end()};
}

// A short, readable form of an attr value; tensors by dtype and shape.
std::string Show(const tf::AttrValue& v) {
  if (v.has_tensor()) {
    std::vector<int64_t> dims;
    for (const auto& d : v.tensor().tensor_shape().dim()) dims.push_back(d.size());
    return absl::StrCat("tensor ", DataTypeName(v.tensor().dtype()), " [",
                        absl::StrJoin(dims, ", "), "]");
  }
  std::string text = v.ShortDebugString();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

std::string Bytes(const tf::AttrValue& v) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    v.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string DotId(const std::string& name) {
  return absl::StrCat("\"", absl::StrReplaceAll(name, {{"\"", "\\\""}}), "\"");
}

}  // namespace

GraphDiff DiffGraphs(const Graph& before, const Graph& after) {
  GraphDiff diff;
  before.ForEachNode([&](const Node& a) {
    if (!after.Contains(a.name())) diff.removed.push_back(Label(a));
  });
  after.ForEachNode([&](const Node& b) {
    const Node* a = before.FindNode(b.name());
    if (a == nullptr) {
      diff.added.push_back(Label(b));
      return;
    }
    NodeChange change;
    change.name = b.name();
    if (a->op() != b.op()) change.changes.push_back(absl::StrCat("op: ", a->op(), " -> ", b.op()));
    std::vector<std::string> ia = Inputs(before, a->id()), ib = Inputs(after, b.id());
    for (size_t i = 0; i < std::max(ia.size(), ib.size()); ++i) {
      std::string x = i < ia.size() ? "`" + ia[i] + "`" : "(none)";
      std::string y = i < ib.size() ? "`" + ib[i] + "`" : "(none)";
      if (x != y) change.changes.push_back(absl::StrCat("input ", i, ": ", x, " -> ", y));
    }
    std::set<std::string> keys;
    for (const auto& [k, v] : a->attrs()) keys.insert(k);
    for (const auto& [k, v] : b.attrs()) keys.insert(k);
    for (const std::string& k : keys) {
      const tf::AttrValue* va = a->attr(k);
      const tf::AttrValue* vb = b.attr(k);
      if (va == nullptr) {
        change.changes.push_back(absl::StrCat("attr `", k, "` added: ", Show(*vb)));
      } else if (vb == nullptr) {
        change.changes.push_back(absl::StrCat("attr `", k, "` removed"));
      } else if (Bytes(*va) != Bytes(*vb)) {
        std::string sa = Show(*va), sb = Show(*vb);
        change.changes.push_back(sa == sb ? absl::StrCat("attr `", k, "`: ", sa, " (values changed)")
                                          : absl::StrCat("attr `", k, "`: ", sa, " -> ", sb));
      }
    }
    if (a->device() != b.device()) {
      change.changes.push_back(absl::StrCat("device: \"", a->device(), "\" -> \"", b.device(), "\""));
    }
    if (!change.changes.empty()) diff.changed.push_back(std::move(change));
  });
  return diff;
}

std::string FormatDiffText(const GraphDiff& diff) {
  std::string out;
  for (const std::string& r : diff.removed) absl::StrAppend(&out, "- ", r, "\n");
  for (const std::string& a : diff.added) absl::StrAppend(&out, "+ ", a, "\n");
  for (const NodeChange& c : diff.changed) {
    absl::StrAppend(&out, "~ ", c.name, "\n");
    for (const std::string& line : c.changes) absl::StrAppend(&out, "    ", line, "\n");
  }
  absl::StrAppend(&out, diff.added.size(), " added, ", diff.removed.size(), " removed, ",
                  diff.changed.size(), " changed\n");
  return out;
}

std::string FormatDiffDot(const Graph& before, const Graph& after, const GraphDiff& diff) {
  std::set<std::string> changed;
  for (const NodeChange& c : diff.changed) changed.insert(c.name);
  std::string out = "digraph diff {\n  rankdir=TB;\n  node [shape=box, style=filled, fillcolor=white];\n";
  after.ForEachNode([&](const Node& n) {
    std::string color = !before.Contains(n.name()) ? "palegreen"
                        : changed.count(n.name()) ? "orange"
                                                  : "white";
    absl::StrAppend(&out, "  ", DotId(n.name()), " [label=", DotId(Label(n)),
                    ", fillcolor=", color, "];\n");
    for (Endpoint e : n.inputs()) {
      if (e.valid()) absl::StrAppend(&out, "  ", DotId(after.node(e.node).name()), " -> ", DotId(n.name()), ";\n");
    }
    for (NodeId c : n.control_inputs()) {
      if (c != kNoNode) {
        absl::StrAppend(&out, "  ", DotId(after.node(c).name()), " -> ", DotId(n.name()), " [style=dotted];\n");
      }
    }
  });
  before.ForEachNode([&](const Node& n) {
    if (after.Contains(n.name())) return;
    absl::StrAppend(&out, "  ", DotId(n.name()), " [label=", DotId(Label(n)),
                    ", fillcolor=mistyrose, style=\"filled,dashed\"];\n");
  });
  out += "}\n";
  return out;
}

}  // namespace graft
