// BpeTokenizer: a HuggingFace tokenizer.json with a BPE model, in both LLaMA-family flavours:
// byte-level BPE with a regex pre-tokenizer (LLaMA-3) and SentencePiece-style metaspace BPE with
// byte fallback (LLaMA-2, Mistral). docs/tokenizers.md lists the supported components.
#pragma once

#include <memory>
#include <string>

#include "linear_ard/io/tokenizer.h"

namespace linear_ard::io {

class BpeTokenizer : public Tokenizer {
 public:
  // `tokenizer_config` ("" for none) supplies bos_token/eos_token and extra added tokens
  // (added_tokens_decoder). Throws std::runtime_error naming the file and the problem: missing
  // file, invalid JSON, a model other than BPE, an unsupported component, malformed merges.
  explicit BpeTokenizer(const std::string& tokenizer_json, const std::string& tokenizer_config = "");
  ~BpeTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const override;
  int32_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;
  int32_t token_to_id(std::string_view token) const override;
  std::string id_to_token(int32_t id) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace linear_ard::io
