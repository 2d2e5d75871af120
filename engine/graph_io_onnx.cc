#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/files.h"
#include "engine/graph_io.h"
#include "engine/graph_io_onnx.h"
#include "engine/onnx_model.h"

namespace graft {
namespace {

absl::Status WritePieces(const onnx_data::Pieces& pieces, const FileWriter& out) {
  PieceWriter writer(out);
  pieces.Emit([&](absl::string_view piece) { writer(piece); });
  return writer.Finish();
}

// `from` copied whole into `out`, inside the kernel where it can be.
absl::Status CopyWhole(const std::string& from, const FileWriter& out) {
  int fd = open(from.c_str(), O_RDONLY);
  struct stat info;
  if (fd < 0 || fstat(fd, &info) != 0) {
    if (fd >= 0) close(fd);
    return Located(from, "cannot read it to copy it beside the written model");
  }
  std::shared_ptr<void> closer(nullptr, [fd](void*) { close(fd); });
  const size_t size = static_cast<size_t>(info.st_size);
  absl::StatusOr<bool> copied = out.copy ? out.copy(fd, 0, size) : false;
  if (!copied.ok() || *copied) return copied.status();
  std::string chunk(1 << 20, '\0');
  for (size_t done = 0; done < size;) {
    ssize_t n = pread(fd, chunk.data(), std::min(chunk.size(), size - done),
                      static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Located(from, "cannot read it to copy it");
    if (absl::Status s = out.write(absl::string_view(chunk.data(), n)); !s.ok())
      return s;
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

// An ONNX model and its data files (engine/onnx_model.h): each data file
// written whole and renamed into place, the model last; a failure removes
// the data files it created.
absl::Status SaveOnnx(const Graph& graph, const std::string& path) {
  absl::StatusOr<OutputTarget> target = ResolveOutput(path);
  if (!target.ok()) return target.status();
  if (IsOnnxTextPath(path)) {  // the text form: external data referred to as it was
    absl::StatusOr<std::string> bytes = SerializeOnnx(graph);
    if (!bytes.ok()) return Located(path, std::string(bytes.status().message()));
    absl::StatusOr<std::string> text = OnnxBinaryToText(*bytes);
    if (!text.ok()) return Located(path, std::string(text.status().message()));
    return WriteFileAtomically(path, *text);
  }
  OnnxWriteOptions options;
  if (target->kind == OutputTarget::Kind::kFile) {
    options.folder = FolderOf(target->path);
    size_t slash = target->path.rfind('/');
    options.data_file = absl::StrCat(
        slash == std::string::npos ? target->path : target->path.substr(slash + 1),
        ".data");
  }
  absl::StatusOr<OnnxFiles> files = PlanOnnxSave(graph, options);
  if (!files.ok()) return Located(path, std::string(files.status().message()));
  std::vector<std::string> created;
  auto undo = [&] {
    for (const std::string& f : created) unlink(f.c_str());
  };
  for (const OnnxFiles::DataFile& data : files->data) {
    const std::string out = absl::StrCat(options.folder, "/", data.location);
    struct stat info;
    const bool existed = stat(out.c_str(), &info) == 0;
    absl::Status s = WriteFileAtomicallyWith(out, [&](const FileWriter& w) {
      return data.copy_from.empty() ? WritePieces(data.pieces, w)
                                    : CopyWhole(data.copy_from, w);
    });
    if (!s.ok()) {
      undo();
      return s;
    }
    if (!existed) created.push_back(out);
  }
  absl::Status s = WriteFileAtomicallyWith(
      path, [&](const FileWriter& w) { return WritePieces(files->model, w); });
  if (!s.ok()) undo();
  return s;
}

}  // namespace graft
