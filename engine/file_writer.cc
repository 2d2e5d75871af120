// Writing a file atomically (a temporary beside it, renamed into place),
// or straight to standard output, a device or a pipe.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "engine/files.h"
#include "engine/file_writer.h"

namespace graft {

std::string SerializeDeterministic(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view contents) {
  return WriteFileAtomicallyWith(
      path, [&](const FileWriter& out) { return out.write(contents); });
}

namespace {

// Writes everything to `fd` (a file, standard output, a device or a pipe);
// no copies between files (a stream has no offsets).
FileWriter StreamWriter(int fd, const std::string& path) {
  FileWriter writer;
  writer.write = [fd, path](absl::string_view contents) -> absl::Status {
    size_t written = 0;
    while (written < contents.size()) {
      ssize_t n =
          write(fd, contents.data() + written, contents.size() - written);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Located(path,
                       absl::StrCat("cannot write: ", std::strerror(errno)));
      }
      written += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  };
  writer.copy = [](int, int64_t, size_t) -> absl::StatusOr<bool> {
    return false;  // no copy_file_range into a stream
  };
  return writer;
}

}  // namespace

absl::Status WriteFileAtomicallyWith(
    const std::string& named,
    const std::function<absl::Status(const FileWriter&)>& fill,
    bool follow_links) {
  // `-`, a device or a pipe is written directly; a symlink is followed, so
  // that its target is replaced and the link kept.
  absl::StatusOr<OutputTarget> target =
      follow_links ? ResolveOutput(named)
                   : absl::StatusOr<OutputTarget>(OutputTarget{OutputTarget::Kind::kFile, named});
  if (!target.ok()) return target.status();
  if (target->kind == OutputTarget::Kind::kStdout) {
    absl::Status s = fill(StreamWriter(STDOUT_FILENO, "standard output"));
    std::cout.flush();
    return s;
  }
  if (target->kind == OutputTarget::Kind::kStream) {
    int fd = open(named.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      return Located(named,
                     absl::StrCat("cannot write: ", std::strerror(errno)));
    }
    absl::Status s = fill(StreamWriter(fd, named));
    if (close(fd) != 0 && s.ok()) {
      s = Located(named, absl::StrCat("cannot write: ", std::strerror(errno)));
    }
    return s;
  }
  const std::string& path = target->path;
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return Located(path, "is a directory, expected a file to write");
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty()) dir = "/";
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Located(
        path, absl::StrCat("cannot write: folder `", dir, "` does not exist"));
  }
  std::string temp = absl::StrCat(path, ".tmp-XXXXXX");
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    return Located(path, absl::StrCat("cannot write: ", std::strerror(errno)));
  }
  FileWriter writer = StreamWriter(fd, path);
  writer.copy = [&](int from, int64_t offset,
                    size_t length) -> absl::StatusOr<bool> {
    loff_t in = offset;
    size_t done = 0;
    while (done < length) {
      ssize_t n = copy_file_range(from, &in, fd, nullptr, length - done, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && done == 0 &&
          (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
           errno == EOPNOTSUPP)) {
        return false;
      }
      if (n <= 0) {
        return Located(path, absl::StrCat("cannot write: ",
                                          n < 0 ? std::strerror(errno)
                                                : "the source file shrank"));
      }
      done += static_cast<size_t>(n);
    }
    return true;
  };
  absl::Status filled = fill(writer);
  if (!filled.ok()) {
    close(fd);
    unlink(temp.c_str());
    return filled;
  }
  // mkstemp creates the file 0600; give it the usual permissions.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0 || rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    unlink(temp.c_str());
    return Located(path, absl::StrCat("cannot write: ", why));
  }
  return absl::OkStatus();
}

}  // namespace graft
