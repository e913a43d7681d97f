// UTF-8 helpers the tokenizer pipeline shares: iteration, encoding, validation, lossy decoding.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace linear_ard::io {

// Decodes the code point starting at `pos` of valid UTF-8 and advances `pos` past it.
char32_t utf8_next(std::string_view text, size_t& pos);

// Appends the UTF-8 encoding of `cp`.
void utf8_append(std::string& out, char32_t cp);

// Byte offset of the first ill-formed sequence, or npos when `text` is valid UTF-8.
size_t utf8_first_invalid(std::string_view text);

// Rust's String::from_utf8_lossy (what HF decoders use): each maximal ill-formed subpart becomes
// one U+FFFD, so decoded text is identical to HF's even when ids split a character.
std::string utf8_decode_lossy(std::string_view bytes);

// Rust's char::is_whitespace (Unicode White_Space), used by added-token lstrip/rstrip and the
// Strip normalizer.
bool unicode_is_white_space(char32_t cp);

// Length of the run of White_Space characters that starts valid UTF-8 `s`.
size_t leading_white_space_length(std::string_view s);

// Start of the run of White_Space characters that ends valid UTF-8 `s` (s.size() when none).
size_t trailing_white_space_begin(std::string_view s);

}  // namespace linear_ard::io
