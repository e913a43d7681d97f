// Regex: a compiled PCRE2 pattern (UTF + UCP, JIT when available) with Oniguruma's meaning of \s,
// for the Split pre-tokenizer and the Replace normalizer/decoder of tokenizer.json files.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linear_ard::io {

// The members of Unicode regex \w (UTS #18: Alphabetic, marks, decimal digits, connector
// punctuation, joiners), for use inside a character class. Oniguruma and Rust's regex mean this by
// \w; PCRE2 10.42's UCP \w is narrower, so HF's word tests spell it out.
extern const char* const kRegexWordClass;

class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message and the offset when `pattern` is invalid.
  explicit Regex(const std::string& pattern);
  // A pattern matching `literal` exactly.
  static Regex literal(std::string_view literal);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Byte ranges [begin, end) of the successive non-overlapping matches in valid UTF-8 `text`.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace linear_ard::io
