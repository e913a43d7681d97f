// SentencePieceTokenizer: a SentencePiece tokenizer.model through libsentencepiece.
#pragma once

#include <memory>
#include <string>

#include "linear_ard/io/tokenizer.h"

namespace linear_ard::io {

class SentencePieceTokenizer : public Tokenizer {
 public:
  // `tokenizer_config` ("" for none) may set add_bos_token (default true), add_eos_token
  // (default false), bos_token and eos_token, as for transformers' LlamaTokenizer. Throws
  // std::runtime_error naming the file and the problem.
  explicit SentencePieceTokenizer(const std::string& model, const std::string& tokenizer_config = "");
  ~SentencePieceTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  // Without skip_special_tokens, control tokens (BOS, EOS) appear as their piece text.
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
