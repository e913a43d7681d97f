// Character properties through utf8proc's tables, pinned to HF's Unicode versions.
#include "unicode_properties.h"

#include <utf8proc.h>

#include "linear_ard/io/utf8.h"

#include "unicode_age.h"

namespace linear_ard::io {
namespace {

// General categories that changed after Unicode 8.0/9.0, as those versions had them: HF's tables
// (StripAccents: 9.0; Punctuation: 8.0) still give the old ones.
struct OldCategory {
  char32_t cp;
  utf8proc_category_t category;
};
constexpr OldCategory kOldCategories[] = {
    {0x166D, UTF8PROC_CATEGORY_PO},   // CANADIAN SYLLABICS CHI SIGN, So since 12.0
    {0x1CF2, UTF8PROC_CATEGORY_MC},   // VEDIC SIGN ARDHAVISARGA, Lo since 10.0
    {0x1CF3, UTF8PROC_CATEGORY_MC},   // VEDIC SIGN ROTATED ARDHAVISARGA, Lo since 10.0
    {0x111C9, UTF8PROC_CATEGORY_PO},  // SHARADA SANDHI MARK, Mn since 11.0
};

// The general category of `cp` in Unicode 8.0 and 9.0 (Cn for code points 9.0 lacks).
utf8proc_category_t category_in_9_0(char32_t cp) {
  if (!unicode_present_in_9_0(cp)) return UTF8PROC_CATEGORY_CN;
  for (const auto& old : kOldCategories) {
    if (old.cp == cp) return old.category;
  }
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

bool category_is_punctuation(utf8proc_category_t c) {
  return c == UTF8PROC_CATEGORY_PC || c == UTF8PROC_CATEGORY_PD || c == UTF8PROC_CATEGORY_PS ||
         c == UTF8PROC_CATEGORY_PE || c == UTF8PROC_CATEGORY_PI || c == UTF8PROC_CATEGORY_PF ||
         c == UTF8PROC_CATEGORY_PO;
}

bool category_is_mark(utf8proc_category_t c) {
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

}  // namespace

void unicode_append_lowercase(std::string& out, char32_t cp) {
  if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE -> i + COMBINING DOT ABOVE
    out += "i\xCC\x87";
    return;
  }
  utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

bool unicode_is_numeric(char32_t cp) {
  const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool unicode_is_mark(char32_t cp) { return category_is_mark(category_in_9_0(cp)); }

bool unicode_is_punctuation(char32_t cp) {
  if (cp < 0x80) {  // Rust's is_ascii_punctuation
    return (cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '@') || (cp >= '[' && cp <= '`') || (cp >= '{' && cp <= '~');
  }
  return unicode_present_in_8_0(cp) && category_is_punctuation(category_in_9_0(cp));
}

bool unicode_is_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

size_t leading_white_space_length(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!unicode_is_white_space(utf8_next(s, next))) break;
    pos = next;
  }
  return pos;
}

size_t trailing_white_space_begin(std::string_view s) {
  size_t begin = s.size();
  while (begin > 0) {
    size_t start = begin - 1;  // back to the first byte of the last character
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!unicode_is_white_space(utf8_next(s, pos))) break;
    begin = start;
  }
  return begin;
}

}  // namespace linear_ard::io
