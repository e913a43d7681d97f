// Tokenizer: the interface every tokenizer implements (text <-> ids), and tokenizer_load, which
// opens the tokenizer of a HuggingFace model folder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace linear_ard::io {

// Implementations are immutable after construction; encode and decode are thread-safe.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Ids of UTF-8 `text` (std::invalid_argument when it is not valid UTF-8). With
  // `add_special_tokens`, BOS/EOS are added as transformers' AutoTokenizer would (see
  // docs/tokenizers.md: the tokenizer.json post-processor, or tokenizer_config.json for
  // tokenizer.model).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const = 0;

  // Text of `ids`; ids outside the vocabulary are skipped, as HF does. With
  // `skip_special_tokens`, special tokens (BOS, EOS, control tokens) are left out.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const = 0;

  // One past the largest id, added tokens included (transformers' len(tokenizer)).
  virtual int32_t vocab_size() const = 0;
  // -1 when the tokenizer has none.
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  // -1 when `token` is not in the vocabulary.
  virtual int32_t token_to_id(std::string_view token) const = 0;
  // Throws std::out_of_range for an id outside the vocabulary.
  virtual std::string id_to_token(int32_t id) const = 0;
};

// The tokenizer of HF model folder `folder`: tokenizer.json (BpeTokenizer) when present, else
// tokenizer.model (SentencePieceTokenizer); tokenizer_config.json is read when present. Throws
// std::runtime_error naming the file and the problem.
std::unique_ptr<Tokenizer> tokenizer_load(const std::string& folder);
// The path of the file tokenizer_load reads in `folder`; throws as it does when there is none.
std::string tokenizer_file(const std::string& folder);

}  // namespace linear_ard::io
