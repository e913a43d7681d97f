// BpeTokenizer: the tokenizer.json pipeline (added tokens, normalizer, pre-tokenizer, BPE,
// post-processor, decoder) with HF tokenizers' semantics.
#include "linear_ard/io/tokenizer_bpe.h"

#include <algorithm>
#include <stdexcept>

#include "linear_ard/io/utf8.h"

#include "added_vocabulary.h"
#include "bpe_model.h"
#include "decoder.h"
#include "json_field.h"
#include "normalizer.h"
#include "post_processor.h"
#include "pre_tokenizer.h"
#include "tokenizer_config.h"

namespace linear_ard::io {

struct BpeTokenizer::Impl {
  std::unique_ptr<BpeModel> model;
  AddedVocabulary added;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Decoder> decoder;
  SpecialTokenTemplate specials;
  int32_t bos = -1, eos = -1;

  // Normalizes, pre-tokenizes and BPE-encodes one stretch of input between added tokens.
  void encode_text(std::string text, bool starts_input, std::vector<int32_t>& ids) const {
    if (normalizer) normalizer->normalize(text);
    for (const auto& split : added.split(text, true)) {
      if (split.id >= 0) {
        ids.push_back(split.id);
        continue;
      }
      if (split.begin == split.end) continue;
      std::vector<PreToken> pieces{{text.substr(split.begin, split.end - split.begin), starts_input && split.begin == 0}};
      if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces);
      for (const auto& piece : pieces) model->tokenize(piece.text, ids);
    }
  }
};

BpeTokenizer::BpeTokenizer(const std::string& tokenizer_json, const std::string& tokenizer_config)
    : impl_(std::make_unique<Impl>()) {
  const auto json = json_file_load(tokenizer_json);
  const auto config = tokenizer_config_load(tokenizer_config);
  try {
    if (!json.is_object()) throw std::invalid_argument("not a JSON object");
    const auto& model = json_required<nlohmann::json>(json, "model", "tokenizer");
    // Older files omit the type of a BPE model.
    const auto type = json_field<std::string>(model, "type", "BPE", "model");
    if (type != "BPE") {
      throw std::invalid_argument("unsupported model type \"" + type + "\" (supported: BPE; use tokenizer.model for SentencePiece Unigram)");
    }
    impl_->model = std::make_unique<BpeModel>(model);
    impl_->normalizer = normalizer_from_json(json.value("normalizer", nlohmann::json()));
    std::vector<AddedToken> added;
    for (const auto& spec : json_field<nlohmann::json>(json, "added_tokens", nlohmann::json::array(), "tokenizer")) {
      added.push_back(added_token_from_json(spec, json_required<int32_t>(spec, "id", "added token")));
    }
    // transformers adds the tokens of added_tokens_decoder that tokenizer.json lacks.
    added.insert(added.end(), config.added_tokens.begin(), config.added_tokens.end());
    for (auto& token : added) {
      // HF gives an added token that is also a vocabulary entry the vocabulary's id.
      const int32_t model_id = impl_->model->token_to_id(token.content);
      if (model_id >= 0) token.id = model_id;
      impl_->added.add(token, impl_->normalizer.get());
    }
    impl_->pre_tokenizer = pre_tokenizer_from_json(json.value("pre_tokenizer", nlohmann::json()));
    impl_->decoder = decoder_from_json(json.value("decoder", nlohmann::json()));
    impl_->specials = post_processor_from_json(json.value("post_processor", nlohmann::json()));
  } catch (const std::exception& e) {
    throw std::runtime_error(tokenizer_json + ": " + e.what());
  }
  impl_->bos = config.bos_token.empty() ? -1 : token_to_id(config.bos_token);
  impl_->eos = config.eos_token.empty() ? -1 : token_to_id(config.eos_token);
}

BpeTokenizer::~BpeTokenizer() = default;

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const size_t bad = utf8_first_invalid(text);
  if (bad != std::string_view::npos) {
    throw std::invalid_argument("encode: text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  if (add_special_tokens) ids = impl_->specials.prefix;
  // Non-normalized added tokens are found in the raw input, before normalization.
  for (const auto& split : impl_->added.split(text, false)) {
    if (split.id >= 0) {
      ids.push_back(split.id);
    } else {
      impl_->encode_text(std::string(text.substr(split.begin, split.end - split.begin)), split.begin == 0, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->specials.suffix.begin(), impl_->specials.suffix.end());
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (const AddedToken* added = impl_->added.find(id)) {
      if (!(skip_special_tokens && added->special)) tokens.push_back(*impl_->added.text_of(id));
    } else if (const std::string* token = impl_->model->id_to_token(id)) {
      // HF tests specialness by content, so a model token spelled like a special one is skipped too.
      const AddedToken* same = impl_->added.find(*token);
      if (!(skip_special_tokens && same != nullptr && same->special)) tokens.push_back(*token);
    }
  }
  std::string text;
  if (impl_->decoder) {
    impl_->decoder->decode_chain(tokens);
    for (const auto& t : tokens) text += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  }
  return text;
}

int32_t BpeTokenizer::vocab_size() const { return std::max(impl_->model->id_end(), impl_->added.id_end()); }
int32_t BpeTokenizer::bos_id() const { return impl_->bos; }
int32_t BpeTokenizer::eos_id() const { return impl_->eos; }

int32_t BpeTokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* added = impl_->added.find(token)) return added->id;
  return impl_->model->token_to_id(token);
}

std::string BpeTokenizer::id_to_token(int32_t id) const {
  if (const std::string* added = impl_->added.text_of(id)) return *added;
  if (const std::string* token = impl_->model->id_to_token(id)) return *token;
  throw std::out_of_range("id_to_token: id " + std::to_string(id) + " is not in the vocabulary");
}

}  // namespace linear_ard::io
