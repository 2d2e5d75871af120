// The library call from C++, for comparing the Python face against it
// (tests/python/bench_api.py runs both): api::Apply on a model's bytes,
// rules compiled once, repeated; prints the fastest and the median call.
//
//   api_bench MODEL PIPELINE_OR_RULES REPEATS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/graft.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: api_bench MODEL PIPELINE_OR_RULES REPEATS\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  graft::api::RulesSpec spec;
  std::string rules = argv[2];
  if (rules.size() > 5 && rules.substr(rules.size() - 5) == ".yaml") {
    spec.pipeline = rules;
  } else {
    spec.rule_files = {rules};
  }
  auto compiled = graft::api::CompileRules(spec);
  if (!compiled.ok()) {
    std::fprintf(stderr, "%s\n", compiled.error().message.c_str());
    return 1;
  }
  int repeats = std::atoi(argv[3]);
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto applied = graft::api::Apply(graft::api::Model::Bytes(bytes),
                                     **compiled, graft::api::ApplyOptions{});
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
    if (!applied.ok()) {
      std::fprintf(stderr, "%s\n", applied.error().message.c_str());
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"min_ms\": %.4f, \"median_ms\": %.4f}\n", ms.front(),
              ms[ms.size() / 2]);
  return 0;
}
