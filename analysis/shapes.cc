#include "analysis/shapes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/schedule.h"
#include "analysis/shape_functions.h"
#include "analysis/shape_functions_internal.h"
#include "engine/const_tensor.h"
#include "engine/dialect.h"
#include "engine/op_registry.h"
#include "engine/validate.h"

namespace graft::analysis {

namespace {

// A name a size may have: letters, digits and `_`, not starting with a digit.
bool IsDimName(absl::string_view d) {
  return !d.empty() && (absl::ascii_isalpha(d[0]) || d[0] == '_') &&
         std::all_of(d.begin(), d.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// The shape the graph's dialect declares for a tensor (ONNX's value_info;
// symbolic dimensions as SymbolicDim), or an unknown rank; `anonymous`:
// which dimensions onnx's shape inference named only to say they are
// unknown (`unk__7`).
struct Declared {
  TensorInfo info;
  std::vector<bool> anonymous;
};
Declared DeclaredShape(const Graph& graph, Endpoint tensor) {
  Declared out;
  std::optional<tf::TensorShapeProto> shape = DialectOf(graph).DeclaredShape(graph, tensor);
  if (!shape.has_value()) return out;
  out.info.known_rank = true;
  for (const auto& d : shape->dim()) {
    out.info.dims.push_back(d.size() >= 0       ? d.size()
                            : !d.name().empty() ? NamedDim(d.name())
                                                : -1);
    int64_t n = 0;
    out.anonymous.push_back(d.size() < 0 && absl::StartsWith(d.name(), "unk__") &&
                            absl::SimpleAtoi(d.name().substr(5), &n));
  }
  return out;
}

// Fills what inference left unknown in `out` from a declared shape of the
// same rank (or the whole shape when inference knows no rank); a declared
// symbol (the exporter's `sequence`) names what inference could only derive,
// but an anonymous one (onnx's `unk__7`) says less than the derivation (a
// buffer cut to the sequence: min(64, S)) and does not replace it.
void MergeDeclared(const Declared& declared, TensorInfo& out) {
  const TensorInfo& given = declared.info;
  if (!given.known_rank) return;
  if (!out.known_rank) {
    out.known_rank = true;
    out.dims = given.dims;
    return;
  }
  if (out.dims.size() != given.dims.size()) return;
  for (size_t i = 0; i < given.dims.size(); ++i) {
    if (out.dims[i] == -1 || (out.dims[i] < 0 && given.dims[i] >= 0) ||
        (IsSymbolicDim(given.dims[i]) && !declared.anonymous[i] &&
         DerivedSymbolicDimDefinition(out.dims[i]).has_value()))
      out.dims[i] = given.dims[i];
  }
}

}  // namespace

int64_t SymbolicDim(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across builds
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return kSymbolicDimMax - static_cast<int64_t>(h >> 25);  // < 2^39 below
}

int64_t NamedDim(const std::string& name) {
  const std::vector<absl::string_view> terms = absl::StrSplit(name, '+');
  if (terms.size() < 2) return SymbolicDim(name);
  int64_t sum = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const absl::string_view term = absl::StripAsciiWhitespace(terms[i]);
    int64_t v = 0;
    if (IsDimName(term)) {
      v = SymbolicDim(std::string(term));
    } else if (!absl::SimpleAtoi(term, &v) || v < 0) {
      return SymbolicDim(name);
    }
    sum = i == 0 ? v : SumDims(sum, v);
  }
  return sum;
}

namespace {

// Definitions of the derived symbols made so far. A symbol's definition is
// a function of its value, so what is found does not depend on the order
// graphs were analysed in; past the cap (far beyond what graphs make) new
// symbols are not recorded and merely reason less.
struct DerivedDims {
  absl::Mutex mu;
  absl::flat_hash_map<int64_t, DerivedDim> definitions ABSL_GUARDED_BY(mu);
};
DerivedDims& Derived() {
  static auto* derived = new DerivedDims;
  return *derived;
}
constexpr size_t kMaxDerivedDims = size_t{1} << 20;

}  // namespace

int64_t DerivedSymbolicDim(const std::string& function, const std::vector<int64_t>& args) {
  std::string name = function + "(";
  for (size_t i = 0; i < args.size(); ++i) name += (i ? "," : "") + std::to_string(args[i]);
  const int64_t d = SymbolicDim(name + ")");
  DerivedDims& derived = Derived();
  absl::MutexLock lock(&derived.mu);
  if (derived.definitions.size() < kMaxDerivedDims)
    derived.definitions.try_emplace(d, DerivedDim{function, args});
  return d;
}

std::optional<DerivedDim> DerivedSymbolicDimDefinition(int64_t d) {
  if (!IsSymbolicDim(d)) return std::nullopt;
  DerivedDims& derived = Derived();
  absl::MutexLock lock(&derived.mu);
  auto it = derived.definitions.find(d);
  if (it == derived.definitions.end()) return std::nullopt;
  return it->second;
}

bool TensorInfo::fully_known() const {
  return known_rank && std::all_of(dims.begin(), dims.end(),
                                   [](int64_t d) { return d >= 0; });
}

int64_t TensorInfo::num_elements() const {
  if (!fully_known()) return -1;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

int64_t TensorInfo::bytes() const {
  int64_t n = num_elements();
  if (n < 0) return -1;
  if (dtype == tf::DT_RESOURCE || dtype == tf::DT_VARIANT) return 0;
  return TensorBytes(BaseType(dtype), n);
}

std::string TensorInfo::ShapeString() const {
  if (!known_rank) return "<unknown>";
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

const TensorInfo& ShapeMap::at(Endpoint t) const {
  if (t.node < 0 || t.node >= static_cast<NodeId>(outputs_.size()) ||
      t.port < 0 || t.port >= static_cast<int>(outputs_[t.node].size())) {
    return unknown_;
  }
  return outputs_[t.node][t.port];
}

int ShapeMap::num_outputs(NodeId id) const {
  return id < static_cast<NodeId>(outputs_.size())
             ? static_cast<int>(outputs_[id].size())
             : 0;
}

std::vector<Endpoint> ShapeMap::Unknown(const Graph& graph) const {
  std::vector<Endpoint> out;
  graph.ForEachNode([&](const Node& n) {
    for (int p = 0; p < num_outputs(n.id()); ++p) {
      if (!outputs_[n.id()][p].fully_known()) out.push_back({n.id(), p});
    }
  });
  return out;
}

absl::Status ShapeMap::CheckSignatures() const {
  if (mismatched_.empty()) return absl::OkStatus();
  constexpr size_t kShown = 5;
  std::vector<std::string> lines;
  for (const auto& [id, message] : mismatched_) {
    if (lines.size() == kShown) {
      lines.push_back(
          absl::StrCat("... and ", mismatched_.size() - kShown, " more"));
      break;
    }
    lines.push_back(message);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      mismatched_.size(), " node(s) do not match their op: ",
      absl::StrJoin(lines, "; ")));
}

namespace {

bool SameInfo(const TensorInfo& a, const TensorInfo& b) {
  return a.dtype == b.dtype && a.known_rank == b.known_rank &&
         a.dims == b.dims && a.value == b.value;
}

class Inferrer {
 public:
  Inferrer(const Graph& graph, const ShapeOptions& options,
           std::vector<std::vector<TensorInfo>>* out,
           std::map<NodeId, std::string>* mismatched)
      : graph_(graph),
        options_(options),
        out_(*out),
        mismatched_(*mismatched) {}

  void Run(const std::vector<NodeId>& order) {
    for (NodeId id : order) InferNode(graph_.node(id));
  }

  // Infers `id` again; whether any output changed.
  bool Reinfer(NodeId id) {
    std::vector<TensorInfo> before = std::move(out_[id]);
    const Node& n = graph_.node(id);
    if (n.alive()) {
      InferNode(n);
    } else {
      out_[id].clear();
      mismatched_.erase(id);
    }
    const std::vector<TensorInfo>& after = out_[id];
    if (before.size() != after.size()) return true;
    for (size_t i = 0; i < after.size(); ++i) {
      if (!SameInfo(before[i], after[i])) return true;
    }
    return false;
  }

  void OnlyAttrs() {
    graph_.ForEachNode(
        [&](const Node& n) { InferNode(n, /*attrs_only=*/true); });
  }

 private:
  void InferNode(const Node& n, bool attrs_only = false) {
    const Dialect& dialect = DialectOf(graph_);
    const bool onnx = dialect.name() == "onnx";  // its shape functions
    std::optional<std::vector<tf::DataType>> types =
        dialect.OutputTypes(graph_, n, [&](Endpoint e) {
          if (!e.valid() || e.node >= static_cast<NodeId>(out_.size()) ||
              e.port >= static_cast<int>(out_[e.node].size()))
            return tf::DT_INVALID;
          return out_[e.node][e.port].dtype;
        });
    // `_output_types`: what the exporter knew (an ATen graph's, from
    // torch.export), where the signature leaves them open.
    if (const tf::AttrValue* given = n.attr("_output_types"); given != nullptr && !types) {
      types.emplace();
      for (int t : given->list().type()) types->push_back(static_cast<tf::DataType>(t));
      types->resize(std::max<size_t>(types->size(), n.num_used_ports()), tf::DT_INVALID);
    }
    int count = types ? static_cast<int>(types->size()) : n.num_used_ports();
    std::vector<TensorInfo>& out = out_[n.id()];
    out.assign(count, TensorInfo());
    // A shape function reads a node as its op's signature says it is; a
    // node that says otherwise (ConcatV2 with `N: 1` and three inputs) is
    // left unknown and named, never guessed at.
    std::vector<ValidationIssue> issues = SignatureIssues(graph_, n);
    if (issues.empty()) {
      mismatched_.erase(n.id());
    } else {
      std::vector<std::string> messages;
      for (const ValidationIssue& issue : issues)
        messages.push_back(issue.message);
      mismatched_[n.id()] = absl::StrJoin(messages, "; ");
      attrs_only = true;
    }
    if (!attrs_only && count > 0) {
      if (ShapeFn infer = FindShapeFunction(n.op(), onnx))
        infer(ShapeInputs(graph_, out_), n, out);
    }
    for (int p = 0; p < count; ++p) {
      if (types) out[p].dtype = (*types)[p];
    }
    // An ONNX model's value_info: what the exporter knew (symbolic
    // dimensions by name); kept where inference knows less.
    if (dialect.has_value_names()) {
      for (int p = 0; p < count; ++p) MergeDeclared(DeclaredShape(graph_, Endpoint{n.id(), p}), out[p]);
    }
    // `_output_shapes`: what the exporter knew; kept where inference knows
    // less.
    if (const tf::AttrValue* shapes = n.attr("_output_shapes")) {
      for (int p = 0; p < count && p < shapes->list().shape_size(); ++p) {
        TensorInfo given = FromShapeProto(shapes->list().shape(p));
        if (!given.known_rank) continue;
        if (!out[p].known_rank || out[p].dims.size() != given.dims.size()) {
          given.dtype = out[p].dtype;
          given.value = out[p].value;
          out[p] = given;
          continue;
        }
        for (size_t i = 0; i < given.dims.size(); ++i) {
          if (out[p].dims[i] < 0) out[p].dims[i] = given.dims[i];
        }
      }
    }
    if (n.op() == "Placeholder" && !out.empty()) GivenShape(n, &out[0]);
    // The value of a fully known int tensor of rank <= 1 from Shape math.
    for (TensorInfo& t : out) {
      if (t.value && t.fully_known() &&
          t.num_elements() != static_cast<int64_t>(t.value->size())) {
        t.value.reset();
      }
    }
  }

  // The shape the options give a Placeholder, or its batch dimension.
  void GivenShape(const Node& n, TensorInfo* t) const {
    auto it = options_.input_shapes.find(n.name());
    if (it != options_.input_shapes.end()) {
      t->known_rank = true;
      t->dims = it->second;
    } else if (options_.batch > 0 && t->known_rank && !t->dims.empty() &&
               t->dims[0] < 0) {
      t->dims[0] = options_.batch;
    }
  }

  const Graph& graph_;
  const ShapeOptions& options_;
  std::vector<std::vector<TensorInfo>>& out_;
  std::map<NodeId, std::string>& mismatched_;
};

}  // namespace

absl::Status ParseInputShape(const std::string& text, ShapeOptions* options) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input shape `", text, "`: expected name=dims (as in x=1,224,224,3)"));
  }
  std::vector<int64_t> dims;
  std::string list = text.substr(eq + 1);
  if (!list.empty()) {
    for (absl::string_view d : absl::StrSplit(list, ',')) {
      int64_t v = 0;
      const bool symbol = IsDimName(d);
      if (d == "?") {
        v = -1;
      } else if (symbol) {  // a named size, the same wherever the name is given
        v = SymbolicDim(std::string(d));
      } else if (!absl::SimpleAtoi(d, &v) || v < -1 || v > (int64_t{1} << 40)) {
        return absl::InvalidArgumentError(
            absl::StrCat("input shape `", text, "`: `", d,
                         "` is not a dimension (a size, a name, or ? or -1)"));
      }
      dims.push_back(v);
    }
  }
  if (dims.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("input shape `", text, "`: more than 64 dimensions"));
  }
  options->input_shapes[text.substr(0, eq)] = std::move(dims);
  return absl::OkStatus();
}

absl::Status CheckInputShapes(const Graph& graph, const ShapeOptions& options) {
  for (const auto& [name, dims] : options.input_shapes) {
    const Node* n = graph.FindNode(name);
    if (n == nullptr || n->op() != "Placeholder") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-shape: `", name, "` is not a Placeholder of the graph"));
    }
    // A shape that contradicts the one the graph states (its rank, or a
    // size it fixes) is a mistake, not a refinement.
    const tf::AttrValue* stated = n->attr("shape");
    if (stated == nullptr || !stated->has_shape() || stated->shape().unknown_rank()) continue;
    const tf::TensorShapeProto& shape = stated->shape();
    std::vector<std::string> want;
    for (const auto& d : shape.dim()) want.push_back(d.size() >= 0 ? absl::StrCat(d.size()) : "?");
    bool contradicts = shape.dim_size() != static_cast<int>(dims.size());
    for (int i = 0; !contradicts && i < shape.dim_size(); ++i)
      contradicts = shape.dim(i).size() >= 0 && dims[i] >= 0 && shape.dim(i).size() != dims[i];
    if (contradicts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-shape: `", name, "` is [", absl::StrJoin(want, ", "),
          "] in the graph; the shape given contradicts it"));
    }
  }
  return absl::OkStatus();
}

std::string SharedSizesHint(const Graph& graph, const ShapeOptions& options) {
  if (!options.input_shapes.empty()) return "";
  std::vector<std::string> args;
  std::map<std::string, std::string> owner;  // a symbol -> the input it is in
  bool shared = false;
  graph.ForEachNode([&](const Node& n) {
    const tf::AttrValue* shape = n.attr("shape");
    if (n.op() != "Placeholder" || shape == nullptr) return;
    std::vector<std::string> dims;
    bool symbolic = false;
    for (int i = 0; i < shape->shape().dim_size(); ++i) {
      const tf::TensorShapeProto::Dim& d = shape->shape().dim(i);
      if (d.size() >= 0 || d.name().empty()) {
        dims.push_back(d.size() >= 0 ? absl::StrCat(d.size()) : "?");
        continue;
      }
      symbolic = true;
      auto [it, fresh] = owner.emplace(d.name(), n.name());
      shared = shared || (!fresh && it->second != n.name());
      dims.push_back(i == 0 ? "batch" : i == 1 ? "sequence" : absl::StrCat("d", i));
    }
    if (symbolic)
      args.push_back(absl::StrCat("--input-shape ", n.name(), "=", absl::StrJoin(dims, ",")));
  });
  if (shared || args.size() < 2) return "";
  return absl::StrCat(
      "the inputs name every unknown dimension apart (as tf2onnx writes them), so nothing "
      "shows they share sizes and fusions that need equal shapes do not apply; if they "
      "share them, say so (equal names, equal sizes): ",
      absl::StrJoin(args, " "));
}

size_t UpdateShapes(const Graph& graph, const ShapeOptions& options,
                    const std::vector<NodeId>& touched, ShapeMap* map) {
  map->outputs_.resize(graph.id_limit());
  Inferrer inferrer(graph, options, &map->outputs_, &map->mismatched_);
  // A worklist by level, the longest chain of changed nodes seen to reach
  // a node from the edits: a node waits for the changed producers before
  // it, and one reached again by a longer chain after it was redone is
  // redone again, so none is left stale (rewrites add nodes with ids above
  // their readers', so an order by id redid a reader once per changed path
  // reaching it). The work is what changed and its readers: a rewrite that
  // keeps shapes costs its own nodes, however much lies downstream of them
  // (ranking everything downstream first made a training graph's
  // rewrites, each upstream of the whole backward pass, quadratic). A
  // cycle's back edge is redone at most kMaxVisits times.
  constexpr int kMaxVisits = 64;
  std::set<std::pair<size_t, NodeId>> work;
  absl::flat_hash_map<NodeId, size_t> queued;  // a node's level in `work`
  absl::flat_hash_map<NodeId, int> visits;
  auto enqueue = [&](NodeId id, size_t level) {
    auto it = queued.find(id);
    if (it != queued.end()) {
      if (it->second >= level) return;
      work.erase({it->second, id});
      it->second = level;
    } else {
      queued.emplace(id, level);
    }
    work.insert({level, id});
  };
  for (NodeId id : touched) enqueue(id, 0);
  size_t redone = 0;
  while (!work.empty()) {
    const auto [level, id] = *work.begin();
    work.erase(work.begin());
    queued.erase(id);
    if (id < 0 || id >= graph.id_limit() || ++visits[id] > kMaxVisits) continue;
    ++redone;
    if (!inferrer.Reinfer(id)) continue;
    const Node& n = graph.node(id);
    if (!n.alive()) continue;
    for (int p = 0; p < n.num_used_ports(); ++p) {
      for (InputSlot s : n.consumers(p)) enqueue(s.node, level + 1);
    }
  }
  return redone;
}

namespace {

// ConcatV2's inputs: the same rank, and the same size on every axis but the
// concatenated one, where known.
void ConcatConflict(const Node& n, const ShapeMap& shapes,
                    std::vector<std::pair<NodeId, std::string>>* out) {
  const std::optional<std::vector<int64_t>>& axis_value =
      shapes.at(n.input(n.num_inputs() - 1)).value;
  const TensorInfo& first = shapes.at(n.input(0));
  if (!axis_value || axis_value->size() != 1 || !first.known_rank) return;
  int64_t rank = static_cast<int64_t>(first.dims.size());
  int64_t axis = (*axis_value)[0] < 0 ? (*axis_value)[0] + rank : (*axis_value)[0];
  for (int i = 1; i < n.num_inputs() - 1; ++i) {
    const TensorInfo& t = shapes.at(n.input(i));
    if (!t.known_rank) continue;
    bool conflict = static_cast<int64_t>(t.dims.size()) != rank;
    for (int64_t j = 0; !conflict && j < rank; ++j) {
      conflict = j != axis && first.dims[j] >= 0 && t.dims[j] >= 0 &&
                 first.dims[j] != t.dims[j];
    }
    if (conflict) {
      out->push_back({n.id(), absl::StrCat("`", n.name(), "` (ConcatV2): input ",
                                           i, " is ", t.ShapeString(),
                                           ", input 0 ", first.ShapeString(),
                                           ", concatenated on axis ", axis)});
      return;
    }
  }
}

}  // namespace

std::vector<std::pair<NodeId, std::string>> ShapeConflicts(
    const Graph& graph, const ShapeMap& shapes) {
  std::vector<std::pair<NodeId, std::string>> out;
  graph.ForEachNode([&](const Node& n) {
    if (n.num_inputs() < 2 || shapes.mismatched().count(n.id())) return;
    if (n.op() == "ConcatV2") {
      ConcatConflict(n, shapes, &out);
      return;
    }
    if (absl::StartsWith(n.op(), "FusedBatchNorm") &&
        !absl::StrContains(n.op(), "Grad")) {
      // 4-D (NHWC, NCHW), or 5-D with a 3-D data format.
      const TensorInfo& x = shapes.at(n.input(0));
      size_t rank = AttrString(n, "data_format", "NHWC").size() == 5 ? 5 : 4;
      if (x.known_rank && x.dims.size() != rank) {
        out.push_back({n.id(), absl::StrCat("`", n.name(), "` (", n.op(),
                                            "): its input is ", x.ShapeString(),
                                            "; it takes rank ", rank)});
      }
      return;
    }
    const TensorInfo& a = shapes.at(n.input(0));
    const TensorInfo& b = shapes.at(n.input(1));
    if (!a.known_rank || !b.known_rank) return;
    auto conflict = [&](int64_t x, int64_t y, const std::string& what) {
      if (x < 0 || y < 0 || x == y) return;
      out.push_back({n.id(), absl::StrCat("`", n.name(), "` (", n.op(),
                                          "): ", what, " differ: ", x, " and ",
                                          y, " (shapes ", a.ShapeString(),
                                          " and ", b.ShapeString(), ")")});
    };
    const std::string& op = n.op();
    if (op == "MatMul" && a.dims.size() == 2 && b.dims.size() == 2) {
      conflict(a.dims[AttrBool(n, "transpose_a", false) ? 0 : 1],
               b.dims[AttrBool(n, "transpose_b", false) ? 1 : 0], "inner dimensions");
    } else if ((op == "BatchMatMul" || op == "BatchMatMulV2" ||
                op == "BatchMatMulV3") &&
               a.dims.size() >= 2 && b.dims.size() >= 2) {
      conflict(a.dims[a.dims.size() - (AttrBool(n, "adj_x", false) ? 2 : 1)],
               b.dims[b.dims.size() - (AttrBool(n, "adj_y", false) ? 1 : 2)],
               "inner dimensions");
    } else if (op == "BiasAdd" && b.dims.size() == 1 && !a.dims.empty()) {
      bool nchw = AttrString(n, "data_format", "NHWC") == std::string("NCHW") &&
                  a.dims.size() > 1;
      conflict(a.dims[nchw ? 1 : a.dims.size() - 1], b.dims[0],
               "the channels and the bias length");
    } else if (op == "Conv2D" && a.dims.size() == 4 && b.dims.size() == 4) {
      bool nchw = AttrString(n, "data_format", "NHWC") == std::string("NCHW");
      int64_t channels = a.dims[nchw ? 1 : 3];
      // Grouped convolutions: the input's channels a multiple of the
      // filter's.
      if (channels >= 0 && b.dims[2] > 0 && channels % b.dims[2] == 0) return;
      conflict(channels, b.dims[2], "the input's and the filter's channels");
    }
  });
  return out;
}

bool IsFedInput(const Node& n, const ShapeMap& shapes) {
  return n.op() == "Placeholder" &&
         shapes.at({n.id(), 0}).dtype != tf::DT_RESOURCE;
}

ShapeMap InferShapes(const Graph& graph, const ShapeOptions& options) {
  ShapeMap map;
  map.outputs_.resize(graph.id_limit());
  Inferrer inferrer(graph, options, &map.outputs_, &map.mismatched_);
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(graph);
  if (order.ok()) {
    inferrer.Run(*order);
  } else {
    inferrer.OnlyAttrs();
  }
  return map;
}

}  // namespace graft::analysis
