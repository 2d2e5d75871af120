// Rule application benchmark: a three-rule set (tests/bench/bench_rules.graft)
// over synthetic conv/BN/relu chains of 10k, 100k and 1M nodes. Prints
// nodes/s for load, match+rewrite and save, and the scaling ratios.
//
//   bazel run -c opt //tests/bench:apply_bench -- [MAX_NODES]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "dsl/compiler.h"
#include "builtins/builtins.h"
#include "engine/driver.h"
#include "dialects/graph_io.h"
#include "proto/graph.pb.h"

namespace graft {
namespace {

tf::NodeDef* Add(tf::GraphDef* g, std::string name, const char* op) {
  tf::NodeDef* n = g->add_node();
  n->set_name(std::move(name));
  n->set_op(op);
  return n;
}

void SetFloat(tf::NodeDef* n) {
  (*n->mutable_attr())["T"].set_type(tf::DT_FLOAT);
}

tf::NodeDef* AddConst(tf::GraphDef* g, const std::string& name,
                      std::vector<int> shape, float value) {
  tf::NodeDef* c = Add(g, name, "Const");
  (*c->mutable_attr())["dtype"].set_type(tf::DT_FLOAT);
  tf::TensorProto* t = (*c->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tf::DT_FLOAT);
  int n = 1;
  for (int d : shape) {
    t->mutable_tensor_shape()->add_dim()->set_size(d);
    n *= d;
  }
  std::string bytes(n * sizeof(float), '\0');
  for (int i = 0; i < n; ++i) {
    float v = value + 0.01f * i;
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  t->set_tensor_content(bytes);
  return c;
}

// Blocks of conv -> BN -> relu (9 nodes), with an Identity every 4th block
// and a doubled Relu every 8th.
std::string ChainGraph(int num_nodes) {
  tf::GraphDef g;
  tf::NodeDef* x = Add(&g, "input", "Placeholder");
  (*x->mutable_attr())["dtype"].set_type(tf::DT_FLOAT);
  std::string prev = "input";
  for (int b = 0; g.node_size() + 12 <= num_nodes; ++b) {
    std::string s = absl::StrCat("block", b, "/");
    AddConst(&g, s + "w", {1, 1, 4, 4}, 0.5f);
    tf::NodeDef* conv = Add(&g, s + "conv", "Conv2D");
    conv->add_input(prev);
    conv->add_input(s + "w");
    SetFloat(conv);
    auto& a = *conv->mutable_attr();
    for (int i = 0; i < 4; ++i) a["strides"].mutable_list()->add_i(1);
    a["padding"].set_s("SAME");
    a["data_format"].set_s("NHWC");
    for (const char* p : {"gamma", "beta", "mean", "var"})
      AddConst(&g, s + p, {4}, 1.0f);
    tf::NodeDef* bn = Add(&g, s + "bn", "FusedBatchNormV3");
    bn->add_input(s + "conv");
    for (const char* p : {"gamma", "beta", "mean", "var"}) bn->add_input(s + p);
    SetFloat(bn);
    (*bn->mutable_attr())["U"].set_type(tf::DT_FLOAT);
    (*bn->mutable_attr())["epsilon"].set_f(0.001f);
    (*bn->mutable_attr())["is_training"].set_b(false);
    tf::NodeDef* relu = Add(&g, s + "relu", "Relu");
    relu->add_input(s + "bn");
    SetFloat(relu);
    prev = s + "relu";
    if (b % 8 == 7) {
      tf::NodeDef* r2 = Add(&g, s + "relu2", "Relu");
      r2->add_input(prev);
      SetFloat(r2);
      prev = s + "relu2";
    }
    if (b % 4 == 3) {
      tf::NodeDef* id = Add(&g, s + "id", "Identity");
      id->add_input(prev);
      SetFloat(id);
      prev = s + "id";
    }
  }
  tf::NodeDef* out = Add(&g, "output", "Identity");
  out->add_input(prev);
  SetFloat(out);
  std::string bytes;
  g.SerializeToString(&bytes);
  return bytes;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

struct Timing {
  int nodes = 0;
  double load = 0, apply = 0, save = 0;
  int64_t rewrites = 0;
};

Timing Run(int size, const dsl::RuleSet& rules) {
  std::string bytes = ChainGraph(size);
  Timing t;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Graph> graph =
      ParseGraph(bytes, GraphFormat::kBinary, "chain.pb");
  t.load = Seconds(start);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
    std::exit(1);
  }
  t.nodes = graph->num_nodes();
  start = std::chrono::steady_clock::now();
  absl::StatusOr<report::ApplyReport> report =
      ApplyRules(*graph, rules.rules());
  t.apply = Seconds(start);
  t.rewrites = report->rewrites();
  start = std::chrono::steady_clock::now();
  std::string out = SerializeGraph(*graph, GraphFormat::kBinary);
  t.save = Seconds(start);
  return t;
}

int Main(int argc, char** argv) {
  int max_nodes = argc > 1 ? std::atoi(argv[1]) : 1000000;
  HookRegistry hooks;
  RegisterBuiltinHooks(hooks);
  dsl::Diagnostics d;
  std::unique_ptr<dsl::RuleSet> rules =
      dsl::CompileRuleFiles({"tests/bench/bench_rules.graft"}, {}, hooks, &d);
  if (rules == nullptr) {
    std::fprintf(stderr, "%s", d.Render().c_str());
    return 1;
  }
  std::printf("%10s %10s %9s %9s %9s %14s %12s\n", "nodes", "rewrites",
              "load s", "apply s", "save s", "apply nodes/s", "load nodes/s");
  std::vector<Timing> results;
  for (int size = 10000; size <= max_nodes; size *= 10) {
    Timing t = Run(size, *rules);
    results.push_back(t);
    std::printf("%10d %10lld %9.3f %9.3f %9.3f %14.0f %12.0f\n", t.nodes,
                static_cast<long long>(t.rewrites), t.load, t.apply, t.save,
                t.nodes / t.apply, t.nodes / t.load);
  }
  if (results.size() >= 3) {
    const Timing& k100 = results[1];
    const Timing& m1 = results[2];
    std::printf("\nmatch+rewrite time(1M) / time(100k): %.2f (target <= 12)\n",
                m1.apply / k100.apply);
    std::printf("match+rewrite(1M) / (load + save)(1M): %.2f (target <= 3)\n",
                m1.apply / (m1.load + m1.save));
  }
  return 0;
}

}  // namespace
}  // namespace graft

int main(int argc, char** argv) { return graft::Main(argc, argv); }
