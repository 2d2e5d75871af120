// Graph I/O benchmark: loads and saves a synthetic GraphDef of N nodes
// (default 1M) and prints MB/s and nodes/s for graft's load (parse + IR
// build), IR build alone and save, next to plain protobuf parse and
// serialize of the same bytes, measured in the same run.
//
//   bazel run -c opt //tests/bench:io_bench -- [NODES] [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/graph.h"
#include "dialects/graph_io.h"
#include "engine/rewriter.h"
#include "google/protobuf/arena.h"
#include "proto/graph.pb.h"

namespace graft {
namespace {

tf::AttrValue TypeAttr(tf::DataType t) {
  tf::AttrValue v;
  v.set_type(t);
  return v;
}

tf::AttrValue IntList(std::initializer_list<int> values) {
  tf::AttrValue v;
  for (int x : values) v.mutable_list()->add_i(x);
  return v;
}

tf::AttrValue Str(const std::string& s) {
  tf::AttrValue v;
  v.set_s(s);
  return v;
}

tf::NodeDef* AddNode(tf::GraphDef* g, std::string name, const char* op) {
  tf::NodeDef* n = g->add_node();
  n->set_name(std::move(name));
  n->set_op(op);
  return n;
}

// Conv blocks: w = Const, conv = Conv2D(x, w), b = Const, bias = BiasAdd,
// relu = Relu, add = AddV2(relu, x) with a control edge every 8th block.
tf::GraphDef SyntheticGraph(int num_nodes) {
  tf::GraphDef g;
  g.mutable_versions()->set_producer(1882);
  tf::NodeDef* input = AddNode(&g, "input", "Placeholder");
  (*input->mutable_attr())["dtype"] = TypeAttr(tf::DT_FLOAT);
  std::string x = "input";
  std::string weights(16 * sizeof(float), '\x3f');
  for (int block = 0; g.node_size() + 6 <= num_nodes; ++block) {
    std::string scope = absl::StrCat("model/block_", block, "/");
    tf::NodeDef* w = AddNode(&g, scope + "conv/kernel", "Const");
    (*w->mutable_attr())["dtype"] = TypeAttr(tf::DT_FLOAT);
    tf::TensorProto* t = (*w->mutable_attr())["value"].mutable_tensor();
    t->set_dtype(tf::DT_FLOAT);
    for (int d : {1, 1, 4, 4})
      t->mutable_tensor_shape()->add_dim()->set_size(d);
    t->set_tensor_content(weights);
    tf::NodeDef* conv = AddNode(&g, scope + "conv/Conv2D", "Conv2D");
    conv->add_input(x);
    conv->add_input(w->name());
    auto& ca = *conv->mutable_attr();
    ca["T"] = TypeAttr(tf::DT_FLOAT);
    ca["strides"] = IntList({1, 1, 1, 1});
    ca["dilations"] = IntList({1, 1, 1, 1});
    ca["padding"] = Str("SAME");
    ca["data_format"] = Str("NHWC");
    tf::NodeDef* b = AddNode(&g, scope + "conv/bias", "Const");
    (*b->mutable_attr())["dtype"] = TypeAttr(tf::DT_FLOAT);
    tf::TensorProto* bt = (*b->mutable_attr())["value"].mutable_tensor();
    bt->set_dtype(tf::DT_FLOAT);
    bt->mutable_tensor_shape()->add_dim()->set_size(4);
    for (int i = 0; i < 4; ++i) bt->add_float_val(0.1f * i);
    tf::NodeDef* bias = AddNode(&g, scope + "conv/BiasAdd", "BiasAdd");
    bias->add_input(conv->name());
    bias->add_input(b->name());
    (*bias->mutable_attr())["T"] = TypeAttr(tf::DT_FLOAT);
    tf::NodeDef* relu = AddNode(&g, scope + "relu", "Relu");
    relu->add_input(bias->name());
    (*relu->mutable_attr())["T"] = TypeAttr(tf::DT_FLOAT);
    tf::NodeDef* add = AddNode(&g, scope + "add", "AddV2");
    add->add_input(relu->name());
    add->add_input(x);
    if (block % 8 == 7) add->add_input("^" + w->name());
    (*add->mutable_attr())["T"] = TypeAttr(tf::DT_FLOAT);
    x = add->name();
  }
  return g;
}

// Best wall time of `repeats` runs, in seconds.
double Best(int repeats, const std::function<void()>& setup,
            const std::function<void()>& body) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    setup();
    auto start = std::chrono::steady_clock::now();
    body();
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

void Report(const char* what, double seconds, size_t bytes, int nodes,
            double baseline) {
  std::printf("%-40s %8.3f s %9.1f MB/s %12.0f nodes/s", what, seconds,
              bytes / 1e6 / seconds, nodes / seconds);
  if (baseline > 0) std::printf("   %5.2fx protobuf", seconds / baseline);
  std::printf("\n");
}

int Main(int argc, char** argv) {
  int num_nodes = argc > 1 ? std::atoi(argv[1]) : 1000000;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  tf::GraphDef synthetic = SyntheticGraph(num_nodes);
  std::string bytes;
  synthetic.SerializeToString(&bytes);
  synthetic.Clear();
  int n = 0;
  {
    tf::GraphDef probe;
    probe.ParseFromString(bytes);
    n = probe.node_size();
  }
  std::printf("synthetic GraphDef: %d nodes, %.1f MB; best of %d runs\n\n", n,
              bytes.size() / 1e6, repeats);

  // Binary load.
  tf::GraphDef parsed;
  double parse = Best(
      repeats, [&] { parsed.Clear(); }, [&] { parsed.ParseFromString(bytes); });
  Report("protobuf parse (baseline)", parse, bytes.size(), n, 0);
  double arena_parse = Best(
      repeats, [] {},
      [&] {
        google::protobuf::Arena arena;
        auto* g = google::protobuf::Arena::CreateMessage<tf::GraphDef>(&arena);
        g->ParseFromString(bytes);
      });
  Report("protobuf parse into an arena", arena_parse, bytes.size(), n, parse);

  std::string copy;
  absl::StatusOr<Graph> graph;
  double load = Best(
      repeats,
      [&] {
        graph = Graph();
        copy = bytes;
      },
      [&] {
        graph = ParseGraph(std::move(copy), GraphFormat::kBinary, "bench.pb");
      });
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
    return 1;
  }
  Report("graft load (parse + IR build)", load, bytes.size(), n, parse);
  std::printf("%-40s %8.2fx\n", "graft load / arena parse", load / arena_parse);
  if (argc > 3 && std::string(argv[3]) == "--load-only") return 0;

  tf::GraphDef to_build;
  absl::StatusOr<Graph> built;
  double ir = Best(
      repeats,
      [&] {
        built = Graph();
        to_build = parsed;
      },
      [&] { built = Graph::FromGraphDef(std::move(to_build)); });
  Report("graft IR build alone (from parsed)", ir, bytes.size(), n, parse);
  built = Graph();
  to_build.Clear();

  // Binary save.
  std::string out;
  double serialize = Best(
      repeats, [&] { out.clear(); }, [&] { parsed.SerializeToString(&out); });
  Report("protobuf serialize (baseline)", serialize, out.size(), n, 0);
  double save = Best(
      repeats, [&] { out.clear(); },
      [&] { out = SerializeGraph(*graph, GraphFormat::kBinary); });
  Report("graft save, unmodified", save, out.size(), n, serialize);
  if (out != bytes) {
    std::fprintf(stderr, "error: unmodified save is not byte-identical\n");
    return 1;
  }
  {
    Rewriter rewriter(*graph);
    for (NodeId id : graph->NodeIds())
      (void)rewriter.SetDevice(id, "/device:CPU:0");
  }
  double save_all = Best(
      repeats, [&] { out.clear(); },
      [&] { out = SerializeGraph(*graph, GraphFormat::kBinary); });
  Report("graft save, every node modified", save_all, out.size(), n, serialize);

  // Text, on a tenth of the graph (text is for small graphs and reviews).
  int text_nodes = std::max(1, n / 10);
  tf::GraphDef small = SyntheticGraph(text_nodes);
  absl::StatusOr<Graph> small_graph = Graph::FromGraphDef(small);
  std::string text = SerializeGraph(*small_graph, GraphFormat::kText);
  std::printf("\ntext GraphDef: %d nodes, %.1f MB\n", small.node_size(),
              text.size() / 1e6);
  absl::StatusOr<Graph> text_graph;
  double text_load = Best(
      repeats, [&] { text_graph = Graph(); },
      [&] {
        text_graph = ParseGraph(text, GraphFormat::kText, "bench.pbtxt");
      });
  Report("graft text load", text_load, text.size(), small.node_size(), 0);
  double text_save = Best(
      repeats, [&] { out.clear(); },
      [&] { out = SerializeGraph(*text_graph, GraphFormat::kText); });
  Report("graft text save", text_save, out.size(), small.node_size(), 0);
  return 0;
}

}  // namespace
}  // namespace graft

int main(int argc, char** argv) { return graft::Main(argc, argv); }
