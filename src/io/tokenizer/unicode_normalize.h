// Unicode normalization forms (NFC, NFD, NFKC, NFKD) as HF tokenizers applies them: through
// utf8proc, with the Unicode 9.0 character data HF's normalization tables are built from.
#pragma once

#include <string>
#include <string_view>

namespace linear_ard::io {

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in normalization form `form`. Code points Unicode 9.0 had not assigned are
// left as they are and act as starters that compose with nothing, as in HF's Unicode 9.0 tables
// (utf8proc's newer data would decompose, reorder or compose some of them).
std::string unicode_normalize(std::string_view text, UnicodeForm form);

}  // namespace linear_ard::io
