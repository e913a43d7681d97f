// SpecialTokenTemplate: what the tokenizer.json "post_processor" (TemplateProcessing, ByteLevel,
// Sequence) adds around a single sequence when special tokens are requested.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace linear_ard::io {

struct SpecialTokenTemplate {
  std::vector<int32_t> prefix;  // e.g. BOS
  std::vector<int32_t> suffix;  // e.g. EOS
};

// The single-sequence template of `spec`; null and ByteLevel add nothing. Throws
// std::invalid_argument for other processor types or a template that is not "specials, $A,
// specials".
SpecialTokenTemplate post_processor_from_json(const nlohmann::json& spec);

}  // namespace linear_ard::io
