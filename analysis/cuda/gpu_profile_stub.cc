// gpu_profile without CUDA: says how to build the real one.
#include <iostream>

int main() {
  std::cerr << "gpu_profile: built without CUDA; build it with\n"
               "  bazel build --config=cuda //analysis/cuda:gpu_profile\n";
  return 2;
}
