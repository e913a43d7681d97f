// Tests of the GPT-2 byte <-> unicode map and the UTF-8 helpers behind it.
#include <gtest/gtest.h>

#include "byte_level.h"  // defines: byte_level_char, byte_level_encode, byte_level_decode
#include "linear_ard/io/utf8.h"  // defines: utf8_decode_lossy, utf8_first_invalid

namespace linear_ard::io {
namespace {

TEST(ByteLevel, PrintableBytesStandForThemselvesOthersAreShifted) {
  EXPECT_EQ(byte_level_char('a'), U'a');
  EXPECT_EQ(byte_level_char('!'), U'!');
  EXPECT_EQ(byte_level_char(0xE9), U'\u00E9');
  EXPECT_EQ(byte_level_char(0x00), U'\u0100');
  EXPECT_EQ(byte_level_char(' '), U'\u0120');   // "Ġ"
  EXPECT_EQ(byte_level_char('\n'), U'\u010A');  // "Ċ"
  EXPECT_EQ(byte_level_char(0xAD), U'\u0143');  // the 68th and last shifted byte
}

TEST(ByteLevel, EncodeDecodeRoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string encoded = byte_level_encode(all);
  std::string decoded;
  ASSERT_TRUE(byte_level_decode(encoded, decoded));
  EXPECT_EQ(decoded, all);
  EXPECT_EQ(byte_level_encode(" hi"), "\xC4\xA0hi");
}

TEST(ByteLevel, DecodeRejectsCharactersOutsideTheMap) {
  std::string out = "kept";
  EXPECT_FALSE(byte_level_decode("a\xE4\xB8\xAD", out));  // "a中"
  EXPECT_EQ(out, "kept");
}

TEST(Utf8, LossyDecodingReplacesMaximalSubparts) {
  EXPECT_EQ(utf8_decode_lossy("\xE2\x82\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_decode_lossy("\xE2\x82"), "\xEF\xBF\xBD");               // truncated: one U+FFFD
  EXPECT_EQ(utf8_decode_lossy("a\x80" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_decode_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(utf8_first_invalid("ok\xC3"), 2u);
  EXPECT_EQ(utf8_first_invalid("\xC3\xA9"), std::string_view::npos);
}

}  // namespace
}  // namespace linear_ard::io
