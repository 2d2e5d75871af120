#include "engine/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
