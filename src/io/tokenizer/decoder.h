// Decoder: the tokenizer.json "decoder" stage (ByteLevel, Metaspace, Replace, ByteFallback, Fuse,
// Strip, Sequence) that turns token strings back into text.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace linear_ard::io {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token strings; the decoded text is their concatenation afterwards.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// Builds the decoder described by `spec`; null gives nullptr (tokens are then joined with
// spaces, as HF does). Throws std::invalid_argument naming the unsupported type.
std::unique_ptr<Decoder> decoder_from_json(const nlohmann::json& spec);

}  // namespace linear_ard::io
