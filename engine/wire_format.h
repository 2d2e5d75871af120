// The protobuf wire format, read and written by hand where graft's graph
// I/O needs to see bytes protobuf would hide: the top-level scan of a
// GraphDef (located errors) and cutting a large tensor's content out of a
// NodeDef before parsing it. Internal to graph_io.
#ifndef GRAFT_ENGINE_WIRE_FORMAT_H_
#define GRAFT_ENGINE_WIRE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace graft::wire {

// A field of a serialized message: [start, end) the whole field (tag,
// length and payload), [payload, end) what a length-delimited field holds.
struct WireField {
  int number = 0;
  int wire_type = 0;
  size_t start = 0;
  size_t payload = 0;
  size_t end = 0;
};

// What is wrong with a field's bytes.
enum class WireProblem {
  kNone,
  kBadTag,
  kTruncatedVarint,
  kTruncated,
  kBadWireType
};

// Tensors at least this large are left in the source mapping.
constexpr size_t kApartMinBytes = 4096;

// A NodeDef's bytes without the tensor_content of its `value` attr, and
// where that content lies in the NodeDef's bytes.
struct StrippedNode {
  std::string bytes;
  size_t content_offset = 0;
  size_t content_size = 0;
};

// Reads a base-128 varint; false when the bytes end first or it is too long.
bool ReadVarint(absl::string_view bytes, size_t* pos, uint64_t* value);

// Reads the field at `*pos` and moves past it; `field` gets its number and
// wire type even when the rest is malformed.
WireProblem ReadField(absl::string_view message, size_t* pos, WireField* field);

// The fields of `message` in order; false when its bytes are malformed.
bool ReadFields(absl::string_view message, std::vector<WireField>* fields);

size_t VarintSize(uint64_t value);

void AppendVarint(uint64_t value, std::string* out);

// NodeDef.attr["value"].tensor.tensor_content (fields 5 -> 2 -> 8 -> 4)
// when it is large and stands alone: exactly one `value` entry, holding
// only a tensor, with exactly one content field. Anything else is parsed
// as it is.
std::optional<StrippedNode> StripValueContent(absl::string_view node);

}  // namespace graft::wire

#endif  // GRAFT_ENGINE_WIRE_FORMAT_H_
