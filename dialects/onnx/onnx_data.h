// Where an ONNX model's tensor bytes lie, for the ONNX codec
// (dialects/onnx/onnx_model.h): large initializers' raw_data cut out of the model
// before protobuf parses it (so they stay in the file's mapping, never
// copied), external data (`data_location: EXTERNAL`) mapped lazily from
// the files beside the model, and the hand-written wire pieces that put
// such bytes back when the model is written. Internal to the codec.
#ifndef GRAFT_DIALECTS_ONNX_ONNX_DATA_H_
#define GRAFT_DIALECTS_ONNX_ONNX_DATA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/files.h"
#include "engine/tensor_content.h"
#include "proto/onnx.pb.h"

namespace graft::onnx_data {

// A ModelProto's bytes without the large raw_data of its graph's
// initializers, and those bytes (by initializer ordinal; empty: not cut).
struct StrippedModel {
  std::string bytes;
  std::vector<absl::string_view> raw_data;
};

// Cuts out the raw_data of initializers holding at least
// wire::kApartMinBytes; nullopt when the bytes are not plainly a model
// (malformed, several graph fields): protobuf then parses them as they
// are and says what is wrong.
std::optional<StrippedModel> StripInitializerData(absl::string_view model);

// A tensor's external_data entries.
struct ExternalRef {
  std::string location;  // relative to the model's folder
  int64_t offset = 0;
  int64_t length = -1;  // -1: to the end of the file
};

// The entries of an external tensor; an error for a missing or absolute
// location, one that leaves the model's folder, or a bad offset or length.
absl::StatusOr<ExternalRef> ExternalRefOf(const onnx::TensorProto& tensor);

// The data files beside a model, each mapped read-only once, pages read
// only when a tensor's bytes are.
class ExternalFiles {
 public:
  // `dir`: the model's folder; `model_file`: the model's own path (its
  // real folder may hold the data too: ModelFolder).
  ExternalFiles(std::string dir, const std::string& model_file)
      : dir_(std::move(dir)), inside_(ModelFolder::Of(dir_, model_file)) {}
  // The `expected` bytes `ref` names; errors name the file and the tensor
  // (a missing file, a range past its end, a length that is not the
  // tensor's size).
  absl::StatusOr<std::shared_ptr<const TensorContent>> Content(
      const ExternalRef& ref, const std::string& tensor, int64_t expected);

 private:
  struct Mapping;
  std::string dir_;
  ModelFolder inside_;
  std::map<std::string, std::shared_ptr<const Mapping>> files_;
};

// An output file as pieces: bytes held, bytes borrowed (from the source
// mapping or the graph), or a tensor's content emitted as it is computed.
class Pieces {
 public:
  using Sink = std::function<void(absl::string_view)>;
  void Own(std::string bytes);
  void Borrow(absl::string_view bytes);
  void Content(std::shared_ptr<const TensorContent> content);
  // `inner`'s pieces, after these.
  void Append(Pieces inner);
  // A length-delimited field (tag, length) holding `inner`.
  void Field(int number, Pieces inner);
  uint64_t size() const { return size_; }
  void Emit(const Sink& sink) const;

 private:
  struct Piece {
    std::string owned;
    absl::string_view view;
    std::shared_ptr<const TensorContent> content;
    std::shared_ptr<const Pieces> nested;
  };
  std::vector<Piece> pieces_;
  uint64_t size_ = 0;
};

// `message`'s serialized bytes split before the first field numbered above
// `number` (protobuf writes known fields in number order), for inserting
// field `number` by hand where protobuf would write it.
std::pair<std::string, std::string> SplitAt(const std::string& message,
                                            int number);

}  // namespace graft::onnx_data

#endif  // GRAFT_DIALECTS_ONNX_ONNX_DATA_H_
