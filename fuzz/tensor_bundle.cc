// Fuzz target: a TensorBundle index (a SavedModel's variables.index) as
// graft reads one: footer, block checksums, entries, header. The checksum
// gate is what a corrupted file meets first; `BYPASS` (the input's first
// byte odd) recomputes each block's checksum so the fuzzer also reaches
// the block and entry parsers behind it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dialects/tf/tensor_bundle.h"

namespace {

uint32_t Fixed32(const std::string& s, size_t pos) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[pos + i]);
  return v;
}

void PutFixed32(std::string* s, size_t pos, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[pos + i] = static_cast<char>(v >> (8 * i));
}

// Re-stamps the checksum of every block a well-formed table's footer and
// index point at (best effort: stops at the first handle out of range).
void Restamp(std::string* bytes) {
  if (bytes->size() < 48) return;
  size_t footer = bytes->size() - 48;
  auto varint = [&](size_t* pos, uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift <= 63 && *pos < bytes->size(); shift += 7) {
      uint8_t b = static_cast<uint8_t>((*bytes)[(*pos)++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;
  };
  auto stamp = [&](uint64_t offset, uint64_t size) {
    if (offset > bytes->size() || size > bytes->size() - offset ||
        5 > bytes->size() - offset - size)
      return false;
    uint32_t crc = graft::MaskCrc32c(
        graft::Crc32c(absl::string_view(*bytes).substr(offset, size + 1)));
    PutFixed32(bytes, offset + size + 1, crc);
    return true;
  };
  size_t pos = footer;
  uint64_t m_off, m_size, i_off, i_size;
  if (!varint(&pos, &m_off) || !varint(&pos, &m_size) ||
      !varint(&pos, &i_off) || !varint(&pos, &i_size))
    return;
  (void)Fixed32;
  stamp(i_off, i_size);
  // The index block's entries: varint shared, unshared, value length, key,
  // then a block handle as the value.
  if (i_off + i_size > bytes->size() || i_size < 4) return;
  size_t p = i_off, end = i_off + i_size - 4;
  for (int n = 0; n < 64 && p < end; ++n) {
    uint64_t shared, unshared, length, off, size;
    if (!varint(&p, &shared) || !varint(&p, &unshared) || !varint(&p, &length))
      return;
    if (unshared > end - p) return;
    p += unshared;
    size_t value = p;
    if (length > end - p) return;
    p += length;
    size_t q = value;
    if (varint(&q, &off) && varint(&q, &size)) stamp(off, size);
  }
  stamp(i_off, i_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) Restamp(&bytes);
  absl::StatusOr<graft::BundleIndex> index =
      graft::ParseBundleIndex(bytes, "fuzz.index");
  if (index.ok()) {
    for (const auto& [key, entry] : index->entries) {
      (void)key.size();
      (void)entry.ByteSizeLong();
    }
  }
  return 0;
}
