// A file written on a second thread, in order, while the pieces after the
// ones given are made (a folded filter's next piece computed while the
// last is written). Pieces from a stable source (a read-only mapping of
// the input file, alive until Finish) are copied file to file where the
// file systems allow; others are copied in (at most 16 MiB wait at once).
#ifndef GRAFT_ENGINE_BACKGROUND_WRITER_H_
#define GRAFT_ENGINE_BACKGROUND_WRITER_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/file_writer.h"

namespace graft {

class BackgroundWriter {
 public:
  // `source`: bytes mapped from the open file `source_fd` (or -1: none).
  BackgroundWriter(const FileWriter& out, absl::string_view source, int source_fd);
  ~BackgroundWriter();  // waits for what was given
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Whether `piece` lies in the source (stays valid until Finish).
  bool InSource(absl::string_view piece) const {
    return piece.data() >= source_.data() &&
           piece.data() + piece.size() <= source_.data() + source_.size();
  }
  // Queues `piece`: a view when it lies in the source, else a copy.
  void Write(absl::string_view piece);
  // Waits for every queued piece; the first error.
  absl::Status Finish();

 private:
  struct Piece {
    std::string owned;
    absl::string_view view;  // into the source, or into `owned`
  };
  void Run();
  absl::Status WriteOne(const Piece& piece);

  const FileWriter& out_;
  absl::string_view source_;
  int source_fd_;
  bool can_copy_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Piece> queue_;
  size_t owned_bytes_ = 0;  // copied in and not yet written
  bool done_ = false;
  absl::Status status_;
  std::thread thread_;
};

}  // namespace graft

#endif  // GRAFT_ENGINE_BACKGROUND_WRITER_H_
