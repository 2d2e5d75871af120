#include "dialects/onnx/onnx_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/wire_format.h"

namespace graft::onnx_data {
namespace {

constexpr int kModelGraph = 7;         // ModelProto.graph
constexpr int kGraphInitializer = 5;   // GraphProto.initializer
constexpr int kTensorRawData = 9;      // TensorProto.raw_data

void AppendField(int number, absl::string_view payload, std::string* out) {
  wire::AppendVarint(static_cast<uint64_t>(number) << 3 | 2, out);
  wire::AppendVarint(payload.size(), out);
  out->append(payload.data(), payload.size());
}

// A TensorProto without its one large raw_data field; nullopt to keep it.
std::optional<std::string> StripTensor(absl::string_view tensor,
                                       absl::string_view* cut) {
  std::vector<wire::WireField> fields;
  if (!wire::ReadFields(tensor, &fields)) return std::nullopt;
  const wire::WireField* raw = nullptr;
  for (const wire::WireField& f : fields) {
    if (f.number != kTensorRawData) continue;
    if (raw != nullptr || f.wire_type != 2) return std::nullopt;
    raw = &f;
  }
  if (raw == nullptr || raw->end - raw->payload < wire::kApartMinBytes)
    return std::nullopt;
  *cut = tensor.substr(raw->payload, raw->end - raw->payload);
  std::string out(tensor.substr(0, raw->start));
  absl::string_view rest = tensor.substr(raw->end);
  out.append(rest.data(), rest.size());
  return out;
}

}  // namespace

std::optional<StrippedModel> StripInitializerData(absl::string_view model) {
  std::vector<wire::WireField> fields;
  if (!wire::ReadFields(model, &fields)) return std::nullopt;
  StrippedModel out;
  int graphs = 0;
  for (const wire::WireField& f : fields) {
    absl::string_view bytes = model.substr(f.start, f.end - f.start);
    if (f.number != kModelGraph) {
      out.bytes.append(bytes.data(), bytes.size());
      continue;
    }
    if (f.wire_type != 2 || ++graphs > 1) return std::nullopt;
    absl::string_view graph = model.substr(f.payload, f.end - f.payload);
    std::vector<wire::WireField> graph_fields;
    if (!wire::ReadFields(graph, &graph_fields)) return std::nullopt;
    std::string stripped;
    for (const wire::WireField& g : graph_fields) {
      absl::string_view field = graph.substr(g.start, g.end - g.start);
      if (g.number != kGraphInitializer || g.wire_type != 2) {
        stripped.append(field.data(), field.size());
        continue;
      }
      absl::string_view tensor = graph.substr(g.payload, g.end - g.payload);
      absl::string_view cut;
      std::optional<std::string> rest = StripTensor(tensor, &cut);
      out.raw_data.push_back(cut);
      if (rest.has_value()) {
        AppendField(kGraphInitializer, *rest, &stripped);
      } else {
        stripped.append(field.data(), field.size());
      }
    }
    AppendField(kModelGraph, stripped, &out.bytes);
  }
  return out;
}

absl::StatusOr<ExternalRef> ExternalRefOf(const onnx::TensorProto& tensor) {
  ExternalRef ref;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor `", tensor.name(), "`: external data ", what));
  };
  for (const onnx::StringStringEntryProto& e : tensor.external_data()) {
    if (e.key() == "location") {
      ref.location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(e.value(), &v) || v < 0)
        return bad(absl::StrCat("`", e.key(), "` is `", e.value(),
                                "`, not a byte count"));
      (e.key() == "offset" ? ref.offset : ref.length) = v;
    }
  }
  if (ref.location.empty()) return bad("has no location");
  if (ref.location[0] == '/' || absl::StrContains(ref.location, '\\'))
    return bad(absl::StrCat("location `", ref.location,
                            "` is not relative to the model's folder"));
  for (absl::string_view part : absl::StrSplit(ref.location, '/')) {
    if (part == ".." || part.empty())
      return bad(absl::StrCat("location `", ref.location,
                              "` leaves the model's folder or is malformed"));
  }
  return ref;
}

struct ExternalFiles::Mapping {
  const char* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (size > 0) munmap(const_cast<char*>(data), size);
  }
};

absl::StatusOr<std::shared_ptr<const TensorContent>> ExternalFiles::Content(
    const ExternalRef& ref, const std::string& tensor, int64_t expected) {
  const std::string path =
      dir_.empty() ? ref.location : absl::StrCat(dir_, "/", ref.location);
  auto it = files_.find(ref.location);
  if (it == files_.end()) {
    absl::StatusOr<int> opened =
        inside_.Open(path, absl::StrCat("the external data of tensor `", tensor, "`"));
    if (!opened.ok()) return opened.status();
    const int fd = *opened;
    struct stat info;
    if (fstat(fd, &info) != 0) {
      close(fd);
      return absl::InternalError(absl::StrCat(path, ": error: cannot stat it"));
    }
    auto mapping = std::make_shared<Mapping>();
    if (info.st_size > 0) {
      void* data = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ,
                        MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        close(fd);
        return absl::InternalError(absl::StrCat(path, ": error: cannot map it"));
      }
      mapping->data = static_cast<const char*>(data);
      mapping->size = static_cast<size_t>(info.st_size);
    }
    close(fd);
    it = files_.emplace(ref.location, std::move(mapping)).first;
  }
  const Mapping& file = *it->second;
  const int64_t size = static_cast<int64_t>(file.size);
  const int64_t length = ref.length >= 0 ? ref.length : size - ref.offset;
  if (ref.offset > size || length > size - ref.offset)
    return absl::OutOfRangeError(absl::StrCat(
        path, ": error: tensor `", tensor, "` lies at bytes ", ref.offset,
        " to ", ref.offset + length, ", past the file's end (", size,
        " bytes)"));
  if (expected >= 0 && length != expected)
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": error: tensor `", tensor, "` has ", length,
        " bytes of external data; its shape and type need ", expected));
  return ViewContent(
      absl::string_view(file.data + ref.offset, static_cast<size_t>(length)),
      it->second);
}

void Pieces::Own(std::string bytes) {
  size_ += bytes.size();
  pieces_.push_back(Piece{std::move(bytes), {}, nullptr, nullptr});
}

void Pieces::Borrow(absl::string_view bytes) {
  size_ += bytes.size();
  pieces_.push_back(Piece{{}, bytes, nullptr, nullptr});
}

void Pieces::Content(std::shared_ptr<const TensorContent> content) {
  size_ += content->size();
  pieces_.push_back(Piece{{}, {}, std::move(content), nullptr});
}

void Pieces::Append(Pieces inner) {
  size_ += inner.size();
  pieces_.push_back(
      Piece{{}, {}, nullptr, std::make_shared<const Pieces>(std::move(inner))});
}

void Pieces::Field(int number, Pieces inner) {
  std::string header;
  wire::AppendVarint(static_cast<uint64_t>(number) << 3 | 2, &header);
  wire::AppendVarint(inner.size(), &header);
  Own(std::move(header));
  size_ += inner.size();
  pieces_.push_back(
      Piece{{}, {}, nullptr, std::make_shared<const Pieces>(std::move(inner))});
}

void Pieces::Emit(const Sink& sink) const {
  for (const Piece& p : pieces_) {
    if (p.nested != nullptr) {
      p.nested->Emit(sink);
    } else if (p.content != nullptr) {
      p.content->Emit(sink);
    } else if (!p.owned.empty()) {
      sink(p.owned);
    } else if (!p.view.empty()) {
      sink(p.view);
    }
  }
}

std::pair<std::string, std::string> SplitAt(const std::string& message,
                                            int number) {
  std::vector<wire::WireField> fields;
  if (!wire::ReadFields(message, &fields)) return {message, ""};
  for (const wire::WireField& f : fields) {
    if (f.number > number)
      return {message.substr(0, f.start), message.substr(f.start)};
  }
  return {message, ""};
}

}  // namespace graft::onnx_data
