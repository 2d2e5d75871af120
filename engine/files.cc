#include "engine/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graft {
namespace {

absl::Status Located(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": error: ", what));
}

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

absl::Status CheckWritable(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return Located(path, "is a directory, expected a file to write");
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  if (folder.empty()) folder = "/";
  std::string probe = absl::StrCat(path, ".graft-probe-XXXXXX");
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    return Located(path, absl::StrCat("cannot write here (", folder,
                                      "): ", std::strerror(errno)));
  }
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace graft
