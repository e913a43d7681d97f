// PreTokenizer: the tokenizer.json "pre_tokenizer" stage (Split, Digits, Punctuation, Whitespace,
// WhitespaceSplit, ByteLevel, Metaspace, Sequence) that cuts normalized text into the words BPE
// merges within.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pre_token.h"

namespace linear_ard::io {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their pre-tokens, in order; empty pieces are dropped.
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

// When Metaspace puts its replacement before a piece that lacks it.
enum class PrependScheme { kAlways, kFirst, kNever };

// The prepend scheme of a Metaspace pre-tokenizer or decoder spec (also from the older
// add_prefix_space field).
PrependScheme metaspace_prepend_scheme(const nlohmann::json& spec);

// Builds the pre-tokenizer described by `spec`; null gives nullptr. Throws std::invalid_argument
// naming the unsupported type or option.
std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& spec);

}  // namespace linear_ard::io
