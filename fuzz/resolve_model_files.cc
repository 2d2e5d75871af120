// Fuzz target: the files a model names, resolved over folder trees the
// input builds (docs/security.md). Each input is a list of commands that
// lay out a model folder beside a folder holding a secret: regular files,
// folders, FIFOs and links (relative, absolute, to the secret, to `..`,
// chains and loops); then every name is opened as a model's data file
// would be (ModelFolder::Open), and the folder is read as a SavedModel's
// variables (TensorBundle::Open). The invariants: whatever opens is a
// regular file whose real path lies inside the model's folder (or the
// folder the model file, when a link, really lives in: a hub cache);
// nothing blocks (a FIFO is refused without waiting).
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/files.h"
#include "dialects/tf/tensor_bundle.h"

namespace {

// Names inside the model folder (some in a subfolder, as external data
// locations and variables/ are).
const char* const kNames[] = {
    "w.bin", "m.onnx.data", "sub", "sub/w.bin", "sub/deeper",
    "sub/deeper/w.bin", "variables", "variables/variables.index",
    "variables/variables.data-00000-of-00001", "up", "loop", "a"};
constexpr int kNameCount = sizeof(kNames) / sizeof(kNames[0]);

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  return remove(path);
}

void RemoveTree(const std::string& root) {
  nftw(root.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char pattern[] = "/tmp/graft-fuzz-tree-XXXXXX";
  if (mkdtemp(pattern) == nullptr) return 0;
  const std::string base = pattern;
  const std::string model = base + "/model";
  const std::string outside = base + "/outside";
  mkdir(model.c_str(), 0755);
  mkdir(outside.c_str(), 0755);
  const std::string secret = outside + "/secret";
  {
    int fd = open(secret.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, "SECRET", 6);
      close(fd);
    }
  }
  // Targets a link may point at.
  const std::vector<std::string> targets = {
      "w.bin", "../w.bin", "..", ".", "sub", "sub/w.bin", secret, outside,
      "../outside/secret", "../../outside/secret", model, model + "/w.bin",
      "loop", "/dev/zero", "/proc/self/fd/0", "deeper/../../w.bin"};
  for (size_t i = 0; i + 2 < size && i < 96; i += 3) {
    const std::string path = model + "/" + kNames[data[i + 1] % kNameCount];
    switch (data[i] % 5) {
      case 0: {  // a regular file, some bytes
        int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK, 0644);
        if (fd >= 0) {
          const size_t n = data[i + 2] % 64 < size ? data[i + 2] % 64 : size;
          (void)!write(fd, data, n);
          close(fd);
        }
        break;
      }
      case 1:
        mkdir(path.c_str(), 0755);
        break;
      case 2:
        (void)!symlink(targets[data[i + 2] % targets.size()].c_str(), path.c_str());
        break;
      case 3:
        mkfifo(path.c_str(), 0644);
        break;
      default:  // the model file itself a link (a hub cache's snapshot)
        (void)!symlink(targets[data[i + 2] % targets.size()].c_str(),
                       (model + "/m.onnx").c_str());
        break;
    }
  }
  const graft::ModelFolder inside = graft::ModelFolder::Of(model, model + "/m.onnx");
  for (int n = 0; n < kNameCount; ++n) {
    const std::string path = model + "/" + kNames[n];
    absl::StatusOr<int> fd = inside.Open(path, "a data file");
    if (!fd.ok()) continue;
    struct stat info;
    if (fstat(*fd, &info) != 0 || !S_ISREG(info.st_mode)) std::abort();
    char real[4096];
    const std::string self = "/proc/self/fd/" + std::to_string(*fd);
    ssize_t len = readlink(self.c_str(), real, sizeof(real) - 1);
    close(*fd);
    if (len <= 0) continue;
    real[len] = '\0';
    const std::string opened(real);
    bool within = false;
    for (const std::string& root : inside.roots())
      within = within || opened == root || opened.rfind(root + "/", 0) == 0;
    if (!within) {
      fprintf(stderr, "opened %s as %s, outside the roots:", path.c_str(), opened.c_str());
      for (const std::string& root : inside.roots()) fprintf(stderr, " %s", root.c_str());
      fprintf(stderr, "\n");
      std::abort();
    }
  }
  (void)graft::TensorBundle::Open(model + "/variables/variables", inside);
  RemoveTree(base);
  return 0;
}
