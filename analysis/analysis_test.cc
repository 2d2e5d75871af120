#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/kernel_scratch.h"
#include "analysis/memory.h"
#include "analysis/regions.h"
#include "analysis/schedule.h"
#include "analysis/shapes.h"
#include "engine/test_graphs.h"
#include "gtest/gtest.h"

namespace graft::analysis {
namespace {

using ::graft::testing::GraphFromText;
using ::graft::testing::Id;

using ::graft::testing::IntConstNode;
using ::graft::testing::OpNode;
using ::graft::testing::PlaceholderNode;

std::string Shape(const Graph& g, const ShapeMap& s, const std::string& node,
                  int port = 0) {
  return s.at({Id(g, node), port}).ShapeString();
}

TEST(ShapesTest, ConvolutionsAndTheirGradients) {
  const std::string conv_attrs =
      " attr { key: \"strides\" value { list { i: 1 i: 2 i: 2 i: 1 } } }"
      " attr { key: \"padding\" value { s: \"SAME\" } }";
  const std::string pool_attrs =
      " attr { key: \"ksize\" value { list { i: 1 i: 3 i: 3 i: 1 } } }"
      " attr { key: \"strides\" value { list { i: 1 i: 2 i: 2 i: 1 } } }"
      " attr { key: \"padding\" value { s: \"VALID\" } }";
  Graph g = GraphFromText(
      PlaceholderNode("x", {8, 33, 32, 3}) +
      PlaceholderNode("w", {3, 3, 3, 16}) +
      PlaceholderNode("dw", {5, 5, 3, 2}) +
      OpNode("conv", "Conv2D", {"x", "w"}, conv_attrs) +
      OpNode("valid", "Conv2D", {"x", "w"},
             " attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } }"
             " attr { key: \"padding\" value { s: \"VALID\" } }") +
      OpNode("depthwise", "DepthwiseConv2dNative", {"x", "dw"}, conv_attrs) +
      IntConstNode("in_sizes", {8, 33, 32, 3}) +
      IntConstNode("w_sizes", {3, 3, 3, 16}) +
      OpNode("dx", "Conv2DBackpropInput", {"in_sizes", "w", "conv"},
             conv_attrs) +
      OpNode("dwt", "Conv2DBackpropFilter", {"x", "w_sizes", "conv"},
             conv_attrs) +
      OpNode("pool", "MaxPool", {"conv"}, pool_attrs) +
      OpNode("pool_grad", "MaxPoolGrad", {"conv", "pool", "pool"},
             pool_attrs) +
      OpNode("bias_grad", "BiasAddGrad", {"conv"}));
  ShapeMap s = InferShapes(g);
  EXPECT_TRUE(s.CheckSignatures().ok()) << s.CheckSignatures();
  EXPECT_EQ(Shape(g, s, "conv"), "[8, 17, 16, 16]");
  EXPECT_EQ(Shape(g, s, "valid"), "[8, 31, 30, 16]");
  EXPECT_EQ(Shape(g, s, "depthwise"), "[8, 17, 16, 6]");
  EXPECT_EQ(Shape(g, s, "dx"), "[8, 33, 32, 3]");
  EXPECT_EQ(Shape(g, s, "dwt"), "[3, 3, 3, 16]");
  EXPECT_EQ(Shape(g, s, "pool"), "[8, 8, 7, 16]");
  EXPECT_EQ(Shape(g, s, "pool_grad"), "[8, 17, 16, 16]");
  EXPECT_EQ(Shape(g, s, "bias_grad"), "[16]");
  EXPECT_EQ(s.at({Id(g, "conv"), 0}).bytes(), 8 * 17 * 16 * 16 * 4);
}

TEST(ShapesTest, MatMulBroadcastReductionsAndShapeArithmetic) {
  Graph g = GraphFromText(
      PlaceholderNode("a", {32, 64}) + PlaceholderNode("b", {10, 64}) +
      PlaceholderNode("bias", {10}) +
      OpNode("mm", "MatMul", {"a", "b"},
             " attr { key: \"transpose_b\" value { b: true } }") +
      OpNode("add", "AddV2", {"mm", "bias"}) +
      "node { name: \"s0\" op: \"Shape\" input: \"add\" attr { key: \"T\" "
      "value { type: DT_FLOAT } } }\n"
      "node { name: \"s1\" op: \"Shape\" input: \"bias\" attr { key: \"T\" "
      "value { type: DT_FLOAT } } }\n"
      "node { name: \"args\" op: \"BroadcastGradientArgs\" input: \"s0\" "
      "input: \"s1\" attr { key: \"T\" value { type: DT_INT32 } } }\n"
      "node { name: \"sum\" op: \"Sum\" input: \"add\" input: \"args:1\" attr "
      "{ key: \"T\" value { type: DT_FLOAT } } attr { key: \"Tidx\" value { "
      "type: DT_INT32 } } }\n"
      "node { name: \"back\" op: \"Reshape\" input: \"sum\" input: \"s1\" attr "
      "{ key: \"T\" value { type: DT_FLOAT } } attr { key: \"Tshape\" value { "
      "type: DT_INT32 } } }\n" +
      IntConstNode("flat_shape", {-1}) +
      "node { name: \"flat\" op: \"Reshape\" input: \"mm\" input: "
      "\"flat_shape\" attr { key: \"T\" value { type: DT_FLOAT } } attr { key: "
      "\"Tshape\" value { type: DT_INT32 } } }\n" +
      IntConstNode("axes", {1}) +
      "node { name: \"mean\" op: \"Mean\" input: \"mm\" input: \"axes\" attr { "
      "key: \"T\" value { type: DT_FLOAT } } attr { key: \"Tidx\" value { "
      "type: DT_INT32 } } attr { key: \"keep_dims\" value { b: true } } }\n"
      "node { name: \"xent\" op: \"SoftmaxCrossEntropyWithLogits\" input: "
      "\"mm\" input: \"mm\" attr { key: \"T\" value { type: DT_FLOAT } } }\n" +
      PlaceholderNode("unknown", {-1, 10}) + OpNode("u", "Relu", {"unknown"}));
  ShapeMap s = InferShapes(g);
  EXPECT_EQ(Shape(g, s, "mm"), "[32, 10]");
  EXPECT_EQ(Shape(g, s, "add"), "[32, 10]");
  EXPECT_EQ(s.at({Id(g, "args"), 1}).value, (std::vector<int64_t>{0}));
  EXPECT_EQ(Shape(g, s, "sum"), "[10]");
  EXPECT_EQ(Shape(g, s, "back"), "[10]");
  EXPECT_EQ(Shape(g, s, "flat"), "[320]");
  EXPECT_EQ(Shape(g, s, "mean"), "[32, 1]");
  EXPECT_EQ(Shape(g, s, "xent", 0), "[32]");
  EXPECT_EQ(Shape(g, s, "xent", 1), "[32, 10]");
  // An unknown batch stays unknown: never guessed.
  EXPECT_EQ(Shape(g, s, "u"), "[?, 10]");
  EXPECT_EQ(s.at({Id(g, "u"), 0}).bytes(), -1);
  EXPECT_EQ(s.Unknown(g).size(), 2u);
}

// tf.nn.dropout's RandomUniform and a Keras initializer's stateless random
// values take their shape from their first input; tf.gradients' Pad
// gradient slices by a known size from a begin computed at run time.
TEST(ShapesTest, RandomOpsAndSlicesOfAComputedBegin) {
  Graph g = GraphFromText(
      IntConstNode("shape", {2, 3}) + IntConstNode("seed", {1, 2}) +
      "node { name: \"uniform\" op: \"RandomUniform\" input: \"shape\" "
      "attr { key: \"T\" value { type: DT_INT32 } } attr { key: \"dtype\" "
      "value { type: DT_FLOAT } } }\n"
      "node { name: \"kc\" op: \"StatelessRandomGetKeyCounter\" input: "
      "\"seed\" attr { key: \"Tseed\" value { type: DT_INT32 } } }\n" +
      IntConstNode("alg", {1}) +
      "node { name: \"normal\" op: \"StatelessRandomNormalV2\" input: "
      "\"shape\" input: \"kc\" input: \"kc:1\" input: \"alg\" attr { "
      "key: \"Tshape\" value { type: DT_INT32 } } attr { key: \"dtype\" "
      "value { type: DT_FLOAT } } }\n" +
      PlaceholderNode("x", {4, 6}) +
      "node { name: \"begin\" op: \"Placeholder\" attr { key: \"dtype\" "
      "value { type: DT_INT32 } } attr { key: \"shape\" value { shape { dim "
      "{ size: 2 } } } } }\n" +
      IntConstNode("size", {2, 3}) + IntConstNode("rest", {2, -1}) +
      "node { name: \"slice\" op: \"Slice\" input: \"x\" input: \"begin\" "
      "input: \"size\" attr { key: \"T\" value { type: DT_FLOAT } } attr { "
      "key: \"Index\" value { type: DT_INT32 } } }\n"
      "node { name: \"slice_rest\" op: \"Slice\" input: \"x\" input: "
      "\"begin\" input: \"rest\" attr { key: \"T\" value { type: DT_FLOAT "
      "} } attr { key: \"Index\" value { type: DT_INT32 } } }\n");
  ShapeMap s = InferShapes(g);
  EXPECT_EQ(Shape(g, s, "uniform"), "[2, 3]");
  EXPECT_EQ(s.at({Id(g, "uniform"), 0}).bytes(), 2 * 3 * 4);
  EXPECT_EQ(Shape(g, s, "kc", 0), "[1]");
  EXPECT_EQ(Shape(g, s, "kc", 1), "[2]");
  EXPECT_EQ(Shape(g, s, "normal"), "[2, 3]");
  EXPECT_EQ(Shape(g, s, "slice"), "[2, 3]");
  // A size of -1 needs the begin: left unknown, never guessed.
  EXPECT_EQ(Shape(g, s, "slice_rest"), "[2, ?]");
}

TEST(ShapesTest, BatchNormGradientsAndOutputShapesAttrs) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {4, 8, 8, 16}) + PlaceholderNode("c", {16}) +
      OpNode("bn", "FusedBatchNormV3", {"x", "c", "c", "c", "c"},
             " attr { key: \"U\" value { type: DT_FLOAT } } attr { "
             "key: \"is_training\" value { b: true } }") +
      OpNode("bn_grad", "FusedBatchNormGradV3",
             {"bn", "x", "c", "bn:3", "bn:4", "bn:5"},
             " attr { key: \"U\" value { type: DT_FLOAT } }") +
      "node { name: \"opaque\" op: \"SomeCustomOp\" attr { key: "
      "\"_output_shapes\" value { list { shape { dim { size: 2 } "
      "dim { size: 3 } } } } } }\n");
  ShapeMap s = InferShapes(g);
  EXPECT_EQ(Shape(g, s, "bn", 0), "[4, 8, 8, 16]");
  EXPECT_EQ(Shape(g, s, "bn", 1), "[16]");
  EXPECT_EQ(Shape(g, s, "bn", 5),
            "<unknown>");  // TensorFlow does not know it either
  EXPECT_EQ(Shape(g, s, "bn_grad", 0), "[4, 8, 8, 16]");
  EXPECT_EQ(Shape(g, s, "bn_grad", 2), "[16]");
  EXPECT_EQ(Shape(g, s, "bn_grad", 3), "[0]");
}

// A chain of N ReLU layers and its hand-written backward pass:
//   h_i = Relu(h_{i-1}), loss = Sum(h_N), g_N = OnesLike(h_N),
//   g_{i-1} = ReluGrad(g_i, h_i).
// Every h and g is [B, D] float32, s = 4·B·D bytes. The peak is at
// g_{N-1} = ReluGrad(g_N, h_N), which writes into g_N's buffer (its last
// reader, as TensorFlow's kernel does): h_1..h_N and g_{N-1} are live, plus
// the fetched 4-byte loss: (N + 1)·s + 4. (No h is handed over: each is read
// by the next layer and by its gradient, and h_0 is fed.)
std::string Chain(int n, int b, int d) {
  std::string text = PlaceholderNode("h0", {b, d});
  for (int i = 1; i <= n; ++i)
    text +=
        OpNode("h" + std::to_string(i), "Relu", {"h" + std::to_string(i - 1)});
  text += IntConstNode("axes", {0, 1});
  text += "node { name: \"loss\" op: \"Sum\" input: \"h" + std::to_string(n) +
          "\" input: \"axes\" attr { key: \"T\" value { type: DT_FLOAT } } "
          "attr { key: \"Tidx\" value { type: DT_INT32 } } }\n";
  text +=
      "node { name: \"shape\" op: \"Shape\" input: \"loss\" attr { key: \"T\" "
      "value { type: DT_FLOAT } } }\n";
  text +=
      "node { name: \"one\" op: \"Const\" attr { key: \"dtype\" value { type: "
      "DT_FLOAT } } attr { key: \"value\" value { tensor { dtype: DT_FLOAT "
      "tensor_shape { } float_val: 1 } } } }\n";
  text +=
      "node { name: \"seed\" op: \"Fill\" input: \"shape\" input: \"one\" attr "
      "{ key: \"T\" value { type: DT_FLOAT } } }\n";
  text +=
      "node { name: \"g" + std::to_string(n) +
      "\" op: \"OnesLike\" input: \"h" + std::to_string(n) +
      "\" input: \"^seed\" attr { key: \"T\" value { type: DT_FLOAT } } }\n";
  for (int i = n; i >= 1; --i) {
    text += OpNode("g" + std::to_string(i - 1), "ReluGrad",
                   {"g" + std::to_string(i), "h" + std::to_string(i)});
  }
  return text;
}

TEST(MemoryTest, ChainPeakMatchesTheFormula) {
  const int b = 16, d = 32;
  const int64_t s = 4 * b * d;
  for (int n : {1, 2, 5, 10}) {
    Graph g = GraphFromText(Chain(n, b, d));
    ShapeMap shapes = InferShapes(g);
    MemoryOptions options;
    options.outputs = {"g0", "loss"};
    absl::StatusOr<MemoryReport> m = SimulateMemory(g, shapes, options);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_EQ(m->devices.size(), 1u);
    EXPECT_EQ(m->devices[0].peak_bytes, (n + 1) * s + 4) << "N = " << n;
    EXPECT_EQ(m->devices[0].live_at_peak.size(), static_cast<size_t>(n + 2))
        << "N = " << n;
    EXPECT_EQ(m->unknown_tensors, 0);
    // The constants are persistent: 8 bytes of axes, 4 of `one`.
    EXPECT_EQ(m->devices[0].persistent_bytes, 12);
  }
}

// With fetched outputs only what they need runs, as in a TensorFlow
// session: a branch no fetch reads (a gradient no optimizer applies)
// allocates nothing and does not keep its inputs alive. Without fetches
// every node runs.
TEST(MemoryTest, OnlyWhatTheFetchesNeedRuns) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {256}) +  // 1 KiB each
      OpNode("a", "Relu", {"x"}) + OpNode("dead", "Neg", {"a"}) +
      OpNode("dead_id", "Identity", {"dead"}) + OpNode("b", "Relu", {"a"}) +
      OpNode("c", "Mul", {"b", "b"}) + OpNode("after", "NoOp", {"^c"}));
  ShapeMap shapes = InferShapes(g);
  MemoryOptions all;
  all.threads = 1;  // one op at a time: `dead` waits on the stack
  absl::StatusOr<MemoryReport> m = SimulateMemory(g, shapes, all);
  ASSERT_TRUE(m.ok()) << m.status();
  const int64_t everything = m->devices[0].peak_bytes;
  MemoryOptions fetch;
  fetch.threads = 1;
  fetch.outputs = {"after"};
  m = SimulateMemory(g, shapes, fetch);
  ASSERT_TRUE(m.ok()) << m.status();
  // Two of x, a, b, c at a time: each is freed when the next has read it
  // (b takes a's buffer over; c reads b twice, so writes a buffer of its
  // own). Run, `dead` keeps a to the end: a, b and c at once.
  EXPECT_EQ(m->devices[0].peak_bytes, 2 * 1024);
  EXPECT_EQ(everything, 3 * 1024);
  for (Endpoint t : m->devices[0].live_at_peak)
    EXPECT_NE(g.node(t.node).name().substr(0, 4), "dead");
}

// IdentityN (Keras 3's optimizers pass every gradient through one) hands
// each input on as its output: no buffer of its own.
TEST(MemoryTest, IdentityNSharesEachInputsBuffer) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {256}) +  // 1 KiB each
      OpNode("a", "Relu", {"x"}) + OpNode("b", "Neg", {"x"}) +
      "node { name: \"n\" op: \"IdentityN\" input: \"a\" input: \"b\" "
      "attr { key: \"T\" value { list { type: DT_FLOAT type: DT_FLOAT } } } "
      "}\n" +
      OpNode("c", "AddV2", {"n", "n:1"}) + OpNode("d", "Neg", {"c"}));
  ShapeMap shapes = InferShapes(g);
  MemoryOptions one;
  one.threads = 1;
  one.outputs = {"d"};
  absl::StatusOr<MemoryReport> m = SimulateMemory(g, shapes, one);
  ASSERT_TRUE(m.ok()) << m.status();
  // x, a and b at once; counting n's outputs as buffers of their own
  // would put a, b and both outputs at once when n runs: four.
  EXPECT_EQ(m->devices[0].peak_bytes, 3 * 1024);
}

// TensorFlow's elementwise kernels, BiasAdd and AddN write their output
// into an input they are the last reader of (forward_input_or_allocate_
// output): not into a fed input, one they read twice, or a fetched one.
TEST(MemoryTest, ElementwiseOpsWriteIntoTheInputTheyReadLast) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {4, 64}) +  // 1 KiB
      PlaceholderNode("bias", {64}) + OpNode("m", "Neg", {"x"}) +
      OpNode("b", "BiasAdd", {"m", "bias"}) + OpNode("r", "Relu", {"b"}) +
      OpNode("s", "Mul", {"r", "r"}) + OpNode("f", "Relu", {"s"}) +
      OpNode("kept", "Relu", {"f"}));
  MemoryOptions options;
  options.threads = 1;
  options.outputs = {"f", "kept"};
  absl::StatusOr<MemoryReport> m = SimulateMemory(g, InferShapes(g), options);
  ASSERT_TRUE(m.ok()) << m.status();
  std::map<std::string, bool> handed_over;
  for (const TensorLife& t : m->tensors)
    handed_over[g.node(t.tensor.node).name()] = t.handed_over;
  EXPECT_FALSE(handed_over["x"]);  // fed
  EXPECT_TRUE(handed_over["m"]);   // into b
  EXPECT_TRUE(handed_over["b"]);   // into r
  EXPECT_FALSE(handed_over["r"]);  // read twice by s
  EXPECT_TRUE(handed_over["s"]);   // into f
  EXPECT_FALSE(handed_over["f"]);  // fetched
  // x, m and the bias at once, then one or two tensors at a time.
  EXPECT_EQ(m->devices[0].peak_bytes, 2 * 1024 + 256);
}

// An Identity shares its input's buffer on one device; on another device it
// is a copy with its own buffer there (a swap to the host), and unplaced
// ops count on the default device.
TEST(MemoryTest, IdentityOnAnotherDeviceIsACopy) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {256}) +  // 1 KiB
      OpNode("r", "Relu", {"x"}) + OpNode("same", "Identity", {"r"}) +
      OpNode("host", "Identity", {"r"}, " device: \"/device:CPU:0\"") +
      OpNode("back", "Identity", {"host"}, " device: \"/device:GPU:0\"") +
      OpNode("out", "AddN", {"same", "back"},
             " attr { key: \"N\" value { i: 2 } }"));
  MemoryOptions options;
  options.default_device = "/device:GPU:0";
  absl::StatusOr<MemoryReport> m = SimulateMemory(g, InferShapes(g), options);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->devices.size(), 2u);
  EXPECT_EQ(m->devices[0].device, "/device:CPU:0");
  EXPECT_EQ(m->devices[0].peak_bytes, 1024);  // the copy on the host
  EXPECT_EQ(m->devices[1].device, "/device:GPU:0");
  // x, r (with `same`, its alias), `back` (a copy back), out: r and back
  // live at once at the end, out written into back's buffer (its last
  // reader), x freed after r.
  EXPECT_EQ(m->devices[1].peak_bytes, 2 * 1024);
}

// A TF1 while loop: x is Relu'd while i < 3. The back edges
// (NextIteration -> Merge) make a cycle; the schedule cuts them.
TEST(ScheduleTest, LoopsOfTf1ControlFlowSchedule) {
  auto op = [](const std::string& name, const std::string& type,
               std::vector<std::string> inputs,
               const std::string& dtype = "DT_FLOAT") {
    std::string in;
    for (const std::string& i : inputs) in += " input: \"" + i + "\"";
    return "node { name: \"" + name + "\" op: \"" + type + "\"" + in +
           " attr { key: \"T\" value { type: " + dtype +
           " } }"
           " attr { key: \"frame_name\" value { s: \"loop\" } }" +
           (type == "Merge" ? " attr { key: \"N\" value { i: 2 } }" : "") +
           " }\n";
  };
  std::string text =
      PlaceholderNode("x", {2}) +
      "node { name: \"i0\" op: \"Const\" attr { key: \"dtype\" value { type: "
      "DT_INT32 } } "
      "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { } "
      "int_val: 0 } } } }\n"
      "node { name: \"limit\" op: \"Const\" attr { key: \"dtype\" value { "
      "type: DT_INT32 } } "
      "attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { } "
      "int_val: 3 } } } }\n" +
      op("enter_i", "Enter", {"i0"}, "DT_INT32") +
      op("enter_x", "Enter", {"x"}) +
      op("enter_limit", "Enter", {"limit"}, "DT_INT32") +
      op("merge_i", "Merge", {"enter_i", "next_i"}, "DT_INT32") +
      op("merge_x", "Merge", {"enter_x", "next_x"}) +
      op("less", "Less", {"merge_i", "enter_limit"}, "DT_INT32") +
      "node { name: \"cond\" op: \"LoopCond\" input: \"less\" }\n" +
      op("switch_i", "Switch", {"merge_i", "cond"}, "DT_INT32") +
      op("switch_x", "Switch", {"merge_x", "cond"}) +
      op("exit_x", "Exit", {"switch_x"}) +
      op("body_i", "AddV2", {"switch_i:1", "switch_i:1"}, "DT_INT32") +
      op("body_x", "Relu", {"switch_x:1"}) +
      op("next_i", "NextIteration", {"body_i"}, "DT_INT32") +
      op("next_x", "NextIteration", {"body_x"}) +
      op("out", "Identity", {"exit_x"});
  Graph g = GraphFromText(text);
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(g);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_EQ(order->size(), static_cast<size_t>(g.num_nodes()));
  ShapeMap shapes = InferShapes(g);
  EXPECT_TRUE(shapes.CheckSignatures().ok()) << shapes.CheckSignatures();
  EXPECT_EQ(Shape(g, shapes, "merge_x"), "[2]");
  EXPECT_EQ(Shape(g, shapes, "switch_x", 1), "[2]");
  EXPECT_EQ(Shape(g, shapes, "next_x"), "[2]");
  EXPECT_EQ(Shape(g, shapes, "out"), "[2]");
  EXPECT_TRUE(SimulateMemory(g, shapes).ok());
  // A cycle that is not a loop's back edge is still an error.
  Graph cyclic =
      GraphFromText(OpNode("a", "Relu", {"b"}) + OpNode("b", "Relu", {"a"}));
  EXPECT_EQ(ExecutorOrder(cyclic).status().message(),
            "the graph has a cycle: 2 node(s) never become ready");
}

// TensorFlow runs inexpensive kernels (a Shape, a constant) inline as soon
// as they are ready; a Shape of a forward tensor does not keep it alive
// until the stack unwinds.
TEST(ScheduleTest, InexpensiveOpsRunWhenReady) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {1024}) + OpNode("a", "Relu", {"x"}) +
      OpNode("shape", "Shape", {"a"}) + OpNode("b", "Relu", {"a"}) +
      OpNode("c", "Relu", {"b"}) + OpNode("d", "Relu", {"c"}) +
      OpNode("out", "AddN", {"d", "shape"}));
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(g);
  ASSERT_TRUE(order.ok()) << order.status();
  std::vector<std::string> names;
  for (NodeId id : *order) names.push_back(g.node(id).name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "a", "shape", "b", "c", "d",
                                             "out"}));
}

// An op whose outputs nothing reads (a weight's update waiting for the
// input gradient that reads the weight) runs once it is ready, as the
// executor's thread pool runs it, not below what its siblings make ready on
// the stack: it only frees what it reads (`wgrad` here, the weight's
// gradient), which would otherwise live to the end of the pass.
TEST(ScheduleTest, AnOpNoOneReadsRunsWhenReady) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {1024}) + OpNode("grad", "Relu", {"x"}) +
      OpNode("input_grad", "Relu", {"grad"}) +
      OpNode("wgrad", "Tanh", {"grad"}) +
      OpNode("update", "Neg", {"wgrad", "^input_grad"}) +
      OpNode("id", "Identity", {"input_grad"}) + OpNode("next", "Relu", {"id"}) +
      OpNode("next2", "Relu", {"next"}) + OpNode("out", "Relu", {"next2"}) +
      OpNode("loss", "AddN", {"out", "x"}));
  for (int threads : {1, 2}) {
    absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(g, threads);
    ASSERT_TRUE(order.ok()) << order.status();
    std::vector<std::string> names;
    for (NodeId id : *order) names.push_back(g.node(id).name());
    auto step = [&](const char* name) {
      return std::find(names.begin(), names.end(), name) - names.begin();
    };
    EXPECT_LT(step("update"), step("next")) << threads;
  }
}

// With two threads, the expensive ops an op makes ready at once (a
// concatenation's gradient read by two Slices) run together, as
// TensorFlow's thread pool runs them: the gradient dies before either
// branch descends, and the branches go on side by side. One thread descends
// the last one's branch first.
TEST(ScheduleTest, SiblingsTheThreadPoolRunsAtOnceRunTogether) {
  const std::string branches =
      PlaceholderNode("x", {1024}) + OpNode("grad", "Relu", {"x"}) +
      OpNode("left", "Relu", {"grad"}) + OpNode("right", "Tanh", {"grad"}) +
      OpNode("left2", "Relu", {"left"}) + OpNode("right2", "Relu", {"right"}) +
      OpNode("out", "AddN", {"left2", "right2"});
  Graph g = GraphFromText(branches);
  auto names = [&](int threads) {
    absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(g, threads);
    std::vector<std::string> out;
    if (order.ok()) {
      for (NodeId id : *order) out.push_back(g.node(id).name());
    }
    return out;
  };
  EXPECT_EQ(names(1), (std::vector<std::string>{"x", "grad", "right", "right2",
                                                "left", "left2", "out"}));
  // each thread goes on with its sibling's branch while the other runs
  EXPECT_EQ(names(2), (std::vector<std::string>{"x", "grad", "left", "right",
                                                "left2", "right2", "out"}));
  ShapeMap shapes = InferShapes(g);
  MemoryOptions one, two;
  one.threads = 1;
  two.threads = 2;
  absl::StatusOr<MemoryReport> m1 = SimulateMemory(g, shapes, one);
  absl::StatusOr<MemoryReport> m2 = SimulateMemory(g, shapes, two);
  ASSERT_TRUE(m1.ok() && m2.ok());
  EXPECT_EQ(m2->threads, 2);
  // `grad` is freed once both siblings have run, before their branches.
  EXPECT_LT(m2->step_of[g.FindId("right")], m2->step_of[g.FindId("right2")]);
  EXPECT_LT(m2->step_of[g.FindId("left")], m2->step_of[g.FindId("right2")]);
  EXPECT_GT(m1->step_of[g.FindId("left")], m1->step_of[g.FindId("right2")]);
  // Readers that are not made ready with them, one inexpensive (a Shape),
  // one waiting for another input (a residual's gradient sum, beside a
  // weight's and an input's gradient), leave the two running together.
  Graph h = GraphFromText(branches + OpNode("shape", "Shape", {"grad"}) +
                          OpNode("sum", "AddN", {"grad", "left2"}));
  absl::StatusOr<std::vector<NodeId>> h2 = ExecutorOrder(h, 2);
  ASSERT_TRUE(h2.ok()) << h2.status();
  auto step = [&](const char* name) {
    return std::find(h2->begin(), h2->end(), h.FindId(name)) - h2->begin();
  };
  EXPECT_LT(step("left"), step("right2"));
  EXPECT_LT(step("right"), step("left2"));
  EXPECT_NE(*h2, *ExecutorOrder(h, 1));
}

// A thread goes on with its sibling's branch through the inexpensive ops it
// runs inline: a weight's gradient, through an Identity, on to its update
// beside the input gradient's branch, not after it.
TEST(ScheduleTest, ASiblingGoesOnThroughInlineOps) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {1024}) + OpNode("grad", "Relu", {"x"}) +
      OpNode("input_grad", "Relu", {"grad"}) +
      OpNode("weight_grad", "Tanh", {"grad"}) +
      OpNode("named", "Identity", {"weight_grad"}) +
      OpNode("update", "Neg", {"named"}) +
      OpNode("next1", "Relu", {"input_grad"}) +
      OpNode("next2", "Relu", {"next1"}) + OpNode("next3", "Relu", {"next2"}) +
      OpNode("out", "AddN", {"next3", "update"}));
  absl::StatusOr<std::vector<NodeId>> order = ExecutorOrder(g, 2);
  ASSERT_TRUE(order.ok()) << order.status();
  auto step = [&](const char* name) {
    return std::find(order->begin(), order->end(), g.FindId(name)) -
           order->begin();
  };
  EXPECT_LT(step("update"), step("next2"));
}

std::string ConvGradAttrs(int stride) {
  return absl::StrCat(
      " attr { key: \"strides\" value { list { i: 1 i: ", stride, " i: ",
      stride, " i: 1 } } } attr { key: \"padding\" value { s: \"SAME\" } }");
}

// The im2col buffers of Eigen's convolution gradients, as TensorFlow 2.21
// without oneDNN allocates them (its allocation records: 19906560 and
// 25362432 bytes for these filter gradients).
TEST(KernelScratchTest, EigenConvolutionGradients) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {8, 64, 64, 3}) +
      PlaceholderNode("dy", {8, 64, 64, 16}) +
      IntConstNode("w_sizes", {3, 3, 3, 16}) +
      OpNode("dw", "Conv2DBackpropFilter", {"x", "w_sizes", "dy"},
             ConvGradAttrs(1)) +
      PlaceholderNode("x2", {8, 32, 32, 16}) +
      PlaceholderNode("dy2", {8, 32, 32, 32}) +
      IntConstNode("w2_sizes", {3, 3, 16, 32}) +
      OpNode("dw2", "Conv2DBackpropFilter", {"x2", "w2_sizes", "dy2"},
             ConvGradAttrs(1)) +
      // One image per step where each thread has enough work in it.
      IntConstNode("in_sizes", {8, 64, 64, 16}) +
      PlaceholderNode("w", {3, 3, 16, 16}) +
      OpNode("dx", "Conv2DBackpropInput", {"in_sizes", "w", "dy"},
             ConvGradAttrs(1)) +
      // Otherwise as many images as fill 30 MiB.
      IntConstNode("small_sizes", {8, 16, 16, 32}) +
      PlaceholderNode("w3", {3, 3, 32, 64}) +
      PlaceholderNode("dy3", {8, 16, 16, 64}) +
      OpNode("dx3", "Conv2DBackpropInput", {"small_sizes", "w3", "dy3"},
             ConvGradAttrs(1)));
  ShapeMap s = InferShapes(g);
  auto scratch = [&](const std::string& name, CpuKernels kernels) {
    return KernelScratchBytes(g.node(Id(g, name)), s, kernels, 2);
  };
  EXPECT_EQ(scratch("dw", CpuKernels::kEigen), 19906560);
  EXPECT_EQ(scratch("dw2", CpuKernels::kEigen), 25362432);
  EXPECT_EQ(scratch("dx", CpuKernels::kEigen), 4096 * 144 * 4);
  EXPECT_EQ(scratch("dx3", CpuKernels::kEigen), 73 * 256 * 288 * 4);
  EXPECT_EQ(scratch("dw", CpuKernels::kOneDnn), 0);
  EXPECT_EQ(scratch("x", CpuKernels::kEigen), 0);
  EXPECT_TRUE(ParseCpuKernels("eigen").ok());
  EXPECT_EQ(ParseCpuKernels("mkl").status().message(),
            "cpu kernels: expected onednn or eigen, got \"mkl\"");
}

// graft mem with Eigen's kernels: a convolution's two gradients, both ready
// when its output's gradient is, run at once on two threads, their scratch
// live together; on one thread, one at a time.
TEST(MemoryTest, EigenScratchOfGradientsRunTogether) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {8, 32, 32, 16}) +
      PlaceholderNode("w", {3, 3, 16, 32}) +
      OpNode("y", "Conv2D", {"x", "w"}, ConvGradAttrs(1)) +
      OpNode("dy", "Relu", {"y"}) +
      IntConstNode("in_sizes", {8, 32, 32, 16}) +
      IntConstNode("w_sizes", {3, 3, 16, 32}) +
      OpNode("dx", "Conv2DBackpropInput", {"in_sizes", "w", "dy"},
             ConvGradAttrs(1)) +
      OpNode("dw", "Conv2DBackpropFilter", {"x", "w_sizes", "dy"},
             ConvGradAttrs(1)));
  ShapeMap s = InferShapes(g);
  MemoryOptions options;
  options.outputs = {"dx", "dw"};
  absl::StatusOr<MemoryReport> onednn = SimulateMemory(g, s, options);
  ASSERT_TRUE(onednn.ok()) << onednn.status();
  EXPECT_EQ(onednn->devices[0].scratch_at_peak, 0);
  options.cpu_kernels = CpuKernels::kEigen;
  options.threads = 1;
  absl::StatusOr<MemoryReport> one = SimulateMemory(g, s, options);
  ASSERT_TRUE(one.ok()) << one.status();
  const int64_t dx = KernelScratchBytes(g.node(Id(g, "dx")), s,
                                        CpuKernels::kEigen, 1);
  const int64_t dw = KernelScratchBytes(g.node(Id(g, "dw")), s,
                                        CpuKernels::kEigen, 1);
  const int64_t alone = one->devices[0].scratch_at_peak;
  EXPECT_TRUE(alone == dx || alone == dw) << alone;
  EXPECT_GE(one->devices[0].peak_bytes,
            onednn->devices[0].peak_bytes + std::min(dx, dw));
  EXPECT_LE(one->devices[0].peak_bytes,
            onednn->devices[0].peak_bytes + std::max(dx, dw));
  options.threads = 2;
  absl::StatusOr<MemoryReport> two = SimulateMemory(g, s, options);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->devices[0].scratch_at_peak,
            KernelScratchBytes(g.node(Id(g, "dx")), s, CpuKernels::kEigen, 2) +
                KernelScratchBytes(g.node(Id(g, "dw")), s, CpuKernels::kEigen, 2));
}

// A layer's filter gradient still runs when the input gradients reach the
// next layer's: on two threads their scratch is live together, unless the
// next one waits for it.
TEST(MemoryTest, EigenScratchOfFilterGradientsOfTwoLayers) {
  auto graph = [](bool wait) {
    return GraphFromText(
        PlaceholderNode("x", {8, 32, 32, 16}) +
        PlaceholderNode("w1", {3, 3, 16, 16}) +
        PlaceholderNode("w2", {3, 3, 16, 16}) +
        OpNode("y1", "Conv2D", {"x", "w1"}, ConvGradAttrs(1)) +
        OpNode("h", "Relu", {"y1"}) +
        OpNode("y2", "Conv2D", {"h", "w2"}, ConvGradAttrs(1)) +
        OpNode("dy2", "Relu", {"y2"}) +
        IntConstNode("in_sizes", {8, 32, 32, 16}) +
        IntConstNode("w_sizes", {3, 3, 16, 16}) +
        OpNode("dw2", "Conv2DBackpropFilter", {"h", "w_sizes", "dy2"},
               ConvGradAttrs(1)) +
        OpNode("dx2", "Conv2DBackpropInput", {"in_sizes", "w2", "dy2"},
               ConvGradAttrs(1)) +
        OpNode("dh", "Relu", {"dx2"}) +
        OpNode("dw1", "Conv2DBackpropFilter",
               wait ? std::vector<std::string>{"x", "w_sizes", "dh", "^dw2"}
                    : std::vector<std::string>{"x", "w_sizes", "dh"},
               ConvGradAttrs(1)));
  };
  MemoryOptions options;
  options.outputs = {"dw1", "dw2"};
  options.cpu_kernels = CpuKernels::kEigen;
  options.threads = 2;
  for (bool wait : {false, true}) {
    Graph g = graph(wait);
    ShapeMap s = InferShapes(g);
    auto scratch = [&](const char* name) {
      return KernelScratchBytes(g.node(Id(g, name)), s, CpuKernels::kEigen, 2);
    };
    ASSERT_GT(scratch("dw1"), scratch("dx2"));
    absl::StatusOr<MemoryReport> r = SimulateMemory(g, s, options);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->devices[0].scratch_at_peak,
              wait ? scratch("dx2") + scratch("dw2")
                   : scratch("dw1") + scratch("dw2"))
        << wait;
  }
}

TEST(RegionsTest, ForwardAndBackwardByReachability) {
  Graph g = GraphFromText(Chain(3, 2, 2));
  ShapeMap shapes = InferShapes(g);
  absl::StatusOr<Regions> r = FindRegions(g, shapes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(g.node(r->loss).name(), "loss");
  EXPECT_EQ(g.node(r->seed).name(), "seed");
  for (const char* f : {"h0", "h1", "h3", "loss", "axes"})
    EXPECT_TRUE(r->in_forward(Id(g, f))) << f;
  for (const char* b : {"seed", "g3", "g2", "g0"})
    EXPECT_TRUE(r->in_backward(Id(g, b))) << b;
  EXPECT_FALSE(r->in_backward(Id(g, "h3")));
  // h3 is read by the backward ops g3 and g2.
  std::vector<NodeId> readers = r->backward_consumers.at({Id(g, "h3"), 0});
  ASSERT_EQ(readers.size(), 2u);
  EXPECT_EQ(g.node(readers[0]).name(), "g3");
  EXPECT_EQ(g.node(readers[1]).name(), "g2");
  EXPECT_FALSE(FindRegions(g, shapes, "nope").ok());
  Graph no_seed =
      GraphFromText(PlaceholderNode("x", {2}) + OpNode("y", "Relu", {"x"}));
  EXPECT_NE(FindRegions(no_seed, InferShapes(no_seed))
                .status()
                .message()
                .find("--loss"),
            std::string::npos);
}

// Keras initializes a batch norm's scale with a Fill of ones that only the
// variable's assignment reads: an initial value, not a second seed.
TEST(RegionsTest, AVariablesInitialOnesAreNoSeed) {
  Graph g = GraphFromText(
      Chain(2, 2, 2) + IntConstNode("gamma/shape", {4}) +
      "node { name: \"gamma/ones\" op: \"Fill\" input: \"gamma/shape\" "
      "input: \"one\" attr { key: \"T\" value { type: DT_FLOAT } } }\n"
      "node { name: \"gamma\" op: \"VarHandleOp\" attr { key: \"dtype\" "
      "value { type: DT_FLOAT } } attr { key: \"shape\" value { shape { dim "
      "{ size: 4 } } } } }\n"
      "node { name: \"gamma/Assign\" op: \"AssignVariableOp\" input: "
      "\"gamma\" input: \"gamma/ones\" attr { key: \"dtype\" value { "
      "type: DT_FLOAT } } }\n");
  absl::StatusOr<Regions> r = FindRegions(g, InferShapes(g));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(g.node(r->seed).name(), "seed");
  EXPECT_EQ(g.node(r->loss).name(), "loss");
}

// A tf.function's GradientTape step: the seed is a Const of ones only the
// tape's gradient ops read; the loss is what the output Identity (waiting
// for the update through a control edge) reads.
TEST(RegionsTest, GradientTapeSeedAndLossAreFound) {
  Graph g = GraphFromText(
      PlaceholderNode("x", {4}) + OpNode("h", "Relu", {"x"}) +
      IntConstNode("axes", {0}) +
      OpNode("loss", "Sum", {"h", "axes"},
             " attr { key: \"Tidx\" value { type: DT_INT32 } }") +
      "node { name: \"ones\" op: \"Const\" attr { key: \"dtype\" value { "
      "type: DT_FLOAT } } attr { key: \"value\" value { tensor { dtype: "
      "DT_FLOAT tensor_shape { } float_val: 1 } } } }\n" +
      OpNode("gradient_tape/Sum/Fill", "Mul", {"ones", "h"}) +
      OpNode("gradient_tape/Relu/ReluGrad", "ReluGrad",
             {"gradient_tape/Sum/Fill", "h"}) +
      "node { name: \"update\" op: \"NoOp\" input: "
      "\"^gradient_tape/Relu/ReluGrad\" }\n" +
      "node { name: \"Identity\" op: \"Identity\" input: \"loss\" input: "
      "\"^update\" attr { key: \"T\" value { type: DT_FLOAT } } }\n" +
      // tf-keras's legacy Adam computes its coefficients from its variables
      // (resource placeholders) and leaves some unread: no loss
      "node { name: \"iterations\" op: \"Placeholder\" attr { key: "
      "\"dtype\" value { type: DT_RESOURCE } } attr { key: \"shape\" value "
      "{ shape { } } } }\n"
      "node { name: \"Adam/ReadVariableOp\" op: \"ReadVariableOp\" input: "
      "\"iterations\" attr { key: \"dtype\" value { type: DT_FLOAT } } "
      "attr { key: \"_output_shapes\" value { list { shape { } } } } }\n" +
      OpNode("Adam/sub_2", "Neg", {"Adam/ReadVariableOp"}));
  absl::StatusOr<Regions> r = FindRegions(g, InferShapes(g));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(g.node(r->seed).name(), "ones");
  EXPECT_EQ(g.node(r->loss).name(), "loss");
  EXPECT_TRUE(r->in_backward(Id(g, "gradient_tape/Relu/ReluGrad")));
  EXPECT_TRUE(r->in_forward(Id(g, "h")));
}

// A node whose attrs disagree with its inputs is read by no shape function:
// its outputs stay unknown and the map names it with the validator's
// message; values out of range (an axis past the rank, dims whose product
// overflows) leave what they would compute unknown.
TEST(ShapesTest, NodesThatDoNotMatchTheirOpAreNamedNotRead) {
  const std::string concat_attrs =
      " attr { key: \"Tidx\" value { type: DT_INT32 } }";
  Graph g = GraphFromText(
      PlaceholderNode("x", {2, 3}) + IntConstNode("axis", {1}) +
      IntConstNode("far", {7}) + IntConstNode("big", {1 << 30, 1 << 30}) +
      OpNode("c", "ConcatV2", {"x", "x", "axis"},
             concat_attrs + " attr { key: \"N\" value { i: 1 } }") +
      OpNode("d", "ConcatV2", {"c", "x", "axis"},
             concat_attrs + " attr { key: \"N\" value { i: 2 } }") +
      OpNode("past_rank", "ConcatV2", {"x", "x", "far"},
             concat_attrs + " attr { key: \"N\" value { i: 2 } }") +
      OpNode("t1", "Tile", {"x", "big"},
             " attr { key: \"Tmultiples\" value { type: DT_INT32 } }") +
      OpNode("t2", "Tile", {"t1", "big"},
             " attr { key: \"Tmultiples\" value { type: DT_INT32 } }") +
      OpNode("t3", "Tile", {"t2", "big"},
             " attr { key: \"Tmultiples\" value { type: DT_INT32 } }"));
  ShapeMap s = InferShapes(g);
  ASSERT_EQ(s.mismatched().size(), 1u);
  EXPECT_EQ(s.mismatched().begin()->first, Id(g, "c"));
  EXPECT_EQ(s.mismatched().begin()->second,
            "attr `N` of `c` is 1; its op wants at least 2; `c` (ConcatV2) "
            "has 3 data input(s); its op takes 2");
  absl::Status refused = s.CheckSignatures();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("1 node(s) do not match their op"),
            std::string::npos);
  EXPECT_EQ(Shape(g, s, "c"), "<unknown>");
  EXPECT_EQ(Shape(g, s, "d"), "<unknown>");  // d matches, but reads c
  EXPECT_EQ(Shape(g, s, "past_rank"), "[?, ?]");
  EXPECT_EQ(Shape(g, s, "t2"), "[2305843009213693952, 3458764513820540928]");
  EXPECT_EQ(Shape(g, s, "t3"), "[?, ?]");
  EXPECT_EQ(s.at({Id(g, "t2"), 0}).bytes(), -1);  // overflows int64
}

}  // namespace
}  // namespace graft::analysis
