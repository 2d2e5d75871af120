// Reading input files with limits: every file graft reads (graphs, rule
// files and their imports, pipelines, range tables, device profiles) must
// be a regular file (not a folder, device or pipe) of bounded size, so that
// `/dev/zero` or a folder is a clear error, not a hang or an abort.
#ifndef GRAFT_ENGINE_FILES_H_
#define GRAFT_ENGINE_FILES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

// Graph files: protobuf reads at most 2 GiB - 1 bytes.
inline constexpr int64_t kMaxGraphFileBytes = (int64_t{1} << 31) - 1;
// Rule files, imports, pipelines, range tables, device profiles.
inline constexpr int64_t kMaxTextFileBytes = int64_t{16} << 20;

// An invalid-input error located at a file: `path: error: what`.
absl::Status Located(absl::string_view path, absl::string_view what);

// The bytes of `path`, or why not, without the path (for callers that
// locate the error themselves, as an import at its line): "no such file"
// (a NotFound error), a folder or anything not a regular file, larger than
// `max_bytes`, or unreadable. `what` says what was expected ("a graph
// file").
absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes,
                                     absl::string_view what);

// The same, errors located at the file: `path: error: ...`.
absl::StatusOr<std::string> ReadFileBytes(
    const std::string& path, int64_t max_bytes = kMaxGraphFileBytes,
    absl::string_view what = "a graph file");

// A regular file's bytes mapped read-only (`populate`: read in now), and
// what keeps the mapping and its descriptor alive.
struct FileMapping {
  std::shared_ptr<const void> owner;
  absl::string_view bytes;
  int fd = -1;
};

// Nullopt for anything unusual (a directory, an empty file, one past 2 GiB,
// no mmap): reading it the plain way says what is wrong.
std::optional<FileMapping> MapFile(const std::string& path, bool populate);

// Where the files a model names (ONNX external data, a SavedModel's
// variables and assets) may be, links resolved: inside the model's folder,
// or inside the folder where the model file itself really lives (the
// Hugging Face hub cache links snapshots/<rev>/model.onnx and its
// model.onnx.data both into blobs/). A model is untrusted input: nothing
// outside those folders is read on its behalf (docs/security.md).
class ModelFolder {
 public:
  // `folder`: the model's folder (an ONNX model's, a SavedModel's own);
  // `model_file`: the model's own file (the ONNX file named, a SavedModel's
  // saved_model.pb), whose real folder may hold the rest: a hub cache, or
  // a tree of links such as Bazel's runfiles.
  static ModelFolder Of(const std::string& folder, const std::string& model_file = "");

  // Opens `path` read-only when it is a regular file that, links resolved,
  // lies inside one of the folders; the check reads the opened file's own
  // path (/proc/self/fd), so no link swapped in between can escape, and a
  // FIFO is refused without blocking. Returns the descriptor (the caller
  // closes it), or an error located at `path` saying what `what` (the
  // tensor, "the variables index") was and why it is refused.
  absl::StatusOr<int> Open(const std::string& path, absl::string_view what) const;

  // The bytes of `path`, opened as Open does, at most `max_bytes`.
  absl::StatusOr<std::string> Read(const std::string& path, int64_t max_bytes,
                                   absl::string_view what) const;

  // The same check for a path graft is about to copy (a SavedModel's
  // assets): OK, or why not.
  absl::Status CheckInside(const std::string& path, absl::string_view what) const;

  const std::vector<std::string>& roots() const { return roots_; }

 private:
  bool Inside(const std::string& real) const;
  absl::Status Outside(const std::string& path, absl::string_view what,
                       const std::string& real) const;

  std::vector<std::string> roots_;  // real paths
};

// Reads exactly `size` bytes at `offset` of an open file into `out`
// (retrying interrupted and short reads); false when the file ends first or
// a read fails.
bool ReadFullyAt(int fd, int64_t offset, char* out, size_t size);

// The folder of a file's path ("." for a bare name).
std::string FolderOf(const std::string& path);

// Where an output named `path` goes. `-` is standard output; an existing
// character device, pipe or socket (`/dev/stdout`, a FIFO) is written
// directly, never renamed over; a symlink is followed to the file it names
// (which need not exist yet), so that writing it replaces the target, in
// the target's folder, and keeps the link.
struct OutputTarget {
  enum class Kind { kFile, kStream, kStdout };
  Kind kind = Kind::kFile;
  std::string path;  // kFile: the file to replace; kStream: what to open
};
absl::StatusOr<OutputTarget> ResolveOutput(const std::string& path);

// Whether a file can be written at `path` (its folder exists and takes a new
// file; `path` is not a folder), checked by creating and removing a probe
// file beside it. Commands check every path they will write before they
// write any, so a failure leaves nothing behind.
absl::Status CheckWritable(const std::string& path);

}  // namespace graft

#endif  // GRAFT_ENGINE_FILES_H_
