#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/files.h"
#include "engine/file_writer.h"
#include "dialects/onnx/graph_io_onnx.h"
#include "dialects/onnx/onnx_model.h"

namespace graft {
namespace {

absl::Status WritePieces(const onnx_data::Pieces& pieces, const FileWriter& out) {
  PieceWriter writer(out);
  pieces.Emit([&](absl::string_view piece) { writer(piece); });
  return writer.Finish();
}

// `from`, a data file of the model read, copied whole into `out`, inside
// the kernel where it can be; read only inside the model's folder, as when
// it was read.
absl::Status CopyWhole(const std::string& from, const ModelFolder& inside,
                       const FileWriter& out) {
  absl::StatusOr<int> opened = inside.Open(from, "an external data file");
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  struct stat info;
  if (fstat(fd, &info) != 0) {
    close(fd);
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

// The folders of data file `location` (relative, checked when read) below
// `folder`, made where missing (each one added to `made`); an error when
// one resolves out of `folder` (a link planted in the output's folder).
absl::Status MakeDataFolders(const std::string& folder, const std::string& location,
                             std::vector<std::string>* made) {
  size_t slash = location.rfind('/');
  if (slash == std::string::npos) return absl::OkStatus();
  std::string at = folder;
  for (absl::string_view part : absl::StrSplit(location.substr(0, slash), '/')) {
    absl::StrAppend(&at, "/", part);
    if (mkdir(at.c_str(), 0777) == 0) {
      made->push_back(at);
    } else if (errno != EEXIST) {
      return Located(at, absl::StrCat("cannot make the folder: ", std::strerror(errno)));
    }
  }
  char* real = realpath(at.c_str(), nullptr);
  char* root = realpath(folder.c_str(), nullptr);
  const std::string r = real ? real : "", o = root ? root : "";
  free(real);
  free(root);
  if (r.empty() || o.empty() || (r != o && r.rfind(o + "/", 0) != 0))
    return Located(at, absl::StrCat("resolves to ", r, ", outside the output's folder ", o,
                                    ": a link there is never followed"));
  return absl::OkStatus();
}

}  // namespace

// An ONNX model and its data files (dialects/onnx/onnx_model.h): each data file
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
  std::vector<std::string> created, folders;
  auto undo = [&] {
    for (const std::string& f : created) unlink(f.c_str());
    for (auto it = folders.rbegin(); it != folders.rend(); ++it) rmdir(it->c_str());
  };
  // The data files the input refers to are read only inside its folder.
  const ModelFolder inside = OnnxOf(graph) != nullptr
                                 ? ModelFolder::Of(OnnxOf(graph)->folder, OnnxOf(graph)->model_file)
                                 : ModelFolder();
  for (const OnnxFiles::DataFile& data : files->data) {
    const std::string out = absl::StrCat(options.folder, "/", data.location);
    // A location in a subfolder (`sub/w.bin`): its folders made inside the
    // output's folder, never through a link out of it.
    if (absl::Status s = MakeDataFolders(options.folder, data.location, &folders); !s.ok()) {
      undo();
      return s;
    }
    struct stat info;
    const bool existed = lstat(out.c_str(), &info) == 0;
    // A name the output derives (not one the user gave): a link there is
    // replaced, never followed out of the output's folder.
    absl::Status s = WriteFileAtomicallyWith(out, [&](const FileWriter& w) {
      return data.copy_from.empty() ? WritePieces(data.pieces, w)
                                    : CopyWhole(data.copy_from, inside, w);
    }, /*follow_links=*/false);
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
