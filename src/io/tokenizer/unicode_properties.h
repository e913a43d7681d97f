// Character properties behind HF tokenizers' Lowercase, StripAccents, Digits, Punctuation and
// Strip (and added tokens' lstrip/rstrip), through utf8proc, with the Unicode versions HF's own tables have where those differ.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace linear_ard::io {

// Rust's char::to_lowercase (Lowercase normalizer): the simple lowercase mapping, except U+0130,
// whose unconditional full mapping is two code points. Appends the UTF-8 of the result.
void unicode_append_lowercase(std::string& out, char32_t cp);

// Rust's char::is_numeric (Digits pre-tokenizer): general category Nd, Nl or No.
bool unicode_is_numeric(char32_t cp);

// HF's is_combining_mark (StripAccents): general category Mn, Mc or Me as of Unicode 9.0.
bool unicode_is_mark(char32_t cp);

// HF's Punctuation pre-tokenizer test: ASCII punctuation (symbols like '$' and '+' included), or
// general category P* as of Unicode 8.0.
bool unicode_is_punctuation(char32_t cp);

// Rust's char::is_whitespace (Unicode White_Space), used by added-token lstrip/rstrip and the
// Strip normalizer.
bool unicode_is_white_space(char32_t cp);

// Length of the run of White_Space characters that starts valid UTF-8 `s`.
size_t leading_white_space_length(std::string_view s);

// Start of the run of White_Space characters that ends valid UTF-8 `s` (s.size() when none).
size_t trailing_white_space_begin(std::string_view s);

}  // namespace linear_ard::io
