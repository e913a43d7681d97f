// utf8: UTF-8 iteration, encoding, strict validation and lossy decoding (the tokenizers, the
// safetensors header check).
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

}  // namespace linear_ard::io
