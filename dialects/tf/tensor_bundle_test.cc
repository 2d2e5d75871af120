#include "dialects/tf/tensor_bundle.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace graft {
namespace {

namespace fs = std::filesystem;
constexpr char kPrefix[] = "tests/data/saved_models/cnn/variables/variables";
constexpr char kKernel[] = "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE";

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A copy of the test bundle under a fresh prefix.
std::string CopyBundle(const std::string& name) {
  std::string dir = testing::TempDir() + "/" + name;
  fs::create_directories(dir);
  std::string prefix = dir + "/variables";
  fs::copy_file(std::string(kPrefix) + ".index", prefix + ".index",
                fs::copy_options::overwrite_existing);
  fs::copy_file(std::string(kPrefix) + ".data-00000-of-00001",
                prefix + ".data-00000-of-00001",
                fs::copy_options::overwrite_existing);
  return prefix;
}

TEST(TensorBundleTest, ReadsTheIndexAndATensor) {
  absl::StatusOr<TensorBundle> bundle = TensorBundle::Open(kPrefix);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ(bundle->index().header.num_shards(), 1);
  EXPECT_EQ(bundle->index().entries.size(), 9u);
  const tf::BundleEntryProto* kernel = bundle->Find(kKernel);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->dtype(), tf::DT_FLOAT);
  ASSERT_EQ(kernel->shape().dim_size(), 4);
  EXPECT_EQ(kernel->shape().dim(3).size(), 4);
  absl::StatusOr<std::string> bytes = bundle->ReadTensor(kKernel);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->size(), 3u * 3 * 3 * 4 * 4);
}

TEST(TensorBundleTest, Crc32cKnownValue) {
  // RFC 3720's test vector: 32 bytes of zeros.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8a9136aau);
}

TEST(TensorBundleTest, ACorruptIndexIsALocatedError) {
  std::string index = Read(std::string(kPrefix) + ".index");
  ASSERT_GT(index.size(), 100u);
  std::string flipped = index;
  flipped[10] ^= 0x40;  // inside the first data block
  absl::StatusOr<BundleIndex> parsed = ParseBundleIndex(flipped, "v.index");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("v.index: error:"), std::string::npos);
  EXPECT_NE(parsed.status().message().find("checksum"), std::string::npos)
      << parsed.status();
  for (size_t cut : {size_t{0}, size_t{20}, index.size() / 2, index.size() - 1}) {
    EXPECT_FALSE(ParseBundleIndex(index.substr(0, cut), "v.index").ok()) << cut;
  }
}

TEST(TensorBundleTest, MissingOrShortShardsAreRefusedOnOpen) {
  std::string prefix = CopyBundle("missing");
  fs::remove(prefix + ".data-00000-of-00001");
  absl::StatusOr<TensorBundle> bundle = TensorBundle::Open(prefix);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.status().message().find("missing"), std::string::npos);

  prefix = CopyBundle("short");
  std::string data = Read(prefix + ".data-00000-of-00001");
  Write(prefix + ".data-00000-of-00001", data.substr(0, data.size() / 2));
  bundle = TensorBundle::Open(prefix);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.status().message().find("shorter than"), std::string::npos)
      << bundle.status();
}

TEST(TensorBundleTest, ChangedBytesFailTheirChecksum) {
  std::string prefix = CopyBundle("changed");
  absl::StatusOr<TensorBundle> bundle = TensorBundle::Open(prefix);
  ASSERT_TRUE(bundle.ok());
  const tf::BundleEntryProto* kernel = bundle->Find(kKernel);
  std::string data = Read(prefix + ".data-00000-of-00001");
  data[kernel->offset() + 5] ^= 1;
  Write(prefix + ".data-00000-of-00001", data);
  absl::StatusOr<std::string> bytes = bundle->ReadTensor(kKernel);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("checksum"), std::string::npos);
  auto mapped = bundle->Content(kKernel);
  ASSERT_FALSE(mapped.ok());
  EXPECT_NE(mapped.status().message().find("checksum"), std::string::npos);
}

TEST(TensorBundleTest, ContentMapsTheSameBytesAsReadTensor) {
  absl::StatusOr<TensorBundle> bundle = TensorBundle::Open(kPrefix);
  ASSERT_TRUE(bundle.ok());
  for (const auto& [key, entry] : bundle->index().entries) {
    if (key.empty() || entry.dtype() == tf::DT_STRING) continue;
    absl::StatusOr<std::string> read = bundle->ReadTensor(key);
    auto mapped = bundle->Content(key);
    ASSERT_TRUE(read.ok() && mapped.ok()) << key;
    EXPECT_EQ((*mapped)->bytes(), *read) << key;
  }
  EXPECT_EQ(bundle->Content("no such key").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace graft
