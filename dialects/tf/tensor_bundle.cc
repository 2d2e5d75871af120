#include "dialects/tf/tensor_bundle.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/files.h"
#include "engine/wire_format.h"

namespace graft {
namespace {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;
constexpr size_t kBlockTrailerSize = 5;  // type byte, masked CRC32C

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

absl::Status Bad(absl::string_view source, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": error: not a valid TensorBundle index: ", what));
}

uint32_t Fixed32(absl::string_view data, size_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(data[pos + i]);
  return v;
}

struct BlockHandle {
  uint64_t offset = 0, size = 0;
};

bool ReadHandle(absl::string_view data, size_t* pos, BlockHandle* h) {
  return wire::ReadVarint(data, pos, &h->offset) && wire::ReadVarint(data, pos, &h->size);
}

// A block's contents, its trailer checked.
absl::StatusOr<absl::string_view> Block(absl::string_view file,
                                        const BlockHandle& h,
                                        absl::string_view source) {
  if (h.offset > file.size() || h.size > file.size() - h.offset ||
      kBlockTrailerSize > file.size() - h.offset - h.size)
    return Bad(source, absl::StrCat("a block at byte ", h.offset, " of ", h.size,
                                    " bytes runs past the end (",
                                    file.size(), " bytes)"));
  absl::string_view contents = file.substr(h.offset, h.size);
  uint8_t type = static_cast<uint8_t>(file[h.offset + h.size]);
  uint32_t stored = Fixed32(file, h.offset + h.size + 1);
  uint32_t actual = MaskCrc32c(Crc32c(file.substr(h.offset, h.size + 1)));
  if (stored != actual)
    return Bad(source, absl::StrFormat("the block at byte %d fails its checksum "
                                       "(stored %08x, computed %08x)",
                                       h.offset, stored, actual));
  if (type != 0)
    return Bad(source, absl::StrCat("the block at byte ", h.offset,
                                    " is compressed (type ", type,
                                    "); graft reads uncompressed tables"));
  return contents;
}

// Calls `each(key, value)` for a block's entries; an error when the block
// is malformed or `each` fails.
template <typename Each>
absl::Status ForEachEntry(absl::string_view block, absl::string_view source,
                          Each&& each) {
  if (block.size() < 4) return Bad(source, "a block shorter than 4 bytes");
  uint64_t restarts = Fixed32(block, block.size() - 4);
  if (restarts > (block.size() - 4) / 4)
    return Bad(source, "a block's restart count exceeds its size");
  size_t end = block.size() - 4 - 4 * restarts;
  std::string key;
  size_t pos = 0;
  while (pos < end) {
    uint64_t shared = 0, unshared = 0, length = 0;
    absl::string_view data = block.substr(0, end);
    if (!wire::ReadVarint(data, &pos, &shared) || !wire::ReadVarint(data, &pos, &unshared) ||
        !wire::ReadVarint(data, &pos, &length))
      return Bad(source, "a truncated block entry");
    if (shared > key.size() || unshared > end - pos ||
        length > end - pos - unshared)
      return Bad(source, "a block entry runs past its block");
    key.resize(shared);
    key.append(block.data() + pos, unshared);
    pos += unshared;
    absl::Status s = each(key, block.substr(pos, length));
    if (!s.ok()) return s;
    pos += length;
  }
  return absl::OkStatus();
}

}  // namespace

uint32_t Crc32c(absl::string_view data, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  crc = ~crc;
  for (unsigned char c : data) crc = table[(crc ^ c) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

absl::StatusOr<BundleIndex> ParseBundleIndex(absl::string_view bytes,
                                             absl::string_view source) {
  if (bytes.size() < kFooterSize)
    return Bad(source, absl::StrCat(bytes.size(), " bytes, shorter than a "
                                    "table's footer (48)"));
  absl::string_view footer = bytes.substr(bytes.size() - kFooterSize);
  uint64_t magic = static_cast<uint64_t>(Fixed32(footer, 44)) << 32 |
                   Fixed32(footer, 40);
  if (magic != kTableMagic) return Bad(source, "the footer's magic number is wrong");
  size_t pos = 0;
  BlockHandle meta, index;
  if (!ReadHandle(footer.substr(0, 40), &pos, &meta) ||
      !ReadHandle(footer.substr(0, 40), &pos, &index))
    return Bad(source, "the footer's block handles do not parse");
  absl::StatusOr<absl::string_view> index_block = Block(bytes, index, source);
  if (!index_block.ok()) return index_block.status();
  BundleIndex out;
  bool header_seen = false;
  std::string last;
  absl::Status walked = ForEachEntry(
      *index_block, source,
      [&](const std::string&, absl::string_view value) -> absl::Status {
        size_t p = 0;
        BlockHandle h;
        if (!ReadHandle(value, &p, &h))
          return Bad(source, "an index entry's block handle does not parse");
        absl::StatusOr<absl::string_view> data = Block(bytes, h, source);
        if (!data.ok()) return data.status();
        return ForEachEntry(
            *data, source,
            [&](const std::string& key, absl::string_view v) -> absl::Status {
              if ((header_seen || !out.entries.empty()) && key <= last)
                return Bad(source, absl::StrCat("keys out of order at `", key, "`"));
              last = key;
              if (key.empty()) {
                header_seen = true;
                if (!out.header.ParseFromArray(v.data(), static_cast<int>(v.size())))
                  return Bad(source, "the bundle header does not parse");
                return absl::OkStatus();
              }
              tf::BundleEntryProto entry;
              if (!entry.ParseFromArray(v.data(), static_cast<int>(v.size())))
                return Bad(source, absl::StrCat("the entry of `", key, "` does not parse"));
              if (entry.offset() < 0 || entry.size() < 0 || entry.shard_id() < 0)
                return Bad(source, absl::StrCat("the entry of `", key,
                                                "` has a negative offset, size or shard"));
              out.entries.emplace_back(key, std::move(entry));
              return absl::OkStatus();
            });
      });
  if (!walked.ok()) return walked;
  if (!header_seen) return Bad(source, "no bundle header (the empty key)");
  if (out.header.num_shards() < 1)
    return Bad(source, absl::StrCat("the header says ", out.header.num_shards(),
                                    " shard(s)"));
  if (out.header.endianness() != tf::BundleHeaderProto::LITTLE)
    return Bad(source, "a big-endian bundle");
  for (const auto& [key, entry] : out.entries) {
    if (entry.shard_id() >= out.header.num_shards())
      return Bad(source, absl::StrCat("`", key, "` is in shard ", entry.shard_id(),
                                      " of ", out.header.num_shards()));
  }
  return out;
}

absl::StatusOr<TensorBundle> TensorBundle::Open(const std::string& prefix,
                                                std::optional<ModelFolder> inside) {
  std::string index_path = prefix + ".index";
  TensorBundle bundle;
  bundle.inside_ = inside.has_value() ? *std::move(inside)
                                      : ModelFolder::Of(FolderOf(prefix), index_path);
  absl::StatusOr<std::string> bytes =
      bundle.inside_.Read(index_path, kMaxTextFileBytes, "the variables' index");
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<BundleIndex> index = ParseBundleIndex(*bytes, index_path);
  if (!index.ok()) return index.status();
  bundle.prefix_ = prefix;
  bundle.index_ = *std::move(index);
  std::vector<int64_t> sizes(bundle.index_.header.num_shards(), -1);
  for (const auto& [key, entry] : bundle.index_.entries) {
    int64_t& size = sizes[entry.shard_id()];
    std::string shard = bundle.ShardPath(entry.shard_id());
    if (size < 0) {
      absl::StatusOr<int> fd = bundle.inside_.Open(
          shard, absl::StrCat("the data shard of `", key, "` (named by ", index_path, ")"));
      if (!fd.ok()) return fd.status();
      struct stat info;
      const bool stated = fstat(*fd, &info) == 0;
      close(*fd);
      if (!stated) return Located(shard, std::strerror(errno));
      size = info.st_size;
    }
    if (entry.offset() > size || entry.size() > size - entry.offset())
      return absl::InvalidArgumentError(absl::StrCat(
          shard, ": error: ", size, " bytes, shorter than `", key,
          "` needs (", entry.size(), " bytes at ", entry.offset(), ")"));
  }
  return bundle;
}

const tf::BundleEntryProto* TensorBundle::Find(const std::string& key) const {
  // The index keeps its keys sorted (ParseBundleIndex checks the order).
  auto it = std::lower_bound(
      index_.entries.begin(), index_.entries.end(), key,
      [](const auto& entry, const std::string& k) { return entry.first < k; });
  if (it == index_.entries.end() || it->first != key) return nullptr;
  return &it->second;
}

std::string TensorBundle::ShardPath(int shard) const {
  return absl::StrFormat("%s.data-%05d-of-%05d", prefix_, shard,
                         index_.header.num_shards());
}

absl::StatusOr<std::string> TensorBundle::ReadTensor(const std::string& key) const {
  const tf::BundleEntryProto* entry = Find(key);
  if (entry == nullptr)
    return absl::NotFoundError(absl::StrCat(prefix_, ".index: error: no tensor `",
                                            key, "`"));
  std::string shard = ShardPath(entry->shard_id());
  absl::StatusOr<int> fd = inside_.Open(shard, absl::StrCat("the data shard of `", key, "`"));
  if (!fd.ok()) return fd.status();
  std::shared_ptr<void> closer(nullptr, [f = *fd](void*) { close(f); });
  std::string bytes(static_cast<size_t>(entry->size()), '\0');
  if (!ReadFullyAt(*fd, entry->offset(), bytes.data(), bytes.size()))
    return absl::InvalidArgumentError(absl::StrCat(
        shard, ": error: cannot read `", key, "` (", entry->size(),
        " bytes at ", entry->offset(), ")"));
  if (entry->dtype() != tf::DT_STRING &&
      MaskCrc32c(Crc32c(bytes)) != entry->crc32c())
    return absl::DataLossError(absl::StrCat(
        shard, ": error: `", key, "` fails its checksum (the bytes at ",
        entry->offset(), " are not what the index recorded)"));
  return bytes;
}

absl::StatusOr<std::shared_ptr<const TensorContent>> TensorBundle::Content(
    const std::string& key) const {
  const tf::BundleEntryProto* entry = Find(key);
  if (entry == nullptr)
    return absl::NotFoundError(absl::StrCat(prefix_, ".index: error: no tensor `",
                                            key, "`"));
  if (entry->size() == 0) return ViewContent(absl::string_view(), nullptr);
  std::string shard = ShardPath(entry->shard_id());
  auto unreadable = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        shard, ": error: cannot read `", key, "` (", entry->size(),
        " bytes at ", entry->offset(), ")"));
  };
  absl::StatusOr<int> opened =
      inside_.Open(shard, absl::StrCat("the data shard of `", key, "`"));
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  struct stat info;
  if (fstat(fd, &info) != 0 || entry->offset() < 0 || entry->size() < 0 ||
      entry->offset() + entry->size() > info.st_size) {
    close(fd);
    return unreadable();
  }
  // mmap offsets are page-aligned: map from the page the tensor starts in.
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t start = entry->offset() / page * page;
  const size_t length = static_cast<size_t>(entry->offset() + entry->size() - start);
  void* data = mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, start);
  close(fd);
  if (data == MAP_FAILED) return unreadable();
  std::shared_ptr<const void> mapping(data, [length](const void* p) {
    munmap(const_cast<void*>(p), length);
  });
  absl::string_view bytes(
      static_cast<const char*>(data) + (entry->offset() - start),
      static_cast<size_t>(entry->size()));
  if (entry->dtype() != tf::DT_STRING &&
      MaskCrc32c(Crc32c(bytes)) != entry->crc32c())
    return absl::DataLossError(absl::StrCat(
        shard, ": error: `", key, "` fails its checksum (the bytes at ",
        entry->offset(), " are not what the index recorded)"));
  return ViewContent(bytes, std::move(mapping));
}

}  // namespace graft
