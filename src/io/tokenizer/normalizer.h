// Normalizer: the tokenizer.json "normalizer" stage (NFC/NFD/NFKC/NFKD, Lowercase, Strip,
// StripAccents, Prepend, Replace, Sequence) applied to the text between added tokens.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace linear_ard::io {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// Builds the normalizer described by `spec`; null gives nullptr. Throws std::invalid_argument
// naming the unsupported type or the missing field.
std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& spec);

}  // namespace linear_ard::io
