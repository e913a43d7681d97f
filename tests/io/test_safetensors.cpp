// safetensors reader/writer: round trips of every dtype, layout, metadata, mapping and atomicity.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "io_test_dir.h"
#include "linear_ard/io/file_atomic.h"
#include "linear_ard/io/safetensors.h"
#include "linear_ard/io/safetensors_dtype.h"

using namespace linear_ard::io;
namespace fs = std::filesystem;

namespace {

class Safetensors : public IoTestDir {};

// Random bits reinterpreted as `type`, so every byte pattern (NaNs, subnormals) round-trips.
torch::Tensor tensor_random(c10::ScalarType type, at::IntArrayRef shape, uint64_t seed) {
  torch::manual_seed(seed);
  if (type == c10::ScalarType::Bool) return torch::randint(0, 2, shape).to(torch::kBool);
  const int64_t elem = c10::elementSize(type);
  std::vector<int64_t> byte_shape(shape.begin(), shape.end());
  if (byte_shape.empty()) byte_shape.push_back(1);
  byte_shape.back() *= elem;
  auto bytes = torch::randint(0, 256, byte_shape, torch::kUInt8);
  return bytes.view(type).reshape(shape);
}

bool tensor_bits_equal(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  auto ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.nbytes()) == 0;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

const char* all_dtypes[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL",
                            "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "C64"};

TEST_F(Safetensors, RoundTripsEveryDtypeAndShape) {
  TensorMap tensors;
  uint64_t seed = 0;
  for (const char* name : all_dtypes) {
    const auto* dtype = safetensors_dtype_find(name);
    ASSERT_NE(dtype, nullptr) << name;
    EXPECT_EQ(safetensors_dtype_of(dtype->type), dtype);
    tensors[std::string(name) + ".matrix"] = tensor_random(dtype->type, {3, 5}, ++seed);
    tensors[std::string(name) + ".scalar"] = tensor_random(dtype->type, {}, ++seed);
    tensors[std::string(name) + ".empty"] = tensor_random(dtype->type, {0, 4}, ++seed);
  }
  const std::string file = path("all.safetensors");
  safetensors_save(file, tensors, {{"format", "pt"}, {"note", "ünïcode"}});
  std::map<std::string, std::string> metadata;
  const TensorMap loaded = safetensors_load(file, &metadata);
  EXPECT_EQ(metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "ünïcode"}}));
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(loaded.count(name)) << name;
    EXPECT_TRUE(tensor_bits_equal(loaded.at(name), t)) << name;
    // The writer orders by dtype size, so every tensor is naturally aligned inside the mapping.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(loaded.at(name).data_ptr()) % loaded.at(name).element_size(), 0u) << name;
  }
}

TEST_F(Safetensors, WritesTheReferenceLayout) {
  TensorMap tensors{{"b", torch::zeros({2}, torch::kFloat16)}, {"a", torch::zeros({1}, torch::kBool)},
                    {"c", torch::zeros({1}, torch::kFloat64)}};
  const std::string file = path("layout.safetensors");
  safetensors_save(file, tensors);
  const std::string bytes = file_bytes(file);
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"c":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},"a":{"dtype":"BOOL","shape":[1],"data_offsets":[12,13]}})";
  const size_t padded = (header.size() + 7) / 8 * 8;
  ASSERT_EQ(bytes.size(), 8 + padded + 13);
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), padded);
  EXPECT_EQ(bytes.substr(8, header.size()), header);
  EXPECT_EQ(bytes.substr(8 + header.size(), padded - header.size()), std::string(padded - header.size(), ' '));
}

TEST_F(Safetensors, SavesNonContiguousAndEmptyMetadata) {
  auto base = torch::arange(24, torch::kFloat32).reshape({4, 6});
  TensorMap tensors{{"t", base.t()}, {"s", base.index({torch::indexing::Slice(), torch::indexing::Slice(1, 5, 2)})}};
  const std::string file = path("nc.safetensors");
  safetensors_save(file, tensors, {});
  std::map<std::string, std::string> metadata{{"stale", "x"}};
  const TensorMap loaded = safetensors_load(file, &metadata);
  EXPECT_TRUE(metadata.empty());
  EXPECT_TRUE(torch::equal(loaded.at("t"), base.t()));
  EXPECT_TRUE(torch::equal(loaded.at("s"), tensors.at("s")));
}

TEST_F(Safetensors, LoadedTensorsOutliveEachOtherAndNeverWriteTheFile) {
  const std::string file = path("cow.safetensors");
  safetensors_save(file, {{"x", torch::ones({1024})}, {"y", torch::ones({8})}});
  const std::string before = file_bytes(file);
  torch::Tensor x;
  {
    TensorMap loaded = safetensors_load(file);
    x = loaded.at("x");
  }
  fs::remove(file);   // the mapping keeps the data alive after the map and the name are gone
  x.mul_(3);          // copy-on-write: allowed, and invisible to the file
  EXPECT_TRUE(torch::equal(x, torch::full({1024}, 3.0f)));
  std::ofstream(file, std::ios::binary) << before;
  EXPECT_TRUE(torch::equal(safetensors_load(file).at("x"), torch::ones({1024})));
}

TEST_F(Safetensors, RefusesWhatItCannotWriteAndLeavesNoFile) {
  const std::string file = path("bad.safetensors");
  try {
    safetensors_save(file, {{"q", torch::zeros({2}).to(torch::kComplexDouble)}});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'q': dtype ComplexDouble has no safetensors equivalent"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(safetensors_save(file, {{"__metadata__", torch::zeros({1})}}), std::runtime_error);
  EXPECT_THROW(safetensors_save(file, {{"\xff", torch::zeros({1})}}), std::runtime_error);
  EXPECT_THROW(safetensors_save(path("missing/dir/x.safetensors"), {{"a", torch::zeros({1})}}), std::runtime_error);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(Safetensors, OverwritesAtomically) {
  const std::string file = path("w.safetensors");
  safetensors_save(file, {{"a", torch::zeros({4})}});
  safetensors_save(file, {{"b", torch::ones({2})}});
  const TensorMap loaded = safetensors_load(file);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(torch::equal(loaded.at("b"), torch::ones({2})));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(Safetensors, AtomicWriteLeavesNothingWhenTheWriterFails) {
  const std::string file = path("partial.bin");
  file_write_atomic(file, std::string("old"));
  EXPECT_THROW(file_write_atomic(file,
                                 [](std::FILE* f) {
                                   std::fputs("half of the new contents", f);
                                   throw std::runtime_error("disk full");
                                 }),
               std::runtime_error);
  EXPECT_EQ(file_bytes(file), "old");
  EXPECT_FALSE(fs::exists(file_tmp_name(file)));
}

}  // namespace
