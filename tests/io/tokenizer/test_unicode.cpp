// The Unicode layer under the normalizers and pre-tokenizers: normalization forms with HF's
// Unicode 9.0 data, character properties pinned to HF's versions, and the age table. (Every code
// point is compared with HF in tests/python/test_tokenizer_components.py; these are the cases
// that show why each rule exists.)
#include <gtest/gtest.h>

#include <string>

#include "unicode_age.h"         // defines: unicode_present_in_8_0, unicode_present_in_9_0
#include "unicode_normalize.h"   // defines: unicode_normalize, UnicodeForm
#include "unicode_properties.h"  // defines: unicode_append_lowercase, unicode_is_*

namespace linear_ard::io {
namespace {

TEST(Unicode, NormalizationForms) {
  EXPECT_EQ(unicode_normalize("e\xCC\x81", UnicodeForm::kNfc), "\xC3\xA9");       // e + U+0301 -> U+00E9
  EXPECT_EQ(unicode_normalize("\xC3\xA9", UnicodeForm::kNfd), "e\xCC\x81");
  EXPECT_EQ(unicode_normalize("\xEF\xAC\x81", UnicodeForm::kNfc), "\xEF\xAC\x81");  // U+FB01 (fi) kept
  EXPECT_EQ(unicode_normalize("\xEF\xAC\x81", UnicodeForm::kNfkc), "fi");
  EXPECT_EQ(unicode_normalize("\xEF\xBC\xA1", UnicodeForm::kNfkd), "A");            // full-width A
  // Conjoining jamo compose to a syllable; a decomposed syllable comes back whole.
  EXPECT_EQ(unicode_normalize("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", UnicodeForm::kNfc), "\xEA\xB0\x81");
  // Canonical ordering: U+0323 (class 220) goes before U+0302 (230).
  EXPECT_EQ(unicode_normalize("a\xCC\x82\xCC\xA3", UnicodeForm::kNfd), "a\xCC\xA3\xCC\x82");
  EXPECT_EQ(unicode_normalize(std::string("a\0b", 3), UnicodeForm::kNfc), std::string("a\0b", 3));
  EXPECT_EQ(unicode_normalize("", UnicodeForm::kNfkc), "");
}

TEST(Unicode, NormalizationKeepsWhatUnicode9Lacked) {
  // U+11938 (Dives Akuru, Unicode 13) decomposes to U+11935 U+11930 in today's data, not in HF's.
  EXPECT_EQ(unicode_normalize("\xF0\x91\xA4\xB8", UnicodeForm::kNfd), "\xF0\x91\xA4\xB8");
  const std::string parts = "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0";  // U+11935 U+11930 do not compose
  EXPECT_EQ(unicode_normalize(parts, UnicodeForm::kNfc), parts);
  // U+A7F2 (modifier C, Unicode 14) has a compatibility decomposition HF does not apply.
  EXPECT_EQ(unicode_normalize("\xEA\x9F\xB2", UnicodeForm::kNfkc), "\xEA\x9F\xB2");
  // U+1E08F (combining Cyrillic, Unicode 15, class 230) is a starter for HF: U+0323 stays after it.
  EXPECT_EQ(unicode_normalize("a\xF0\x9E\x82\x8F\xCC\xA3", UnicodeForm::kNfd), "a\xF0\x9E\x82\x8F\xCC\xA3");
  // ... and the text on either side is still normalized.
  EXPECT_EQ(unicode_normalize("e\xCC\x81\xEA\x9F\xB2\xEF\xAC\x81", UnicodeForm::kNfkc), "\xC3\xA9\xEA\x9F\xB2" "fi");
}

TEST(Unicode, Lowercase) {
  const auto lower = [](char32_t cp) {
    std::string out;
    unicode_append_lowercase(out, cp);
    return out;
  };
  EXPECT_EQ(lower('A'), "a");
  EXPECT_EQ(lower(0x130), "i\xCC\x87");   // İ -> i + U+0307, Rust's full mapping
  EXPECT_EQ(lower(0x3A3), "\xCF\x83");    // Σ -> σ always: no final-sigma rule per character
  EXPECT_EQ(lower(0x1E9E), "\xC3\x9F");   // ẞ -> ß
  EXPECT_EQ(lower(0x10400), "\xF0\x90\x90\xA8");
  EXPECT_EQ(lower(0x4E2D), "\xE4\xB8\xAD");
}

TEST(Unicode, CharacterClasses) {
  EXPECT_TRUE(unicode_is_numeric('7'));
  EXPECT_TRUE(unicode_is_numeric(0x0663));   // Arabic-Indic three (Nd)
  EXPECT_TRUE(unicode_is_numeric(0x2167));   // Roman numeral eight (Nl)
  EXPECT_TRUE(unicode_is_numeric(0x00BD));   // ½ (No)
  EXPECT_FALSE(unicode_is_numeric('x'));
  EXPECT_TRUE(unicode_is_punctuation('$'));  // ASCII symbols count, as in Rust's is_ascii_punctuation
  EXPECT_TRUE(unicode_is_punctuation(0x00BF));
  EXPECT_FALSE(unicode_is_punctuation(0x20AC));  // € is Sc
  EXPECT_TRUE(unicode_is_punctuation(0x166D));   // Po in 8.0, So since 12.0
  EXPECT_FALSE(unicode_is_punctuation(0x2E43));  // Po, but added in Unicode 9.0
  EXPECT_TRUE(unicode_is_mark(0x0301));
  EXPECT_TRUE(unicode_is_mark(0x1CF2));      // Mc in 9.0, Lo since 10.0
  EXPECT_FALSE(unicode_is_mark(0x111C9));    // Po in 9.0, Mn since 11.0
  EXPECT_FALSE(unicode_is_mark(0x1E08F));    // Mn, but added in Unicode 15.0
}

TEST(Unicode, Ages) {
  EXPECT_TRUE(unicode_present_in_8_0('a'));
  EXPECT_TRUE(unicode_present_in_8_0(0x20BE));   // LARI SIGN, 8.0
  EXPECT_FALSE(unicode_present_in_8_0(0x1F6D1));  // OCTAGONAL SIGN, 9.0
  EXPECT_TRUE(unicode_present_in_9_0(0x1F6D1));
  EXPECT_FALSE(unicode_present_in_9_0(0x20BF));   // BITCOIN SIGN, 10.0
  EXPECT_FALSE(unicode_present_in_9_0(0x0378));   // never assigned
  EXPECT_TRUE(unicode_present_in_9_0(0x10FFFF));  // noncharacters count as assigned
}

}  // namespace
}  // namespace linear_ard::io
