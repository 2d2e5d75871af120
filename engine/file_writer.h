// Writing files: atomically (a temporary beside the file, renamed into
// place), or straight to standard output, a device or a pipe; pieces
// gathered into large writes; messages serialized the same on every run.
#ifndef GRAFT_ENGINE_FILE_WRITER_H_
#define GRAFT_ENGINE_FILE_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace graft {

// A message's bytes with map entries sorted by key, the same on every run.
std::string SerializeDeterministic(const google::protobuf::Message& message);

// Writes `contents` to `path` atomically (reading files: engine/files.h).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents);
// The same, the contents written piece by piece by `fill` through the
// writer it is given; an error from either leaves nothing behind.
struct FileWriter {
  std::function<absl::Status(absl::string_view)> write;
  // Appends `length` bytes at `offset` of the open file `fd` inside the
  // kernel (copy_file_range); false when the file systems cannot, and
  // nothing was written.
  std::function<absl::StatusOr<bool>(int fd, int64_t offset, size_t length)>
      copy;
};
// `follow_links`: `path` as the user named it (a link is followed, its
// target replaced; a device or pipe written directly); false for a name the
// output derives (a data file beside it, a batch's output): whatever is
// there, a link included, is replaced by a regular file, never followed.
absl::Status WriteFileAtomicallyWith(
    const std::string& path,
    const std::function<absl::Status(const FileWriter&)>& fill,
    bool follow_links = true);

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

}  // namespace graft

#endif  // GRAFT_ENGINE_FILE_WRITER_H_
