#include "engine/background_writer.h"

#include <utility>

namespace graft {
namespace {

constexpr size_t kMaxOwnedBytes = size_t{16} << 20;

}  // namespace

BackgroundWriter::BackgroundWriter(const FileWriter& out, absl::string_view source,
                                   int source_fd)
    : out_(out), source_(source), source_fd_(source_fd), can_copy_(source_fd >= 0) {
  thread_ = std::thread([this] { Run(); });
}

BackgroundWriter::~BackgroundWriter() { Finish().IgnoreError(); }

void BackgroundWriter::Write(absl::string_view piece) {
  if (piece.empty()) return;
  Piece p;
  const bool stable = InSource(piece);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!status_.ok()) return;
  if (stable) {
    p.view = piece;
  } else {
    changed_.wait(lock, [&] {
      return owned_bytes_ == 0 || owned_bytes_ + piece.size() <= kMaxOwnedBytes ||
             !status_.ok();
    });
    lock.unlock();
    p.owned.assign(piece.data(), piece.size());
    lock.lock();
    owned_bytes_ += p.owned.size();
  }
  queue_.push_back(std::move(p));
  if (!stable) queue_.back().view = queue_.back().owned;
  changed_.notify_all();
}

absl::Status BackgroundWriter::Finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  return status_;
}

void BackgroundWriter::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return done_ || !queue_.empty(); });
    if (queue_.empty()) return;  // done, all written
    Piece piece = std::move(queue_.front());
    queue_.pop_front();
    if (!piece.owned.empty()) piece.view = piece.owned;  // moved: point at it again
    lock.unlock();
    absl::Status s = status_.ok() ? WriteOne(piece) : absl::OkStatus();
    lock.lock();
    owned_bytes_ -= piece.owned.size();
    if (status_.ok() && !s.ok()) status_ = std::move(s);
    changed_.notify_all();
  }
}

absl::Status BackgroundWriter::WriteOne(const Piece& piece) {
  if (can_copy_ && piece.owned.empty()) {
    absl::StatusOr<bool> copied =
        out_.copy(source_fd_, piece.view.data() - source_.data(), piece.view.size());
    if (!copied.ok()) return copied.status();
    if (*copied) return absl::OkStatus();
    can_copy_ = false;  // not here: write from the mapping from now on
  }
  return out_.write(piece.view);
}

}  // namespace graft
