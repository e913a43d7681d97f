// safetensors reader on hostile files: every broken rule gives an exception that names the file
// and the problem.
#include <gtest/gtest.h>

#include <fstream>

#include "io_test_dir.h"
#include "linear_ard/io/safetensors.h"

using namespace linear_ard::io;

namespace {

struct MalformedCase {
  const char* label;
  std::string header;       // JSON text after the size field
  size_t data_bytes;        // zero bytes appended after the header
  uint64_t header_size;     // the size field; 0 means header.size()
  const char* expected;     // substring the message must contain
};

std::string file_raw(const MalformedCase& c) {
  const uint64_t n = c.header_size ? c.header_size : c.header.size();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
  return bytes + c.header + std::string(c.data_bytes, '\0');
}

const std::string f32_a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";

const MalformedCase malformed_cases[] = {
    {"header_truncated", "{}", 0, 100, "truncated header: header size 100 exceeds the 2 bytes"},
    {"header_larger_than_file", "{" + f32_a + "}", 4, 1'000'000, "header size 1000000 exceeds"},
    {"header_huge", "{}", 0, uint64_t(1) << 63, "exceeds the limit of 100000000 bytes"},
    {"gap", "{" + f32_a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12, 0,
     "tensor 'b': data_offsets [8, 12] leave a gap of 4 bytes"},
    {"overlap", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
     12, 0, "tensor 'b': data_offsets [4, 12] overlap tensor 'a'"},
    {"offsets_reversed", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4, 0,
     "tensor 'a': data_offsets [4, 0] are out of order"},
    {"beyond_eof", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, 0,
     "tensor 'a': data_offsets [0, 8] reach beyond the end of the file"},
    {"trailing_bytes", "{" + f32_a + "}", 8, 0, "4 trailing bytes after the last tensor"},
    {"unknown_dtype", R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", 4, 0, "tensor 'a': unknown dtype 'F31'"},
    {"size_mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, 0,
     "tensor 'a': size mismatch: data_offsets [0, 8] hold 8 bytes but F32 [3] needs 12"},
    {"negative_dim", R"({"a":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,4]}})", 4, 0, "tensor 'a': negative dimension -1"},
    {"fractional_dim", R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, 0,
     "tensor 'a': shape [1.5] is not a list of non-negative integers"},
    {"shape_overflow", R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", 4, 0,
     "tensor 'a': shape [4611686018427387904, 4] overflows"},
    {"duplicate_tensor", "{" + f32_a + "," + f32_a + "}", 4, 0, "duplicate key 'a' in header"},
    {"duplicate_field", R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4, 0,
     "duplicate key 'dtype' in header"},
    {"not_an_object", "[1,2]", 0, 0, "header is not a JSON object"},
    {"entry_not_object", R"({"a":[0,4]})", 0, 0, "tensor 'a': entry is not a JSON object"},
    {"not_json", R"({"a":)", 0, 0, "header is not valid JSON"},
    {"empty_header", "", 0, 0, "header is not valid JSON"},
    {"invalid_utf8", "{\"\xff\":1}", 0, 0, "header is not valid UTF-8 (byte 2)"},
    {"overlong_utf8", "{\"\xc0\xaf\":1}", 0, 0, "header is not valid UTF-8"},
    {"surrogate_utf8", "{\"\xed\xa0\x80\":1}", 0, 0, "header is not valid UTF-8"},
    {"above_max_utf8", "{\"\xf4\x90\x80\x80\":1}", 0, 0, "header is not valid UTF-8 (byte 2)"},
    {"truncated_utf8", "{\"a\xe2\x82", 0, 0, "header is not valid UTF-8 (byte 3)"},
    {"metadata_not_string", R"({"__metadata__":{"format":1}})", 0, 0, "__metadata__ value of 'format' is not a string"},
    {"metadata_not_object", R"({"__metadata__":"pt"})", 0, 0, "__metadata__ is not a JSON object"},
    {"missing_offsets", R"({"a":{"dtype":"F32","shape":[1]}})", 4, 0, "tensor 'a': 'data_offsets' must be two non-negative integers"},
    {"missing_dtype", R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4, 0, "tensor 'a': missing string field 'dtype'"},
};

class SafetensorsMalformed : public IoTestDir, public ::testing::WithParamInterface<MalformedCase> {};

void expect_load_error(const std::string& file, const std::string& expected) {
  try {
    safetensors_load(file);
    FAIL() << "no exception, expected: " << expected;
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("safetensors file " + file + ": "), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST_P(SafetensorsMalformed, IsRefusedWithAClearMessage) {
  const std::string file = path("bad.safetensors");
  std::ofstream(file, std::ios::binary) << file_raw(GetParam());
  expect_load_error(file, GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, SafetensorsMalformed, ::testing::ValuesIn(malformed_cases),
                         [](const auto& info) { return std::string(info.param.label); });

class SafetensorsEdge : public IoTestDir {};

TEST_F(SafetensorsEdge, TruncatedAndMissingFiles) {
  const std::string file = path("short.safetensors");
  std::ofstream(file, std::ios::binary) << std::string("\x02\0\0", 3);
  expect_load_error(file, "truncated file: 3 bytes");
  std::ofstream(file, std::ios::binary | std::ios::trunc).flush();
  expect_load_error(file, "truncated file: 0 bytes");
  expect_load_error(path("absent.safetensors"), "cannot open");
  expect_load_error(dir_.string(), "not a regular file");
}

// Files whose JSON order differs from the data order, or whose tensors sit at odd offsets, are
// valid: the reader sorts by offset and copies misaligned tensors.
TEST_F(SafetensorsEdge, AcceptsAnyEntryOrderAndMisalignedData) {
  const std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]},"flag":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]},)"
      R"("none":{"dtype":"F16","shape":[0],"data_offsets":[9,9]},"__metadata__":null})";
  std::string header_padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(uint64_t(header_padded.size()) >> (8 * i));
  const float values[2] = {1.5f, -2.0f};
  bytes += header_padded + std::string(1, '\x01') + std::string(reinterpret_cast<const char*>(values), 8);
  const std::string file = path("odd.safetensors");
  std::ofstream(file, std::ios::binary) << bytes;
  std::map<std::string, std::string> metadata;
  const TensorMap t = safetensors_load(file, &metadata);
  EXPECT_TRUE(metadata.empty());
  EXPECT_TRUE(torch::equal(t.at("x"), torch::tensor({1.5f, -2.0f})));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.at("x").data_ptr()) % 4, 0u);
  EXPECT_TRUE(t.at("flag").item<bool>());
  EXPECT_EQ(t.at("none").numel(), 0);
}

}  // namespace
