// A checkpoint's TensorBundle, as a SavedModel's variables/ holds it: the
// index (`PREFIX.index`, a LevelDB-format table of BundleEntryProtos, the
// BundleHeaderProto under the empty key) and data shards
// (`PREFIX.data-NNNNN-of-MMMMM`). The index is read whole and checked
// (footer, block checksums, key order, every entry inside its shard); a
// tensor's bytes are read only when asked for, their CRC32C checked.
#ifndef GRAFT_DIALECTS_TF_TENSOR_BUNDLE_H_
#define GRAFT_DIALECTS_TF_TENSOR_BUNDLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/files.h"
#include "engine/tensor_content.h"
#include "proto/saved_model.pb.h"

namespace graft {

// CRC32C (Castagnoli) of `data`, and the masked form LevelDB tables and
// TensorBundle entries store.
uint32_t Crc32c(absl::string_view data, uint32_t crc = 0);
uint32_t MaskCrc32c(uint32_t crc);

struct BundleIndex {
  tf::BundleHeaderProto header;
  // Every saved tensor, by key, in the index's (sorted) order.
  std::vector<std::pair<std::string, tf::BundleEntryProto>> entries;
};

// Parses an index file's bytes; `source` names them in errors.
absl::StatusOr<BundleIndex> ParseBundleIndex(absl::string_view bytes,
                                             absl::string_view source);

class TensorBundle {
 public:
  // Opens `prefix` (".../variables/variables"): reads the index and checks
  // that every shard exists and holds the bytes its entries name. The
  // index and shards are read only inside `inside` (the SavedModel's
  // folder; by default the prefix's own folder and the index's real one),
  // links resolved.
  static absl::StatusOr<TensorBundle> Open(const std::string& prefix,
                                           std::optional<ModelFolder> inside = std::nullopt);

  const std::string& prefix() const { return prefix_; }
  const BundleIndex& index() const { return index_; }
  const tf::BundleEntryProto* Find(const std::string& key) const;
  // "PREFIX.data-00000-of-00001".
  std::string ShardPath(int shard) const;
  // A tensor's bytes, checked against the entry's CRC32C (string tensors,
  // checksummed differently, are read unchecked).
  absl::StatusOr<std::string> ReadTensor(const std::string& key) const;
  // The same bytes left where they lie: a read-only mapping of the shard's
  // range (no copy), checked against the entry's CRC32C when mapped.
  absl::StatusOr<std::shared_ptr<const TensorContent>> Content(
      const std::string& key) const;

 private:
  std::string prefix_;
  BundleIndex index_;
  ModelFolder inside_;
};

}  // namespace graft

#endif  // GRAFT_DIALECTS_TF_TENSOR_BUNDLE_H_
