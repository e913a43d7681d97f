// SentencePieceTokenizer: tokenizer.model through libsentencepiece, with transformers'
// LlamaTokenizer handling of BOS/EOS.
#include "linear_ard/io/tokenizer_sentencepiece.h"

#include <sentencepiece_processor.h>

#include <stdexcept>

#include "linear_ard/io/utf8.h"

#include "tokenizer_config.h"

namespace linear_ard::io {

struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
  bool add_bos = true, add_eos = false;
  int32_t bos = -1, eos = -1;
  std::string model_path;

  void check(const sentencepiece::util::Status& status, const char* what) const {
    if (!status.ok()) throw std::runtime_error(model_path + ": " + what + ": " + status.ToString());
  }
};

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model, const std::string& tokenizer_config)
    : impl_(std::make_unique<Impl>()) {
  impl_->model_path = model;
  impl_->check(impl_->sp.Load(model), "cannot load SentencePiece model");
  const auto config = tokenizer_config_load(tokenizer_config);
  impl_->add_bos = config.add_bos_token.value_or(true);
  impl_->add_eos = config.add_eos_token.value_or(false);
  impl_->bos = config.bos_token.empty() ? impl_->sp.bos_id() : token_to_id(config.bos_token);
  impl_->eos = config.eos_token.empty() ? impl_->sp.eos_id() : token_to_id(config.eos_token);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const size_t bad = utf8_first_invalid(text);
  if (bad != std::string_view::npos) {
    throw std::invalid_argument("encode: text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  std::vector<int> pieces;
  impl_->check(impl_->sp.Encode(std::string(text), &pieces), "encode failed");
  std::vector<int32_t> ids;
  ids.reserve(pieces.size() + 2);
  if (add_special_tokens && impl_->add_bos && impl_->bos >= 0) ids.push_back(impl_->bos);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  if (add_special_tokens && impl_->add_eos && impl_->eos >= 0) ids.push_back(impl_->eos);
  return ids;
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  // SentencePiece drops control tokens when decoding; to show them, decode the runs between them
  // and put the control pieces in between.
  std::string text;
  std::vector<int> run;
  const auto flush = [&] {
    if (run.empty()) return;
    std::string part;
    impl_->check(impl_->sp.Decode(run, &part), "decode failed");
    text += part;
    run.clear();
  };
  for (const int32_t id : ids) {
    if (id < 0 || id >= impl_->sp.GetPieceSize()) continue;
    if (impl_->sp.IsControl(id)) {
      if (skip_special_tokens) continue;
      flush();
      text += impl_->sp.IdToPiece(id);
      continue;
    }
    run.push_back(id);
  }
  flush();
  return text;
}

int32_t SentencePieceTokenizer::vocab_size() const { return impl_->sp.GetPieceSize(); }
int32_t SentencePieceTokenizer::bos_id() const { return impl_->bos; }
int32_t SentencePieceTokenizer::eos_id() const { return impl_->eos; }

int32_t SentencePieceTokenizer::token_to_id(std::string_view token) const {
  // PieceToId answers the unknown token's id for an absent piece.
  const int id = impl_->sp.PieceToId(std::string(token));
  return impl_->sp.IdToPiece(id) == token ? id : -1;
}

std::string SentencePieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= impl_->sp.GetPieceSize()) {
    throw std::out_of_range("id_to_token: id " + std::to_string(id) + " is not in the vocabulary");
  }
  return impl_->sp.IdToPiece(id);
}

}  // namespace linear_ard::io
