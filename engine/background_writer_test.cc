#include "engine/background_writer.h"

#include <string>

#include "gtest/gtest.h"

namespace graft {
namespace {

// Pieces of a source and copies of others come out in order; a source
// piece is copied file to file until the copy says it cannot, then written.
TEST(BackgroundWriterTest, KeepsOrderAndFallsBackToWrites) {
  const std::string source = "0123456789abcdefghij";
  std::string out;
  int copies = 0;
  FileWriter file;
  file.write = [&](absl::string_view piece) {
    out.append(piece.data(), piece.size());
    return absl::OkStatus();
  };
  file.copy = [&](int fd, int64_t offset, size_t length) -> absl::StatusOr<bool> {
    EXPECT_EQ(fd, 7);
    if (++copies > 1) return false;
    out += "[" + source.substr(offset, length) + "]";
    return true;
  };
  BackgroundWriter writer(file, source, 7);
  std::string scratch = "<new>";
  writer.Write(absl::string_view(source).substr(0, 4));
  writer.Write(scratch);
  scratch = "overwritten";  // the writer kept its own copy
  writer.Write(absl::string_view(source).substr(10, 5));
  writer.Write(std::string(3 << 20, 'x'));
  ASSERT_TRUE(writer.Finish().ok());
  EXPECT_EQ(out.substr(0, 20), "[0123]<new>abcde" + std::string(4, 'x'));
  EXPECT_EQ(out.size(), 16 + (size_t{3} << 20));
}

TEST(BackgroundWriterTest, TheFirstErrorStopsTheRest) {
  int writes = 0;
  FileWriter file;
  file.write = [&](absl::string_view) {
    return ++writes == 2 ? absl::DataLossError("disk full") : absl::OkStatus();
  };
  file.copy = [](int, int64_t, size_t) -> absl::StatusOr<bool> { return false; };
  BackgroundWriter writer(file, absl::string_view(), -1);
  for (int i = 0; i < 5; ++i) writer.Write("piece");
  absl::Status s = writer.Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(writes, 2);
}

}  // namespace
}  // namespace graft
