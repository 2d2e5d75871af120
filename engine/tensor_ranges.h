// Calibrated per-tensor value ranges, from a YAML file:
//
//   # tensor: [min, max]
//   conv1/Relu: [0.0, 5.2]
//   block1/add:0: [-3.1, 4.7]
//
// A tensor is `node` or `node:port` (`node` is `node:0`). Rules read a
// table through a `ranges` param and the range_min / range_max hooks.
#ifndef GRAFT_ENGINE_TENSOR_RANGES_H_
#define GRAFT_ENGINE_TENSOR_RANGES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph.h"

namespace graft {

struct TensorRange {
  double min = 0;
  double max = 0;
  int line = 0;  // 1-based, where the entry is in the file
  int column = 0;
  std::string written;  // the tensor's name as the file writes it
};

struct TensorRanges {
  std::string path;
  // By canonical tensor name (`node:port`).
  std::map<std::string, TensorRange> ranges;

  const TensorRange* Find(const std::string& tensor) const;
};

// A problem in a range file, located at a 1-based line and column.
struct RangeFileProblem {
  int line = 0;
  int column = 0;
  std::string message;
};

// Loads `path`. Problems (unreadable file, bad YAML, an entry that is not
// two numbers, min > max, a tensor named twice) go to `problems`; the
// table holds the good entries.
TensorRanges LoadTensorRanges(const std::string& path,
                              std::vector<RangeFileProblem>* problems);

// `node:port` for `node` or `node:port`.
std::string CanonicalTensorName(const std::string& tensor);

// Fails, naming the file, line and tensor, when an entry names a node the
// graph does not have or an output port the node does not have.
absl::Status CheckTensorRanges(const TensorRanges& table, const Graph& graph);

}  // namespace graft

#endif  // GRAFT_ENGINE_TENSOR_RANGES_H_
