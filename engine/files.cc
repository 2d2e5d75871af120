#include "engine/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graft {

absl::Status Located(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": error: ", what));
}

namespace {

absl::Status CheckWritableFile(const std::string& path,
                               const std::string& named);

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes,
                                     absl::string_view what) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return absl::NotFoundError("no such file");
    return absl::InvalidArgumentError(std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("is a directory, expected ", what));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "is not a regular file (a device, pipe or socket), expected ", what));
  }
  if (info.st_size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("is ", info.st_size, " bytes; the limit for ", what,
                     " is ", max_bytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open: ", std::strerror(errno)));
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(info.st_size));
  if (!bytes.empty() && !in.read(bytes.data(), bytes.size())) {
    return absl::InvalidArgumentError("cannot read the whole file");
  }
  return bytes;
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path,
                                          int64_t max_bytes,
                                          absl::string_view what) {
  absl::StatusOr<std::string> bytes = ReadFile(path, max_bytes, what);
  if (!bytes.ok()) {
    return absl::Status(
        bytes.status().code(),
        absl::StrCat(path, ": error: ", bytes.status().message()));
  }
  return bytes;
}

absl::StatusOr<OutputTarget> ResolveOutput(const std::string& path) {
  if (path == "-") return OutputTarget{OutputTarget::Kind::kStdout, path};
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) &&
      !S_ISDIR(info.st_mode)) {
    return OutputTarget{OutputTarget::Kind::kStream, path};
  }
  // Follow symlinks to the file they name; a relative target is relative
  // to the link's folder.
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (lstat(at.c_str(), &info) != 0 || !S_ISLNK(info.st_mode))
      return OutputTarget{OutputTarget::Kind::kFile, at};
    std::string target(4096, '\0');
    ssize_t n = readlink(at.c_str(), target.data(), target.size());
    if (n < 0 || static_cast<size_t>(n) >= target.size())
      return Located(path, absl::StrCat("cannot follow the link: ",
                                        std::strerror(errno)));
    target.resize(static_cast<size_t>(n));
    size_t slash = at.rfind('/');
    if (!target.empty() && target[0] != '/' && slash != std::string::npos)
      target = at.substr(0, slash + 1) + target;
    at = target;
  }
  return Located(path, "too many levels of symbolic links");
}

absl::Status CheckWritable(const std::string& path) {
  absl::StatusOr<OutputTarget> target = ResolveOutput(path);
  if (!target.ok()) return target.status();
  if (target->kind == OutputTarget::Kind::kStdout) return absl::OkStatus();
  if (target->kind == OutputTarget::Kind::kStream) {
    if (access(path.c_str(), W_OK) != 0)
      return Located(path, absl::StrCat("cannot write: ", std::strerror(errno)));
    return absl::OkStatus();
  }
  return CheckWritableFile(target->path, path);
}

namespace {

absl::Status CheckWritableFile(const std::string& path,
                               const std::string& named) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return Located(named, "is a directory, expected a file to write");
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  if (folder.empty()) folder = "/";
  std::string probe = absl::StrCat(path, ".graft-probe-XXXXXX");
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    return Located(named, absl::StrCat("cannot write here (", folder,
                                       "): ", std::strerror(errno)));
  }
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace

namespace {

// `path` with links resolved, or "" when it does not resolve.
std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return "";
  std::string out(real);
  free(real);
  return out;
}

bool Within(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

}  // namespace

ModelFolder ModelFolder::Of(const std::string& folder, const std::string& model_file) {
  ModelFolder out;
  auto add = [&](const std::string& p) {
    std::string real = RealPath(p.empty() ? "." : p);
    if (!real.empty() && std::find(out.roots_.begin(), out.roots_.end(), real) == out.roots_.end())
      out.roots_.push_back(real);
  };
  add(folder);
  // The model file's real folder: only for a regular file (a link to a
  // folder, `..`, would lend its parent), and never the whole filesystem.
  struct stat info;
  if (!model_file.empty() && stat(model_file.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
    std::string real_file = RealPath(model_file);
    if (!real_file.empty() && FolderOf(real_file) != "/") add(FolderOf(real_file));
  }
  return out;
}

absl::Status ModelFolder::CheckInside(const std::string& path, absl::string_view what) const {
  const std::string real = RealPath(path);
  if (real.empty())
    return absl::NotFoundError(absl::StrCat(path, ": error: cannot read ", what,
                                            " (no such file, or a broken link)"));
  return Inside(real) ? absl::OkStatus() : Outside(path, what, real);
}

bool ModelFolder::Inside(const std::string& real) const {
  for (const std::string& root : roots_)
    if (Within(real, root)) return true;
  return false;
}

absl::Status ModelFolder::Outside(const std::string& path, absl::string_view what,
                                  const std::string& real) const {
  return Located(path, absl::StrCat(what, " resolves to ", real, ", outside the model's folder ",
                                    roots_.empty() ? std::string("(none)") : roots_.front(),
                                    ": a link out of a model's folder is never followed"));
}

absl::StatusOr<int> ModelFolder::Open(const std::string& path, absl::string_view what) const {
  // O_NONBLOCK: opening a FIFO for reading does not wait for a writer.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0 && errno == ENOENT)
    return absl::NotFoundError(absl::StrCat(path, ": error: missing (", what,
                                            "; no such file)"));
  if (fd < 0)
    return absl::NotFoundError(
        absl::StrCat(path, ": error: cannot read ", what, " (", std::strerror(errno), ")"));
  auto refuse = [&](absl::Status s) {
    close(fd);
    return s;
  };
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    return refuse(Located(path, absl::StrCat(what, " is not a regular file (a folder, FIFO, "
                                             "device or socket)")));
  // The opened file's own path, whatever links led to it.
  std::string real(4096, '\0');
  const std::string self = absl::StrCat("/proc/self/fd/", fd);
  ssize_t n = readlink(self.c_str(), real.data(), real.size() - 1);
  if (n > 0) {
    real.resize(static_cast<size_t>(n));
  } else {
    real = RealPath(path);  // no /proc: checked by name
  }
  if (!Inside(real)) return refuse(Outside(path, what, real));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

absl::StatusOr<std::string> ModelFolder::Read(const std::string& path, int64_t max_bytes,
                                              absl::string_view what) const {
  absl::StatusOr<int> fd = Open(path, what);
  if (!fd.ok()) return fd.status();
  std::shared_ptr<void> closer(nullptr, [f = *fd](void*) { close(f); });
  struct stat info;
  if (fstat(*fd, &info) != 0) return Located(path, std::strerror(errno));
  if (info.st_size > max_bytes)
    return Located(path, absl::StrCat("is ", info.st_size, " bytes; the limit for ", what,
                                      " is ", max_bytes, " bytes"));
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  if (!ReadFullyAt(*fd, 0, bytes.data(), bytes.size()))
    return Located(path, "cannot read the whole file");
  return bytes;
}

bool ReadFullyAt(int fd, int64_t offset, char* out, size_t size) {
  for (size_t done = 0; done < size;) {
    ssize_t n = pread(fd, out + done, size - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string FolderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::optional<FileMapping> MapFile(const std::string& path, bool populate) {
  int fd = open(path.c_str(), O_RDONLY);
  struct stat info;
  if (fd >= 0 && fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
      info.st_size > 0 && info.st_size <= std::numeric_limits<int>::max()) {
    size_t size = static_cast<size_t>(info.st_size);
    void* data = mmap(nullptr, size, PROT_READ,
                      MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    if (data != MAP_FAILED) {
      std::shared_ptr<const void> owner(data, [size, fd](const void* p) {
        munmap(const_cast<void*>(p), size);
        close(fd);
      });
      return FileMapping{std::move(owner),
                         absl::string_view(static_cast<const char*>(data), size), fd};
    }
  }
  if (fd >= 0) close(fd);
  return std::nullopt;
}


}  // namespace graft
