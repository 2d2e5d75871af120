#include "analysis/cost.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/files.h"
#include "engine/op_registry.h"
#include "yaml-cpp/yaml.h"

namespace graft::analysis {

namespace {

absl::Status At(const std::string& origin, const YAML::Mark& mark,
                const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(
      origin, ":", mark.line + 1, ":", mark.column + 1, ": ", message));
}

absl::Status ReadRates(const std::string& origin, const YAML::Node& node,
                       std::map<std::string, double>* out) {
  if (!node) return absl::OkStatus();
  if (!node.IsMap())
    return At(origin, node.Mark(), "expected `dtype: TFLOP/s` entries");
  for (const auto& kv : node) {
    try {
      (*out)[kv.first.as<std::string>()] = kv.second.as<double>();
    } catch (const YAML::Exception&) {
      return At(origin, kv.second.Mark(), "expected a number");
    }
  }
  return absl::OkStatus();
}

std::string DimsText(const std::vector<int64_t>& d) {
  return absl::StrCat("[", absl::StrJoin(d, ","), "]");
}

const std::set<std::string>& NoKernel() {
  static const std::set<std::string> ops = {"Const",
                                            "Placeholder",
                                            "_Absent",  // an optional input left out
                                            "PlaceholderWithDefault",
                                            "NoOp",
                                            "Identity",
                                            "IdentityN",
                                            "VarHandleOp",
                                            "ReadVariableOp",
                                            "VarIsInitializedOp",
                                            "Reshape",
                                            "ExpandDims",
                                            "Squeeze",
                                            "Shape",
                                            "ShapeN",
                                            "Size",
                                            "Rank",
                                            "StopGradient",
                                            "Snapshot",
                                            "BroadcastGradientArgs"};
  return ops;
}

// PyTorch's ATen ops that run on matrix units (the aten dialect).
bool IsAtenMatrixOp(const std::string& op) {
  static const std::set<std::string> kOps = {
      "aten.conv1d.default", "aten.conv2d.default", "aten.conv3d.default",
      "aten.convolution.default", "aten.linear.default", "aten.mm.default",
      "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default", "aten.matmul.default"};
  return kOps.count(op) > 0;
}

// ATen's fused attention (scaled_dot_product_attention and the kernels it
// dispatches to), forward only.
bool IsAtenAttentionOp(const std::string& op) {
  return (op.rfind("aten._scaled_dot_product_", 0) == 0 ||
          op == "aten.scaled_dot_product_attention.default") &&
         op.find("backward") == std::string::npos;
}

// Attention's two products, q k^T and then by v: q [.., L, E], k [.., S, E],
// v [.., S, Ev]; -1 when a shape is unknown.
double AttentionFlops(const TensorInfo& q, const TensorInfo& k,
                      const TensorInfo& v) {
  if (!q.fully_known() || !k.fully_known() || !v.fully_known() ||
      q.dims.size() < 2 || k.dims.size() < 2 || v.dims.empty())
    return -1;
  double rows = 1;  // .. x L
  for (size_t i = 0; i + 1 < q.dims.size(); ++i) rows *= static_cast<double>(q.dims[i]);
  double s = static_cast<double>(k.dims[k.dims.size() - 2]);
  return 2 * rows * s * static_cast<double>(q.dims.back() + v.dims.back());
}

}  // namespace

bool UsesMatrixUnits(const std::string& op) {
  return IsAtenMatrixOp(op) || IsAtenAttentionOp(op) || op.rfind("Conv2D", 0) == 0 ||
         op.rfind("DepthwiseConv2dNative", 0) == 0 || op == "MatMul" ||
         op == "Conv" || op == "ConvInteger" || op == "Gemm" ||
         op == "BatchMatMul" || op == "BatchMatMulV2";
}

absl::StatusOr<DeviceProfile> ParseDeviceProfile(const std::string& text,
                                                 const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return At(origin, e.mark, e.msg);
  }
  if (!root.IsMap())
    return At(origin, root.Mark(), "expected a device profile (a mapping)");
  DeviceProfile p;
  static const std::set<std::string> kKeys = {"name",
                                              "kind",
                                              "peak_tflops",
                                              "vector_tflops",
                                              "memory_bandwidth_gbps",
                                              "memory_gib",
                                              "host_bandwidth_gbps",
                                              "launch_overhead_us",
                                              "measured"};
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (!kKeys.count(key))
      return At(origin, kv.first.Mark(),
                absl::StrCat("unknown key `", key, "`"));
  }
  try {
    p.name = root["name"] ? root["name"].as<std::string>() : "";
    p.kind = root["kind"] ? root["kind"].as<std::string>() : "gpu";
    for (auto [key, field] :
         {std::pair{"memory_bandwidth_gbps", &p.memory_bandwidth_gbps},
          std::pair{"memory_gib", &p.memory_gib},
          std::pair{"host_bandwidth_gbps", &p.host_bandwidth_gbps},
          std::pair{"launch_overhead_us", &p.launch_overhead_us}}) {
      if (root[key]) *field = root[key].as<double>();
    }
  } catch (const YAML::Exception& e) {
    return At(origin, e.mark, "expected a number");
  }
  absl::Status s = ReadRates(origin, root["peak_tflops"], &p.peak_tflops);
  if (s.ok()) s = ReadRates(origin, root["vector_tflops"], &p.vector_tflops);
  if (!s.ok()) return s;
  if (p.name.empty())
    return At(origin, root.Mark(), "the profile has no `name`");
  if (p.memory_bandwidth_gbps <= 0 || p.peak_tflops.empty()) {
    return At(origin, root.Mark(),
              "the profile needs `peak_tflops` and `memory_bandwidth_gbps`");
  }
  if (const YAML::Node& m = root["measured"]) {
    if (!m.IsSequence())
      return At(origin, m.Mark(), "expected a list of `{key, time_us}`");
    for (const auto& entry : m) {
      if (!entry["key"] || !entry["time_us"]) {
        return At(origin, entry.Mark(),
                  "a measurement needs `key` and `time_us`");
      }
      try {
        p.measured_us[entry["key"].as<std::string>()] =
            entry["time_us"].as<double>();
      } catch (const YAML::Exception& e) {
        return At(origin, entry.Mark(),
                  "expected `key: text` and `time_us: number`");
      }
    }
  }
  return p;
}

std::vector<std::string> DeviceProfileNames() {
  std::vector<std::string> names;
  for (const auto& [file, text] : EmbeddedProfiles())
    names.push_back(file.substr(0, file.rfind('.')));
  return names;
}

absl::StatusOr<DeviceProfile> LoadDeviceProfile(
    const std::string& name_or_path) {
  auto it = EmbeddedProfiles().find(name_or_path + ".yaml");
  if (it != EmbeddedProfiles().end())
    return ParseDeviceProfile(it->second, "devices/" + it->first);
  absl::StatusOr<std::string> text =
      ReadFileBytes(name_or_path, kMaxTextFileBytes, "a device profile (YAML)");
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat(
        "no device profile `", name_or_path, "` (shipped: ",
        absl::StrJoin(DeviceProfileNames(), ", "), "; or a YAML file)"));
  }
  if (!text.ok()) return text.status();
  return ParseDeviceProfile(*text, name_or_path);
}

std::string ConvKey(const std::vector<int64_t>& x,
                    const std::vector<int64_t>& w,
                    const std::vector<int64_t>& strides,
                    const std::string& padding, const std::string& format) {
  return absl::StrCat("Conv2D x=", DimsText(x), " w=", DimsText(w),
                      " strides=", DimsText(strides), " ", padding, " ",
                      format);
}

std::string MatMulKey(const std::vector<int64_t>& a,
                      const std::vector<int64_t>& b, bool ta, bool tb) {
  return absl::StrCat("MatMul a=", DimsText(a), " b=", DimsText(b),
                      " ta=", ta ? 1 : 0, " tb=", tb ? 1 : 0);
}

std::string MeasurementKey(const ShapeMap& shapes, const Node& n) {
  if (n.num_inputs() < 2) return "";
  const TensorInfo &a = shapes.at(n.input(0)), &b = shapes.at(n.input(1));
  if (!a.fully_known() || !b.fully_known()) return "";
  auto attr_s = [&](const char* k, const char* d) {
    const tf::AttrValue* v = n.attr(k);
    return v ? v->s() : std::string(d);
  };
  auto attr_b = [&](const char* k) {
    const tf::AttrValue* v = n.attr(k);
    return v != nullptr && v->b();
  };
  if (n.op() == "Conv2D") {
    std::vector<int64_t> strides;
    if (const tf::AttrValue* s = n.attr("strides"))
      strides.assign(s->list().i().begin(), s->list().i().end());
    return ConvKey(a.dims, b.dims, strides, attr_s("padding", "SAME"),
                   attr_s("data_format", "NHWC"));
  }
  if (n.op() == "MatMul")
    return MatMulKey(a.dims, b.dims, attr_b("transpose_a"),
                     attr_b("transpose_b"));
  return "";
}

double Flops(const ShapeMap& shapes, const Node& n) {
  const std::string& op = n.op();
  // Reads by what the node has: a missing input is an unknown tensor.
  auto in = [&](int i) -> const TensorInfo& {
    return shapes.at(i < n.num_inputs() ? n.input(i) : Endpoint{kNoNode, 0});
  };
  const TensorInfo& out = shapes.at({n.id(), 0});
  auto prod = [](const std::vector<int64_t>& d, size_t from = 0,
                 size_t to = SIZE_MAX) {
    double p = 1;
    for (size_t i = from; i < std::min(to, d.size()); ++i)
      p *= static_cast<double>(d[i]);
    return p;
  };
  if (NoKernel().count(op)) return 0;
  if (op == "Conv2D" || op == "DepthwiseConv2dNative") {
    const TensorInfo& w = in(1);
    if (!out.fully_known() || !w.fully_known() || w.dims.size() != 4) return -1;
    double per_output =
        w.dims[0] * w.dims[1] * (op == "Conv2D" ? w.dims[2] : 1);
    return 2 * prod(out.dims) * per_output;
  }
  if (op == "Conv2DBackpropInput" || op == "Conv2DBackpropFilter" ||
      op == "DepthwiseConv2dNativeBackpropInput" ||
      op == "DepthwiseConv2dNativeBackpropFilter") {
    // As many as the forward conv: out_backprop (input 2) times the window.
    bool input_grad = op.find("Input") != std::string::npos;
    const TensorInfo& dy = in(2);
    const TensorInfo& w = input_grad ? in(1) : out;
    if (!dy.fully_known() || !w.fully_known() || w.dims.size() != 4) return -1;
    bool depthwise = op.rfind("Depthwise", 0) == 0;
    return 2 * prod(dy.dims) * w.dims[0] * w.dims[1] *
           (depthwise ? 1 : w.dims[2]);
  }
  // ONNX's: Conv's filter is [M, C/group, k...] (each output reads the
  // rest of it); Gemm's op(A) is [M, K]; BatchNormalization is counted with
  // FusedBatchNorm below.
  if (op == "Conv" || op == "ConvInteger") {
    const TensorInfo& w = in(1);
    if (!out.fully_known() || !w.fully_known() || w.dims.size() < 3) return -1;
    return 2 * prod(out.dims) * prod(w.dims, 1);
  }
  // ATen's (torch.utils.flop_counter's counts): a convolution's filter is
  // [M, C/group, k...]; linear's weight [N, K]; mm, addmm, bmm, baddbmm and
  // matmul multiply [.., M, K] by [.., K, N] (addmm's and baddbmm's
  // matrices are inputs 1 and 2).
  if (op == "aten.conv1d.default" || op == "aten.conv2d.default" ||
      op == "aten.conv3d.default" || op == "aten.convolution.default") {
    const TensorInfo& w = in(1);
    const tf::AttrValue* transposed = n.attr("transposed");
    if (transposed != nullptr && transposed->b()) {  // each input reads the whole window
      const TensorInfo& x = in(0);
      if (!x.fully_known() || !w.fully_known() || w.dims.size() < 3) return -1;
      return 2 * prod(x.dims) * prod(w.dims, 1);
    }
    if (!out.fully_known() || !w.fully_known() || w.dims.size() < 3) return -1;
    return 2 * prod(out.dims) * prod(w.dims, 1);
  }
  if (IsAtenAttentionOp(op)) return AttentionFlops(in(0), in(1), in(2));
  if (IsAtenMatrixOp(op)) {
    const bool bias_first = op == "aten.addmm.default" || op == "aten.baddbmm.default";
    const TensorInfo& a = in(bias_first ? 1 : 0);
    if (!out.fully_known() || !a.fully_known() || a.dims.empty()) return -1;
    return 2 * prod(out.dims) * static_cast<double>(a.dims.back());
  }
  if (op == "Gemm") {
    const TensorInfo& a = in(0);
    if (!out.fully_known() || !a.fully_known() || a.dims.size() != 2) return -1;
    const tf::AttrValue* ta = n.attr("transA");
    return 2 * prod(out.dims) * a.dims[ta != nullptr && ta->i() ? 0 : 1];
  }
  if (op == "MatMul" || op == "BatchMatMul" || op == "BatchMatMulV2") {
    const TensorInfo& a = in(0);
    if (!out.fully_known() || !a.fully_known() || a.dims.size() < 2) return -1;
    bool ta = n.attr("transpose_a")
                  ? n.attr("transpose_a")->b()
                  : (n.attr("adj_x") != nullptr && n.attr("adj_x")->b());
    double k = static_cast<double>(a.dims[a.dims.size() - (ta ? 2 : 1)]);
    return 2 * prod(out.dims) * k;
  }
  if (op.rfind("FusedBatchNorm", 0) == 0 || op == "BatchNormalization" ||
      op == "aten.batch_norm.default" ||
      op == "aten._native_batch_norm_legit_no_training.default") {
    const TensorInfo& x = in(op.find("Grad") != std::string::npos ? 1 : 0);
    return x.fully_known() ? 8 * prod(x.dims) : -1;
  }
  if (op == "Softmax" || op == "LogSoftmax" ||
      op.find("SoftmaxCrossEntropy") != std::string::npos) {
    const TensorInfo& x = in(0);
    return x.fully_known() ? 5 * prod(x.dims) : -1;
  }
  if (op == "MaxPool" || op == "AvgPool" || op == "MaxPoolGrad" ||
      op == "AvgPoolGrad") {
    const tf::AttrValue* k = n.attr("ksize");
    const TensorInfo& y = op.find("Grad") != std::string::npos
                              ? in(op == "MaxPoolGrad" ? 2 : 1)
                              : out;
    if (!y.fully_known() || k == nullptr) return -1;
    double window = 1;
    for (int64_t v : k->list().i()) window *= static_cast<double>(v);
    return prod(y.dims) * window;
  }
  static const std::set<std::string> kReductions = {
      "Mean", "Sum", "Max", "Min", "Prod", "BiasAddGrad"};
  if (kReductions.count(op)) return in(0).fully_known() ? prod(in(0).dims) : -1;
  // Element-wise and everything else: one per output element.
  double total = 0;
  for (int p = 0; p < shapes.num_outputs(n.id()); ++p) {
    const TensorInfo& t = shapes.at({n.id(), p});
    if (!t.fully_known()) return -1;
    total += prod(t.dims);
  }
  return total;
}

NodeCost RooflineModel::Cost(const Graph& graph, const ShapeMap& shapes,
                             NodeId id) const {
  const Node& n = graph.node(id);
  NodeCost c;
  if (NoKernel().count(n.op())) {
    c.bound = "none";
    return c;
  }
  for (Endpoint e : n.inputs()) {
    // An optional input left out (ONNX's and ATen's `_Absent`) reads nothing.
    if (e.node == kNoNode || graph.node(e.node).op() == "_Absent") continue;
    int64_t b = shapes.at(e).bytes();
    if (b < 0)
      c.known = false;
    else
      c.bytes_read += static_cast<double>(b);
  }
  for (int p = 0; p < shapes.num_outputs(id); ++p) {
    int64_t b = shapes.at({id, p}).bytes();
    if (b < 0)
      c.known = false;
    else
      c.bytes_written += static_cast<double>(b);
  }
  c.flops = Flops(shapes, n);
  if (c.flops < 0) {
    c.known = false;
    c.flops = 0;
  }
  std::string key = MeasurementKey(shapes, n);
  if (auto it = profile_.measured_us.find(key);
      !key.empty() && it != profile_.measured_us.end()) {
    c.time_us = it->second;
    c.bound = "measured";
    return c;
  }
  std::optional<std::vector<tf::DataType>> types =
      OpRegistry::For(graph).OutputTypes(n);
  std::string dtype = types && !types->empty()
                          ? DataTypeName(BaseType((*types)[0]))
                          : "float32";
  const auto& rates =
      UsesMatrixUnits(n.op()) ? profile_.peak_tflops : profile_.vector_tflops;
  auto rate = rates.find(dtype);
  if (rate == rates.end()) rate = rates.find("float32");
  double compute_us = rate != rates.end() && rate->second > 0
                          ? c.flops / (rate->second * 1e6)
                          : 0;
  double memory_us =
      (c.bytes_read + c.bytes_written) / (profile_.memory_bandwidth_gbps * 1e3);
  c.bound = compute_us >= memory_us ? "compute" : "memory";
  c.time_us = std::max(compute_us, memory_us) + profile_.launch_overhead_us;
  return c;
}

StepTime EstimateStepTime(const Graph& graph, const ShapeMap& shapes,
                          const RooflineModel& model,
                          const std::vector<NodeId>& schedule,
                          const std::string& default_device) {
  auto device_of = [&](NodeId id) {
    const std::string& d = graph.node(id).device();
    return d.empty() ? default_device : d;
  };
  StepTime out;
  std::vector<double> done(graph.id_limit(), 0);
  double compute = 0, transfer = 0;
  double gbps = model.profile().host_bandwidth_gbps;
  for (NodeId id : schedule) {
    const Node& n = graph.node(id);
    double ready = 0;
    for (Endpoint e : n.inputs()) {
      if (e.valid()) ready = std::max(ready, done[e.node]);
    }
    for (NodeId c : n.control_inputs()) {
      if (c != kNoNode) ready = std::max(ready, done[c]);
    }
    bool copy = n.op() == "Identity" && n.num_inputs() == 1 &&
                n.input(0).valid() &&
                device_of(n.input(0).node) != device_of(id);
    if (copy) {
      double bytes = std::max<int64_t>(shapes.at(n.input(0)).bytes(), 0);
      double us = gbps > 0 ? bytes / (gbps * 1e3) : 0;
      ++out.copies;
      out.copy_us += us;
      out.serial_us += us;
      transfer = std::max(transfer, ready) + us;
      done[id] = transfer;
    } else {
      double us = model.Cost(graph, shapes, id).time_us;
      out.serial_us += us;
      compute = std::max(compute, ready) + us;
      done[id] = compute;
    }
  }
  out.overlapped_us = std::max(compute, transfer);
  return out;
}

}  // namespace graft::analysis
