#include "engine/graph_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/background_writer.h"
#include "engine/file_writer.h"
#include "engine/files.h"
#include "engine/wire_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/text_format.h"
namespace graft {
namespace {

// How deep messages may nest in a graph file (protobuf's own default for
// binary input).
constexpr int kMaxMessageNesting = 100;

using wire::AppendVarint;
using wire::kApartMinBytes;
using wire::ReadField;
using wire::StrippedNode;
using wire::StripValueContent;
using wire::VarintSize;
using wire::WireField;
using wire::WireProblem;

bool LooksLikeText(absl::string_view bytes) {
  absl::string_view head(bytes.data(), std::min<size_t>(bytes.size(), 64));
  head = absl::StripLeadingAsciiWhitespace(head);
  return absl::StartsWith(head, "node") || absl::StartsWith(head, "versions") ||
         absl::StartsWith(head, "library") || absl::StartsWith(head, "#");
}

// Threads for parsing `nodes` nodes: one per core for large graphs.
size_t ParseThreads(size_t nodes) {
  constexpr size_t kNodesPerThread = 50000;
  size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min(cores, nodes / kNodesPerThread));
}

class TextErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      line_ = line + 1;
      column_ = column + 1;
      message_ = message;
    }
  }
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

void AppendNodeField(const tf::NodeDef& def, std::string* out) {
  size_t size = def.ByteSizeLong();
  out->push_back(static_cast<char>((1 << 3) | 2));  // field 1, length-delimited
  AppendVarint(size, out);
  // Serialize straight into the output, deterministically (attrs sorted).
  size_t at = out->size();
  out->resize(at + size);
  google::protobuf::io::ArrayOutputStream stream(out->data() + at,
                                                 static_cast<int>(size));
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  def.SerializeWithCachedSizes(&coded);
}

}  // namespace

// Builds a Graph from binary GraphDef bytes, remembering where every
// top-level field lies so that saving can copy unmodified bytes.
class GraphBuilder {
 public:
  // The top-level fields of a binary GraphDef, and the node fields'
  // payloads (offset, length), without parsing them.
  static absl::Status FindFields(absl::string_view data, absl::string_view source, int fd,
                                 std::vector<Graph::SourceSegment>* segments,
                                 std::vector<std::pair<size_t, size_t>>* payloads) {
    size_t pos = 0;
    while (pos < data.size()) {
      size_t start = pos;
      WireField f;
      switch (ReadField(data, &pos, &f)) {
        case WireProblem::kNone:
          break;
        case WireProblem::kBadTag:
          return Garbled(source, data, start, "a malformed field tag");
        case WireProblem::kTruncatedVarint:
          return Garbled(source, data, start, "a truncated varint");
        case WireProblem::kTruncated:
          return Garbled(
              source, data, start,
              f.number == 1 && f.wire_type == 2
                  ? absl::StrCat("node #", payloads->size(), " is truncated")
                  : "a truncated field");
        case WireProblem::kBadWireType:
          return Garbled(source, data, start,
                         absl::StrCat("an invalid wire type ", f.wire_type));
      }
      int field = f.number;
      size_t length = f.end - f.payload;
      Graph::SourceSegment segment;
      segment.field_number = field;
      segment.offset = start;
      segment.size = pos - start;
      if (field == 1) {
        if (f.wire_type != 2) {
          return Garbled(source, data, start, "a node field of the wrong type");
        }
        if (length > static_cast<size_t>(std::numeric_limits<int>::max())) {
          return Garbled(source, data, start, "a node larger than 2 GiB");
        }
        payloads->emplace_back(f.payload, length);
        // Reading the node's tag mapped the pages around it (a large folio
        // at a time): a large node's go back until pass 2 reads it.
        if (fd >= 0 && length >= kApartMinBytes) ReleaseMappedPages(data.substr(f.payload, length));
      }
      segments->push_back(segment);
    }
    return absl::OkStatus();
  }

  // `bytes` (and `fd`, the file they are mapped from, or -1) stay alive as
  // long as `owner` does.
  static absl::StatusOr<Graph> FromBinary(std::shared_ptr<const void> owner,
                                          absl::string_view bytes,
                                          absl::string_view source,
                                          int fd = -1) {
    Graph graph;
    graph.source_owner_ = std::move(owner);
    graph.source_bytes_ = bytes;
    graph.source_fd_ = fd;
    absl::string_view data = graph.source_bytes_;
    // Pass 1: find the top-level fields without parsing them.
    std::vector<Graph::SourceSegment> segments;
    std::vector<std::pair<size_t, size_t>> payloads;  // of node fields
    absl::Status found = FindFields(data, source, fd, &segments, &payloads);
    if (!found.ok()) return found;
    // Pass 2: parse the nodes into the graph's arena (on several threads
    // for large graphs; the arena is thread-safe and the result does not
    // depend on the thread count), then index them in file order.
    std::vector<tf::NodeDef*> defs(payloads.size());
    std::vector<absl::string_view> kept_apart(payloads.size());
    std::atomic<size_t> first_bad{defs.size()};
    auto parse_range = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        defs[i] = graph.NewNodeDef();
        const auto& [payload, length] = payloads[i];
        absl::string_view node = data.substr(payload, length);
        // A large constant is parsed without its content, which stays in
        // the mapping (no copy of the weights).
        std::optional<StrippedNode> stripped;
        if (length >= kApartMinBytes) stripped = StripValueContent(node);
        if (stripped) {
          kept_apart[i] =
              node.substr(stripped->content_offset, stripped->content_size);
          node = stripped->bytes;
          // Reading the node's other fields mapped the pages around them
          // (the kernel maps a large folio at a time): the content's go
          // back until something reads it.
          if (fd >= 0) ReleaseMappedPages(kept_apart[i]);
        }
        if (!defs[i]->ParseFromArray(node.data(),
                                     static_cast<int>(node.size()))) {
          size_t seen = first_bad.load();
          while (i < seen && !first_bad.compare_exchange_weak(seen, i)) {
          }
          return;
        }
      }
    };
    size_t threads = ParseThreads(defs.size());
    std::vector<std::thread> workers;
    size_t chunk = (defs.size() + threads - 1) / threads;
    for (size_t t = 1; t < threads; ++t) {
      workers.emplace_back(parse_range, std::min(defs.size(), t * chunk),
                           std::min(defs.size(), (t + 1) * chunk));
    }
    parse_range(0, std::min(defs.size(), chunk));
    for (std::thread& w : workers) w.join();

    graph.name_index_.reserve(payloads.size());
    int ordinal = 0;
    for (Graph::SourceSegment& segment : segments) {
      if (segment.field_number != 1) {
        if (!graph.header_.MergeFromString(
                std::string(data.substr(segment.offset, segment.size)))) {
          return Garbled(source, data, segment.offset,
                         absl::StrCat("graph field ", segment.field_number,
                                      " does not parse"));
        }
        continue;
      }
      if (static_cast<size_t>(ordinal) == first_bad.load()) {
        return Garbled(source, data, segment.offset,
                       absl::StrCat("node #", ordinal, " does not parse"));
      }
      absl::StatusOr<NodeId> id = graph.AddSourceNode(defs[ordinal], ordinal);
      if (!id.ok()) return Located(source, id.status().message());
      if (!kept_apart[ordinal].empty()) {
        // A mapped file's weights can give their pages back once read.
        graph.mutable_node(*id).content_ =
            graph.source_fd_ >= 0 ? MappedContent(kept_apart[ordinal], graph.source_owner_)
                                  : ViewContent(kept_apart[ordinal], graph.source_owner_);
      }
      segment.node = *id;
      ++ordinal;
    }
    graph.source_segments_ = std::move(segments);
    absl::Status status = graph.ResolveAllInputs();
    if (!status.ok()) return Located(source, status.message());
    return graph;
  }

  static absl::StatusOr<Graph> FromText(const std::string& text,
                                        absl::string_view source) {
    tf::GraphDef def;
    google::protobuf::TextFormat::Parser parser;
    // As deep as protobuf lets a binary GraphDef nest; deeper text would
    // overflow the parser's stack.
    parser.SetRecursionLimit(kMaxMessageNesting);
    TextErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(text, &def)) {
      if (errors.has_error_) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ":", errors.line_, ":", errors.column_,
                         ": error: ", errors.message_));
      }
      return Located(source, "not a text GraphDef");
    }
    absl::Status utf8 = CheckUtf8(def);
    if (!utf8.ok()) return Located(source, utf8.message());
    absl::StatusOr<Graph> graph = Graph::FromGraphDef(std::move(def));
    if (!graph.ok()) return Located(source, graph.status().message());
    return graph;
  }

  // Protobuf reads (and TensorFlow writes) only UTF-8 in string fields; text
  // escapes can spell anything, which no binary GraphDef could hold.
  static absl::Status CheckUtf8(const tf::GraphDef& def) {
    for (int i = 0; i < def.node_size(); ++i) {
      const tf::NodeDef& n = def.node(i);
      std::vector<const std::string*> fields = {&n.name(), &n.op(),
                                                &n.device()};
      for (const std::string& in : n.input()) fields.push_back(&in);
      for (const auto& [key, value] : n.attr()) fields.push_back(&key);
      for (const std::string* f : fields) {
        // Protobuf's own check, the one its parser applies to binary input.
        if (!google::protobuf::internal::IsStructurallyValidUTF8(
                f->data(), static_cast<int>(f->size()))) {
          return absl::InvalidArgumentError(absl::StrCat(
              "node ", i, ": `", absl::CHexEscape(*f),
              "` is not valid UTF-8 (a GraphDef's names must be)"));
        }
      }
      // Attr values with string fields (function names, placeholders):
      // what a binary GraphDef could not hold fails protobuf's parse.
      for (const auto& [key, value] : n.attr()) {
        if (!value.has_func() && value.placeholder().empty() && value.list().func().empty())
          continue;
        tf::AttrValue copy;
        std::string bytes;
        google::protobuf::LogSilencer quiet;
        if (!value.SerializeToString(&bytes) || !copy.ParseFromString(bytes))
          return absl::InvalidArgumentError(absl::StrCat(
              "node ", i, ": attr `", key,
              "` holds a string that is not valid UTF-8 (a GraphDef's strings must be)"));
      }
    }
    // The rest (function library, debug info): whatever a binary GraphDef
    // could not hold fails protobuf's own parse of it.
    tf::GraphDef rest;
    *rest.mutable_library() = def.library();
    *rest.mutable_debug_info() = def.debug_info();
    std::string bytes;
    google::protobuf::LogSilencer quiet;
    if (!rest.SerializeToString(&bytes) || !rest.ParseFromString(bytes)) {
      return absl::InvalidArgumentError(
          "the function library or debug info holds a string that is not "
          "valid UTF-8 (a GraphDef's strings must be)");
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status Garbled(absl::string_view source, absl::string_view data,
                              size_t offset, absl::string_view what) {
    std::string hint;
    if (LooksLikeText(data)) {
      hint =
          " (it looks like a text GraphDef: name it `.pbtxt` or pass "
          "--format=pbtxt)";
    }
    return Located(source, absl::StrCat("not a valid binary GraphDef: ", what,
                                        " at byte ", offset, hint));
  }
};


namespace {

// The field (tag, length, NodeDef) of a modified or new node, serialized
// deterministically (attrs sorted), as pieces: a large `value` tensor's
// content is passed on where it lies (the source mapping or the node's own
// string) instead of being copied into `scratch` with the rest. The bytes
// equal AppendNodeField(graph.ExportNodeDef(id)).
template <typename Sink>
void EmitNode(const Graph& graph, NodeId id, std::string* scratch,
              Sink&& sink) {
  const Node& node = graph.node(id);
  const tf::NodeDef& def = node.def();
  const tf::AttrValue* value = node.attr("value");
  // (Not value_content(): a computed content is made piece by piece below.)
  const std::shared_ptr<const TensorContent>& kept = node.value_content_apart();
  size_t content_size = kept != nullptr ? kept->size()
                        : value != nullptr
                            ? value->tensor().tensor_content().size()
                            : 0;
  bool in_pieces = value != nullptr && content_size >= kApartMinBytes &&
                   value->value_case() == tf::AttrValue::kTensor &&
                   value->GetReflection()->GetUnknownFields(*value).empty() &&
                   def.GetReflection()->GetUnknownFields(def).empty();
  // The tensor without its content: dtype, shape and version.
  tf::TensorProto head;
  size_t content_field = 1 + VarintSize(content_size) + content_size;
  if (in_pieces) {
    const tf::TensorProto& tensor = value->tensor();
    head.set_dtype(tensor.dtype());
    *head.mutable_tensor_shape() = tensor.tensor_shape();
    head.set_version_number(tensor.version_number());
    size_t whole =
        tensor.ByteSizeLong() + (kept != nullptr ? content_field : 0);
    // Anything else in the tensor (typed values, unknown fields): the
    // plain path.
    in_pieces = head.ByteSizeLong() + content_field == whole;
  }
  scratch->clear();
  if (!in_pieces) {
    AppendNodeField(graph.ExportNodeDef(id), scratch);
    sink(absl::string_view(*scratch));
    return;
  }
  // Fields in number order: name, op, input, device; attrs sorted by key
  // with `value` built by hand; debug info and type.
  tf::NodeDef first, before, after, last;
  first.set_name(def.name());
  first.set_op(def.op());
  *first.mutable_input() = graph.ExportInputs(id);
  first.set_device(def.device());
  for (const auto& [key, attr] : def.attr()) {
    if (key < "value") (*before.mutable_attr())[key] = attr;
    if (key > "value") (*after.mutable_attr())[key] = attr;
  }
  if (def.has_experimental_debug_info()) {
    *last.mutable_experimental_debug_info() = def.experimental_debug_info();
  }
  if (def.has_experimental_type()) {
    *last.mutable_experimental_type() = def.experimental_type();
  }
  std::string head_bytes = SerializeDeterministic(head);
  std::string prefix =
      SerializeDeterministic(first) + SerializeDeterministic(before);
  std::string suffix =
      SerializeDeterministic(after) + SerializeDeterministic(last);
  size_t tensor_length = head_bytes.size() + content_field;
  size_t attr_length = 1 + VarintSize(tensor_length) + tensor_length;
  size_t entry_length = 7 + 1 + VarintSize(attr_length) + attr_length;
  size_t node_length = prefix.size() + 1 + VarintSize(entry_length) +
                       entry_length + suffix.size();
  scratch->push_back(static_cast<char>((1 << 3) | 2));  // GraphDef.node
  AppendVarint(node_length, scratch);
  scratch->append(prefix);
  scratch->push_back(static_cast<char>((5 << 3) | 2));  // NodeDef.attr
  AppendVarint(entry_length, scratch);
  scratch->append("\x0a\x05value", 7);                  // key
  scratch->push_back(static_cast<char>((2 << 3) | 2));  // value
  AppendVarint(attr_length, scratch);
  scratch->push_back(static_cast<char>((8 << 3) | 2));  // AttrValue.tensor
  AppendVarint(tensor_length, scratch);
  scratch->append(head_bytes);
  scratch->push_back(static_cast<char>((4 << 3) | 2));  // tensor_content
  AppendVarint(content_size, scratch);
  sink(absl::string_view(*scratch));
  if (kept != nullptr) {
    kept->Emit([&](absl::string_view piece) { sink(piece); });
  } else {
    sink(absl::string_view(value->tensor().tensor_content()));
  }
  scratch->swap(suffix);
  sink(absl::string_view(*scratch));
}

// The binary graph as pieces, in order: copies of unmodified source bytes
// (views into the source) and re-encoded nodes (in `scratch`, valid until
// the next piece). Erased nodes are dropped; new nodes follow the source's
// last node.
template <typename Sink>
void EmitBinary(const Graph& graph, Sink&& sink) {
  const auto& segments = graph.source_segments();
  absl::string_view source = graph.source_bytes();
  std::string scratch;
  auto emit_node = [&](NodeId id) { EmitNode(graph, id, &scratch, sink); };
  // A rewritten library replaces the source's library field(s), once.
  bool library_emitted = !graph.library_modified();
  std::string library;
  auto emit_library = [&] {
    library_emitted = true;
    tf::GraphDef only;
    *only.mutable_library() = graph.header().library();
    library = SerializeDeterministic(only);
    sink(absl::string_view(library));
  };
  auto emit_field = [&](size_t i) {
    if (segments[i].field_number != 2 || !graph.library_modified()) {
      sink(source.substr(segments[i].offset, segments[i].size));
    } else if (!library_emitted) {
      emit_library();
    }
  };
  if (graph.has_output_order()) {
    // The other fields, then the nodes in order: unmodified ones still
    // copied from the source.
    std::vector<int> segment_of(graph.id_limit(), -1);
    for (size_t i = 0; i < segments.size(); ++i) {
      if (segments[i].field_number == 1)
        segment_of[segments[i].node] = static_cast<int>(i);
      else
        emit_field(i);
    }
    if (!library_emitted) emit_library();
    for (NodeId id : graph.OutputOrder()) {
      int s = segment_of[id];
      if (s >= 0 && !graph.node(id).modified())
        sink(source.substr(segments[s].offset, segments[s].size));
      else
        emit_node(id);
    }
    return;
  }
  NodeId first_new = 0;
  size_t last_node_segment = segments.size();
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].field_number == 1) {
      last_node_segment = i;
      first_new = segments[i].node + 1;
    }
  }
  auto emit_new_nodes = [&] {
    for (NodeId id = first_new; id < graph.id_limit(); ++id) {
      if (graph.node(id).alive()) emit_node(id);
    }
  };
  if (last_node_segment == segments.size()) emit_new_nodes();
  for (size_t i = 0; i < segments.size(); ++i) {
    const Graph::SourceSegment& segment = segments[i];
    absl::string_view bytes(source.data() + segment.offset, segment.size);
    if (segment.field_number != 1) {
      emit_field(i);
    } else {
      const Node& node = graph.node(segment.node);
      if (node.alive()) {
        if (node.modified()) {
          emit_node(node.id());
        } else {
          sink(bytes);
        }
      }
    }
    if (i == last_node_segment) emit_new_nodes();
  }
  if (!library_emitted) emit_library();
}

}  // namespace

bool IsTextGraphPath(absl::string_view path) {
  std::string lower = absl::AsciiStrToLower(path);
  for (const char* ext : {".pbtxt", ".txt", ".prototxt"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

absl::StatusOr<Graph> ParseGraphDef(std::shared_ptr<const void> owner,
                                    absl::string_view bytes,
                                    absl::string_view source, int fd) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Located(source, "larger than 2 GiB, the limit of a GraphDef file");
  }
  return GraphBuilder::FromBinary(std::move(owner), bytes, source, fd);
}

absl::StatusOr<Graph> ParseGraphDefText(const std::string& text,
                                        absl::string_view source) {
  if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Located(source, "larger than 2 GiB, the limit of a GraphDef file");
  }
  return GraphBuilder::FromText(text, source);
}

absl::StatusOr<Graph> ReadGraphFile(const std::string& path, bool text, bool allow_empty,
                                    absl::string_view what) {
  if (!text) {
    if (std::optional<FileMapping> mapping = MapFile(path, /*populate=*/false))
      return ParseGraphDef(std::move(mapping->owner), mapping->bytes, path, mapping->fd);
  }
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->empty() && !allow_empty) {
    return Located(path, absl::StrCat("is empty (0 bytes), not ", what,
                                      "; pass --allow-empty to read it as a graph of no nodes"));
  }
  if (text) return ParseGraphDefText(*bytes, path);
  auto owner = std::make_shared<const std::string>(*std::move(bytes));
  absl::string_view view(*owner);
  return ParseGraphDef(std::move(owner), view, path);
}

std::string SerializeGraphDef(const Graph& graph, bool text) {
  if (text) {
    std::string out;
    google::protobuf::TextFormat::Printer printer;
    printer.PrintToString(graph.ToGraphDef(), &out);
    return out;
  }
  if (graph.source_segments().empty())
    return SerializeDeterministic(graph.ToGraphDef());
  // Binary with a source: copy unmodified bytes, re-encode modified nodes.
  std::string out;
  out.reserve(graph.source_bytes().size());
  EmitBinary(graph, [&](absl::string_view piece) {
    out.append(piece.data(), piece.size());
  });
  return out;
}

absl::Status SaveGraphDef(const Graph& graph, const std::string& path, bool text) {
  if (text || graph.source_segments().empty()) {
    return WriteFileAtomically(path, SerializeGraphDef(graph, text));
  }
  // Stream the pieces: unmodified bytes go from the source to the file with
  // no output buffer (large ranges copied inside the kernel when the source
  // is a mapped file); small pieces are gathered into 1 MiB writes.
  return WriteFileAtomicallyWith(path, [&](const FileWriter& out) {
    // Written on a second thread while the next pieces are made.
    BackgroundWriter background(out, graph.source_bytes(), graph.source_fd());
    auto in_source = [&](absl::string_view piece) { return background.InSource(piece); };
    FileWriter queued;
    queued.write = [&](absl::string_view piece) {
      background.Write(piece);
      return absl::OkStatus();
    };
    PieceWriter writer(queued, queued.write);
    // Pieces that follow each other in the source go as one range (one
    // copy in the kernel for a run of unmodified nodes, not one a node).
    absl::string_view run;
    EmitBinary(graph, [&](absl::string_view piece) {
      if (!run.empty() && in_source(piece) && run.data() + run.size() == piece.data()) {
        run = absl::string_view(run.data(), run.size() + piece.size());
        return;
      }
      if (!run.empty()) writer(run);
      run = absl::string_view();
      if (in_source(piece)) {
        run = piece;
      } else {
        writer(piece);
      }
    });
    if (!run.empty()) writer(run);
    absl::Status queued_all = writer.Finish();
    absl::Status written = background.Finish();
    return written.ok() ? queued_all : written;
  });
}

}  // namespace graft
