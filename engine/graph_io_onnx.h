// Writing an ONNX model's files (the model and its external data) for
// SaveGraph, and the buffered piece writer both writers use. Internal to
// graph_io.
#ifndef GRAFT_ENGINE_GRAPH_IO_ONNX_H_
#define GRAFT_ENGINE_GRAPH_IO_ONNX_H_

#include <functional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "engine/graph.h"
#include "engine/graph_io.h"

namespace graft {

// An output file's pieces written in order: small ones gathered into 1 MiB
// writes, large ones passed to `large` (which may copy them inside the
// kernel) or written as they are. The first error stops it.
class PieceWriter {
 public:
  using Large = std::function<absl::Status(absl::string_view)>;
  PieceWriter(const FileWriter& out, Large large = nullptr)
      : out_(out), large_(std::move(large)) {}
  void operator()(absl::string_view piece) {
    if (!status_.ok()) return;
    if (piece.size() < (1 << 16)) {
      buffer_.append(piece.data(), piece.size());
      if (buffer_.size() >= (1 << 20)) Flush();
      return;
    }
    Flush();
    if (status_.ok()) status_ = large_ ? large_(piece) : out_.write(piece);
  }
  absl::Status Finish() {
    Flush();
    return status_;
  }

 private:
  void Flush() {
    if (status_.ok() && !buffer_.empty()) status_ = out_.write(buffer_);
    buffer_.clear();
  }
  const FileWriter& out_;
  Large large_;
  std::string buffer_;
  absl::Status status_;
};

// An ONNX model and its data files (engine/onnx_model.h): each data file
// written whole and renamed into place, the model last; a failure removes
// the data files it created.
absl::Status SaveOnnx(const Graph& graph, const std::string& path);

}  // namespace graft

#endif  // GRAFT_ENGINE_GRAPH_IO_ONNX_H_
