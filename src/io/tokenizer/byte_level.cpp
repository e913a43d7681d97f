// The GPT-2 byte <-> unicode map behind byte-level BPE.
#include "byte_level.h"

#include <array>

#include "linear_ard/io/utf8.h"

namespace linear_ard::io {
namespace {

bool byte_is_printable(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteLevelTables {
  std::array<char32_t, 256> char_of_byte{};
  std::array<std::string, 256> utf8_of_byte{};
  std::array<int, 0x100 + 68> byte_of_char{};  // the characters are all below U+0144; -1: none
  ByteLevelTables() {
    byte_of_char.fill(-1);
    char32_t shifted = 0x100;
    for (int b = 0; b < 256; ++b) {
      char_of_byte[b] = byte_is_printable(b) ? static_cast<char32_t>(b) : shifted++;
      utf8_append(utf8_of_byte[b], char_of_byte[b]);
      byte_of_char[char_of_byte[b]] = b;
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

}  // namespace

char32_t byte_level_char(uint8_t byte) { return tables().char_of_byte[byte]; }

std::string byte_level_encode(std::string_view bytes) {
  const auto& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += t.utf8_of_byte[static_cast<unsigned char>(c)];
  return out;
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const auto& t = tables();
  const size_t mark = out.size();
  size_t pos = 0;
  while (pos < token.size()) {
    const char32_t cp = utf8_next(token, pos);
    const int b = cp < t.byte_of_char.size() ? t.byte_of_char[cp] : -1;
    if (b < 0) {
      out.resize(mark);
      return false;
    }
    out.push_back(static_cast<char>(b));
  }
  return true;
}

}  // namespace linear_ard::io
