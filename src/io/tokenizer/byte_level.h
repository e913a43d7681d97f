// The GPT-2 byte <-> unicode map behind byte-level BPE (HF ByteLevel pre-tokenizer and decoder).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace linear_ard::io {

// The printable character standing for `byte`: printable Latin-1 bytes stand for themselves, the
// other 68 are shifted to U+0100.. in byte order (so a vocabulary never holds spaces or controls).
char32_t byte_level_char(uint8_t byte);

// Maps every byte of `bytes` to its character, UTF-8 encoded.
std::string byte_level_encode(std::string_view bytes);

// Inverse of byte_level_encode for one token, appended to `out`. Returns false (leaving `out`
// as it was) when a character of `token` is not in the map.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace linear_ard::io
