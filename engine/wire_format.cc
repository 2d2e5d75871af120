#include "engine/wire_format.h"

namespace graft::wire {

// Reads a base-128 varint; false when the bytes end first or it is too long.
bool ReadVarint(absl::string_view bytes, size_t* pos, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= bytes.size()) return false;
    uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

// Reads the field at `*pos` and moves past it; `field` gets its number and
// wire type even when the rest is malformed.
WireProblem ReadField(absl::string_view message, size_t* pos,
                      WireField* field) {
  WireField& f = *field;
  f.start = *pos;
  uint64_t tag = 0, length = 0;
  if (!ReadVarint(message, pos, &tag) || (tag >> 3) == 0) {
    return WireProblem::kBadTag;
  }
  f.number = static_cast<int>(tag >> 3);
  f.wire_type = static_cast<int>(tag & 7);
  switch (f.wire_type) {
    case 0:
      if (!ReadVarint(message, pos, &length)) {
        return WireProblem::kTruncatedVarint;
      }
      break;
    case 1:
      *pos += 8;
      break;
    case 5:
      *pos += 4;
      break;
    case 2:
      if (!ReadVarint(message, pos, &length) ||
          length > message.size() - *pos) {
        return WireProblem::kTruncated;
      }
      *pos += length;
      break;
    default:
      return WireProblem::kBadWireType;
  }
  if (*pos > message.size()) return WireProblem::kTruncated;
  f.payload = f.wire_type == 2 ? *pos - length : f.start;
  f.end = *pos;
  return WireProblem::kNone;
}

// The fields of `message` in order; false when its bytes are malformed.
bool ReadFields(absl::string_view message, std::vector<WireField>* fields) {
  size_t pos = 0;
  while (pos < message.size()) {
    WireField f;
    if (ReadField(message, &pos, &f) != WireProblem::kNone) return false;
    fields->push_back(f);
  }
  return true;
}

size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// NodeDef.attr["value"].tensor.tensor_content (fields 5 -> 2 -> 8 -> 4)
// when it is large and stands alone: exactly one `value` entry, holding
// only a tensor, with exactly one content field. Anything else is parsed
// as it is.
std::optional<StrippedNode> StripValueContent(absl::string_view node) {
  std::vector<WireField> fields;
  if (!ReadFields(node, &fields)) return std::nullopt;
  const WireField* entry = nullptr;
  WireField value, tensor, content;
  for (const WireField& f : fields) {
    if (f.number != 5 || f.wire_type != 2) continue;
    absl::string_view entry_bytes = node.substr(f.payload, f.end - f.payload);
    std::vector<WireField> parts;
    if (!ReadFields(entry_bytes, &parts)) return std::nullopt;
    const WireField* key = nullptr;
    const WireField* val = nullptr;
    for (const WireField& p : parts) {
      if (p.number == 1 && p.wire_type == 2) key = &p;
      if (p.number == 2 && p.wire_type == 2) val = &p;
    }
    if (key == nullptr ||
        entry_bytes.substr(key->payload, key->end - key->payload) != "value") {
      continue;
    }
    if (entry != nullptr || val == nullptr || parts.size() != 2) {
      return std::nullopt;
    }
    entry = &f;
    value = *val;
  }
  if (entry == nullptr) return std::nullopt;
  // Offsets below are relative to the node.
  value.start += entry->payload;
  value.payload += entry->payload;
  value.end += entry->payload;
  std::vector<WireField> attr_fields;
  if (!ReadFields(node.substr(value.payload, value.end - value.payload),
                  &attr_fields) ||
      attr_fields.size() != 1 || attr_fields[0].number != 8 ||
      attr_fields[0].wire_type != 2) {
    return std::nullopt;
  }
  tensor = attr_fields[0];
  tensor.start += value.payload;
  tensor.payload += value.payload;
  tensor.end += value.payload;
  std::vector<WireField> tensor_fields;
  if (!ReadFields(node.substr(tensor.payload, tensor.end - tensor.payload),
                  &tensor_fields)) {
    return std::nullopt;
  }
  int contents = 0;
  for (const WireField& f : tensor_fields) {
    if (f.number == 4) {
      if (f.wire_type != 2) return std::nullopt;
      content = f;
      ++contents;
    }
  }
  if (contents != 1 || content.end - content.payload < kApartMinBytes) {
    return std::nullopt;
  }
  content.start += tensor.payload;
  content.payload += tensor.payload;
  content.end += tensor.payload;
  // Rebuild the three enclosing length prefixes without the content field.
  size_t removed = content.end - content.start;
  size_t tensor_length = tensor.end - tensor.payload - removed;
  size_t value_length = 1 + VarintSize(tensor_length) + tensor_length;
  size_t entry_length = (value.start - entry->payload) + 1 +
                        VarintSize(value_length) + value_length +
                        (entry->end - value.end);
  StrippedNode out;
  out.bytes.reserve(node.size() - removed);
  auto copy = [&](size_t from, size_t to) {
    out.bytes.append(node.data() + from, to - from);
  };
  copy(0, entry->start);
  out.bytes.push_back(static_cast<char>((5 << 3) | 2));
  AppendVarint(entry_length, &out.bytes);
  copy(entry->payload, value.start);
  out.bytes.push_back(static_cast<char>((2 << 3) | 2));
  AppendVarint(value_length, &out.bytes);
  out.bytes.push_back(static_cast<char>((8 << 3) | 2));
  AppendVarint(tensor_length, &out.bytes);
  copy(tensor.payload, content.start);
  copy(content.end, entry->end);
  copy(entry->end, node.size());
  out.content_offset = content.payload;
  out.content_size = content.end - content.payload;
  return out;
}

}  // namespace graft::wire
