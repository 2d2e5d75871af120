#include "analysis/shapes.h"

#include <algorithm>
#include <functional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/schedule.h"
#include "analysis/shape_functions.h"
#include "engine/const_tensor.h"
#include "engine/op_registry.h"

namespace graft::analysis {

bool TensorInfo::fully_known() const {
  return known_rank && std::all_of(dims.begin(), dims.end(),
                                   [](int64_t d) { return d >= 0; });
}

int64_t TensorInfo::num_elements() const {
  if (!fully_known()) return -1;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t TensorInfo::bytes() const {
  int64_t n = num_elements();
  int64_t size = DataTypeSize(BaseType(dtype));
  if (n < 0 ||
      (size == 0 && dtype != tf::DT_RESOURCE && dtype != tf::DT_VARIANT))
    return -1;
  return n * size;
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

namespace {

class Inferrer {
 public:
  Inferrer(const Graph& graph, std::vector<std::vector<TensorInfo>>* out)
      : graph_(graph), out_(*out) {}

  void Run(const std::vector<NodeId>& order) {
    for (NodeId id : order) InferNode(graph_.node(id));
  }

  void OnlyAttrs() {
    graph_.ForEachNode(
        [&](const Node& n) { InferNode(n, /*attrs_only=*/true); });
  }

 private:
  void InferNode(const Node& n, bool attrs_only = false) {
    std::optional<std::vector<tf::DataType>> types =
        OpRegistry::Tensorflow().OutputTypes(n);
    int count = types ? static_cast<int>(types->size()) : n.num_used_ports();
    std::vector<TensorInfo>& out = out_[n.id()];
    out.assign(count, TensorInfo());
    if (!attrs_only && count > 0) {
      if (ShapeFn infer = FindShapeFunction(n.op()))
        infer(ShapeInputs(graph_, out_), n, out);
    }
    for (int p = 0; p < count; ++p) {
      if (types) out[p].dtype = (*types)[p];
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
    // The value of a fully known int tensor of rank <= 1 from Shape math.
    for (TensorInfo& t : out) {
      if (t.value && t.fully_known() &&
          t.num_elements() != static_cast<int64_t>(t.value->size())) {
        t.value.reset();
      }
    }
  }

  const Graph& graph_;
  std::vector<std::vector<TensorInfo>>& out_;
};

}  // namespace

ShapeMap InferShapes(const Graph& graph) {
  ShapeMap map;
  map.outputs_.resize(graph.id_limit());
  Inferrer inferrer(graph, &map.outputs_);
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(graph);
  if (order.ok()) {
    inferrer.Run(*order);
  } else {
    inferrer.OnlyAttrs();
  }
  return map;
}

}  // namespace graft::analysis
