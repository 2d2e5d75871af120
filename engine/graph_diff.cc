#include "engine/graph_diff.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/const_tensor.h"
#include "engine/dialect.h"
#include "engine/file_writer.h"
#include "engine/graph_algorithms.h"
#include "engine/op_registry.h"

namespace graft {
namespace {

std::string Label(const Node& n) {
  return absl::StrCat(n.name(), " (", n.op(), ")");
}

std::vector<std::string> Inputs(const Graph& g, NodeId id) {
  google::protobuf::RepeatedPtrField<std::string> inputs = g.ExportInputs(id);
  return {inputs.begin(), inputs.end()};
}

// The values of a tensor attr, as numbers that read back to the same
// values ("= [0.5, 2]"), or its proto text when graft does not decode it.
std::string TensorValues(const tf::TensorProto& t, absl::string_view content) {
  absl::StatusOr<ConstTensor> c =
      content.empty() ? FromTensorProto(t) : FromTensorProto(t, content);
  if (!c.ok()) return absl::StrCat("{", t.ShortDebugString(), "}");
  bool wide = t.dtype() == tf::DT_DOUBLE;
  std::vector<std::string> values;
  for (double v : c->values) {
    values.push_back(wide ? absl::StrFormat("%.17g", v)
                          : absl::StrFormat("%.9g", v));
  }
  return absl::StrCat("= [", absl::StrJoin(values, ", "), "]");
}

// A readable form of an attr value; tensors by dtype and shape (and, in
// full, their values); long values shortened unless `full`.
std::string Show(const tf::AttrValue& v, bool full,
                 absl::string_view content = {}) {
  if (v.has_tensor()) {
    std::vector<int64_t> dims;
    for (const auto& d : v.tensor().tensor_shape().dim())
      dims.push_back(d.size());
    std::string head = absl::StrCat("tensor ", DataTypeName(v.tensor().dtype()),
                                    " [", absl::StrJoin(dims, ", "), "]");
    return full ? absl::StrCat(head, " ", TensorValues(v.tensor(), content))
                : head;
  }
  std::string text = v.ShortDebugString();
  if (!full && text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

std::string DotId(const std::string& name) {
  return absl::StrCat("\"", absl::StrReplaceAll(name, {{"\"", "\\\""}}), "\"");
}

}  // namespace

std::vector<std::string> NodeDetails(const Graph& g, const Node& n, bool full) {
  std::vector<std::string> lines;
  std::vector<std::string> inputs = Inputs(g, n.id());
  for (size_t i = 0; i < inputs.size(); ++i)
    lines.push_back(absl::StrCat("input ", i, ": `", inputs[i], "`"));
  if (!n.device().empty())
    lines.push_back(absl::StrCat("device: \"", n.device(), "\""));
  std::map<std::string, const tf::AttrValue*> attrs;
  for (const auto& [k, v] : n.attrs()) attrs[k] = &v;
  for (const auto& [k, v] : attrs) {
    lines.push_back(absl::StrCat(
        "attr `", k, "`: ",
        Show(*v, full,
             k == "value" ? n.value_content() : absl::string_view())));
  }
  return lines;
}

namespace {
std::vector<FunctionDiff> DiffBodies(const Graph& before, const Graph& after,
                                     const DiffOptions& options);

// Two constants' tensors hold the same dtype, shape and values, however each
// is encoded (tensor_content or the typed fields: an ONNX reader's and a
// rewrite's int8 weights).
bool SameTensorValue(const Node& a, const Node& b) {
  const tf::AttrValue* va = a.attr("value");
  const tf::AttrValue* vb = b.attr("value");
  if (va == nullptr || vb == nullptr) return false;
  absl::StatusOr<ConstTensor> ta =
      FromTensorProto(va->tensor(), a.value_content());
  absl::StatusOr<ConstTensor> tb =
      FromTensorProto(vb->tensor(), b.value_content());
  if (!ta.ok() || !tb.ok()) return false;
  if (ta->dtype != tb->dtype || ta->shape != tb->shape) return false;
  const ConstTensor x = Materialize(*ta), y = Materialize(*tb);
  // NaNs in the same places are the same value.
  return std::equal(
      x.values.begin(), x.values.end(), y.values.begin(), y.values.end(),
      [](double p, double q) { return p == q || (p != p && q != q); });
}
}  // namespace

GraphDiff DiffGraphs(const Graph& before, const Graph& after,
                     const DiffOptions& options) {
  GraphDiff diff;
  const bool full = options.full;
  before.ForEachNode([&](const Node& a) {
    if (!after.Contains(a.name())) diff.removed.push_back(Label(a));
  });
  after.ForEachNode([&](const Node& b) {
    const Node* a = before.FindNode(b.name());
    if (a == nullptr) {
      diff.added.push_back(Label(b));
      if (full) diff.added_details.push_back(NodeDetails(after, b, true));
      return;
    }
    NodeChange change;
    change.name = b.name();
    if (a->op() != b.op())
      change.changes.push_back(absl::StrCat("op: ", a->op(), " -> ", b.op()));
    // Data inputs compare by position; control inputs (`^x`) as a set, in
    // whatever order they are listed.
    std::vector<std::string> ia = Inputs(before, a->id()),
                             ib = Inputs(after, b.id());
    auto split = [](std::vector<std::string>& in, std::set<std::string>* ctl) {
      auto first = std::find_if(in.begin(), in.end(), [](const std::string& x) {
        return !x.empty() && x[0] == '^';
      });
      ctl->insert(first, in.end());
      in.erase(first, in.end());
    };
    std::set<std::string> ca, cb;
    split(ia, &ca);
    split(ib, &cb);
    for (size_t i = 0; i < std::max(ia.size(), ib.size()); ++i) {
      std::string x = i < ia.size() ? "`" + ia[i] + "`" : "(none)";
      std::string y = i < ib.size() ? "`" + ib[i] + "`" : "(none)";
      if (x != y)
        change.changes.push_back(absl::StrCat("input ", i, ": ", x, " -> ", y));
    }
    for (const std::string& c : ca) {
      if (!cb.count(c))
        change.changes.push_back(absl::StrCat("control input `", c, "` removed"));
    }
    for (const std::string& c : cb) {
      if (!ca.count(c))
        change.changes.push_back(absl::StrCat("control input `", c, "` added"));
    }
    std::set<std::string> keys;
    for (const auto& [k, v] : a->attrs()) keys.insert(k);
    for (const auto& [k, v] : b.attrs()) keys.insert(k);
    for (const std::string& k : keys) {
      const tf::AttrValue* va = a->attr(k);
      const tf::AttrValue* vb = b.attr(k);
      if (va == nullptr) {
        change.changes.push_back(absl::StrCat(
            "attr `", k, "` added: ",
            Show(*vb, full,
                 k == "value" ? b.value_content() : absl::string_view())));
      } else if (vb == nullptr) {
        change.changes.push_back(absl::StrCat("attr `", k, "` removed"));
      } else if ((SerializeDeterministic(*va) != SerializeDeterministic(*vb) ||
                  (k == "value" && a->value_content() != b.value_content())) &&
                 !(k == "value" && SameTensorValue(*a, b))) {
        bool value = k == "value";
        std::string sa =
            Show(*va, full, value ? a->value_content() : absl::string_view());
        std::string sb =
            Show(*vb, full, value ? b.value_content() : absl::string_view());
        change.changes.push_back(
            sa == sb ? absl::StrCat("attr `", k, "`: ", sa, " (values changed)")
                     : absl::StrCat("attr `", k, "`: ", sa, " -> ", sb));
      }
    }
    if (a->device() != b.device()) {
      change.changes.push_back(absl::StrCat("device: \"", a->device(),
                                            "\" -> \"", b.device(), "\""));
    }
    if (!change.changes.empty()) diff.changed.push_back(std::move(change));
  });
  diff.functions = DiffBodies(before, after, options);
  return diff;
}

namespace {

// The nested bodies of two graphs (a TensorFlow graph's library
// functions, an ONNX model's subgraphs by node/attr) that differ, in name
// order, bodies diffed.
std::vector<FunctionDiff> DiffBodies(const Graph& before, const Graph& after,
                                     const DiffOptions& options) {
  std::map<std::string, NestedBody> left, right;
  for (NestedBody& b : DialectOf(before).NestedBodies(before)) left[b.label] = std::move(b);
  for (NestedBody& b : DialectOf(after).NestedBodies(after)) right[b.label] = std::move(b);
  std::vector<FunctionDiff> out;
  for (const auto& [label, body] : left) {
    if (right.count(label) == 0) out.push_back({label, body.kind, "removed", nullptr, ""});
  }
  for (const auto& [label, body] : right) {
    auto other = left.find(label);
    if (other == left.end()) {
      out.push_back({label, body.kind, "added", nullptr, ""});
      continue;
    }
    if (other->second.bytes == body.bytes) continue;
    absl::StatusOr<Graph> x = other->second.open();
    absl::StatusOr<Graph> y = body.open();
    FunctionDiff d{label, body.kind, "changed", nullptr, ""};
    if (x.ok() && y.ok()) {
      d.body = std::make_shared<GraphDiff>(DiffGraphs(*x, *y, options));
      if (d.body->empty() && body.same_graph_note.empty()) continue;
      if (d.body->empty()) d.note = body.same_graph_note;
    } else {
      d.note = std::string((x.ok() ? y : x).status().message());
    }
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(),
            [](const FunctionDiff& p, const FunctionDiff& q) { return p.name < q.name; });
  return out;
}

}  // namespace

namespace {

constexpr absl::string_view kConstSuffix = " (Const)";  // of a "name (Op)" entry

bool IsConstantEntry(absl::string_view entry) { return absl::EndsWith(entry, kConstSuffix); }

// "- 49 constant(s): a, b, c and 46 more" for the constants among `entries`
// ("name (Op)"), or "" when there are none.
std::string ConstantsLine(const char* sign, const std::vector<std::string>& entries) {
  constexpr int kNamed = 3;
  int n = 0;
  std::string names;
  for (const std::string& e : entries) {
    if (!IsConstantEntry(e)) continue;
    if (n++ < kNamed) {
      absl::StrAppend(&names, n > 1 ? ", " : "", e.substr(0, e.size() - kConstSuffix.size()));
    }
  }
  if (n == 0) return "";
  return absl::StrCat(sign, " ", n, " constant(s): ", names,
                      n > kNamed ? absl::StrCat(" and ", n - kNamed, " more") : "", "\n");
}

}  // namespace

std::string DiffSummary(const GraphDiff& diff) {
  return absl::StrCat(diff.added.size(), " added, ", diff.removed.size(), " removed, ",
                      diff.changed.size(), " changed");
}

std::string FormatDiffText(const GraphDiff& diff, const DiffTextOptions& options) {
  const bool group = options.group_constants;
  std::string out;
  for (const std::string& r : diff.removed) {
    if (!group || !IsConstantEntry(r)) absl::StrAppend(&out, "- ", r, "\n");
  }
  if (group) out += ConstantsLine("-", diff.removed);
  for (size_t i = 0; i < diff.added.size(); ++i) {
    if (group && IsConstantEntry(diff.added[i])) continue;
    absl::StrAppend(&out, "+ ", diff.added[i], "\n");
    if (i < diff.added_details.size()) {
      for (const std::string& line : diff.added_details[i])
        absl::StrAppend(&out, "    ", line, "\n");
    }
  }
  if (group) out += ConstantsLine("+", diff.added);
  for (const NodeChange& c : diff.changed) {
    absl::StrAppend(&out, "~ ", c.name, "\n");
    for (const std::string& line : c.changes)
      absl::StrAppend(&out, "    ", line, "\n");
  }
  absl::StrAppend(&out, DiffSummary(diff), "\n");
  for (const FunctionDiff& f : diff.functions) {
    absl::StrAppend(&out, f.what, " ", f.name, ": ", f.kind,
                    f.note.empty() ? "" : absl::StrCat(" (", f.note, ")"), "\n");
    if (f.body == nullptr || f.body->empty()) continue;
    for (absl::string_view line :
         absl::StrSplit(FormatDiffText(*f.body, options), '\n', absl::SkipEmpty()))
      absl::StrAppend(&out, "  ", line, "\n");
  }
  return out;
}

std::string FormatDiffDot(const Graph& before, const Graph& after,
                          const GraphDiff& diff) {
  std::set<std::string> changed;
  for (const NodeChange& c : diff.changed) changed.insert(c.name);
  std::string out =
      "digraph diff {\n  rankdir=TB;\n  node [shape=box, style=filled, "
      "fillcolor=white];\n";
  after.ForEachNode([&](const Node& n) {
    std::string color = !before.Contains(n.name()) ? "palegreen"
                        : changed.count(n.name())  ? "orange"
                                                   : "white";
    absl::StrAppend(&out, "  ", DotId(n.name()), " [label=", DotId(Label(n)),
                    ", fillcolor=", color, "];\n");
    for (Endpoint e : n.inputs()) {
      if (e.valid())
        absl::StrAppend(&out, "  ", DotId(after.node(e.node).name()), " -> ",
                        DotId(n.name()), ";\n");
    }
    for (NodeId c : n.control_inputs()) {
      if (c != kNoNode) {
        absl::StrAppend(&out, "  ", DotId(after.node(c).name()), " -> ",
                        DotId(n.name()), " [style=dotted];\n");
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

std::string HtmlEscape(const std::string& text) {
  return absl::StrReplaceAll(
      text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

}  // namespace graft
