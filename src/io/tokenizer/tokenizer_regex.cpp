// Regex: PCRE2 with the semantics HF tokenizers gets from Oniguruma.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer_regex.h"

#include <pcre2.h>

#include <cctype>
#include <stdexcept>

namespace linear_ard::io {
namespace {

// Oniguruma's Unicode \s: U+0009..U+000D, U+0085 and the Zs/Zl/Zp characters, i.e. White_Space,
// as class members. PCRE2's UCP \s differs (it lacks U+0085 and still has U+180E, which left Zs in
// Unicode 6.3), so patterns spell the set out.
constexpr const char* kWhiteSpaceMembers =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// HF tokenizers matches with Oniguruma: rewrites \s (inside or outside a class) and \S (outside)
// to Oniguruma's set.
std::string pattern_with_oniguruma_space(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpaceMembers) : std::string("[") + kWhiteSpaceMembers + "]";
      } else if (e == 'S' && !in_class) {
        out += std::string("[^") + kWhiteSpaceMembers + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

const char* const kRegexWordClass = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D})";

struct Regex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  const std::string translated = pattern_with_oniguruma_space(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (impl_->code == nullptr) {
    throw std::invalid_argument("invalid regex /" + pattern + "/: " + pcre2_message(error) +
                                " at offset " + std::to_string(offset));
  }
  // JIT is an optimisation only: without it (unsupported platform) matching is still correct.
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

Regex Regex::literal(std::string_view literal) {
  // A backslash before ASCII punctuation always means the character itself; other bytes
  // (letters, digits, UTF-8 sequences) are literal as they are.
  std::string quoted;
  for (const char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) quoted += '\\';
    quoted += c;
  }
  return Regex(quoted);
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    // The caller validated the UTF-8 once for the whole text; re-checking per call would be
    // quadratic over the pieces.
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      throw std::runtime_error("regex match failed: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {
      // An empty match yields nothing (HF drops empty pieces); step over one whole character.
      if (begin >= text.size()) break;
      start = begin + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
      continue;
    }
    matches.emplace_back(begin, end);
    start = end;
  }
  pcre2_match_data_free(data);
  return matches;
}

}  // namespace linear_ard::io
