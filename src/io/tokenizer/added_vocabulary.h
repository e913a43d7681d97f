// AddedVocabulary: tokenizer.json "added_tokens" (special and not) and how they cut input text
// before normalization, with HF's special/lstrip/rstrip/single_word/normalized semantics.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "normalizer.h"

namespace linear_ard::io {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // matches only when not touching a letter or digit
  bool normalized = false;   // matched in normalized text rather than in the raw input
};

// One entry of "added_tokens" (or of tokenizer_config.json's "added_tokens_decoder", with the id
// given separately). Throws std::invalid_argument naming the missing field.
AddedToken added_token_from_json(const nlohmann::json& spec, int32_t id);

// A cut of the text: [begin, end) is the added token `id`, or plain text when id is -1.
struct AddedSplit {
  int32_t id;
  size_t begin, end;
};

class AddedVocabulary {
 public:
  // Adds `token` unless one with the same content exists (the first definition wins, as in HF).
  // A normalized token is looked for as `normalizer` (may be null) rewrites its content, since
  // it is matched in normalized text.
  void add(const AddedToken& token, const Normalizer* normalizer);

  // Cuts `text` at the tokens whose `normalized` flag equals `normalized` (HF matches
  // non-normalized tokens in the raw input first, then normalized ones in each normalized piece).
  // Matches are leftmost-longest and non-overlapping; empty text gives one empty text split.
  std::vector<AddedSplit> split(std::string_view text, bool normalized) const;

  const AddedToken* find(std::string_view content) const;
  const AddedToken* find(int32_t id) const;
  // The text token `id` stands for in decoding and id_to_token: HF uses the normalized form of a
  // normalized token's content there. nullptr when `id` is not an added token.
  const std::string* text_of(int32_t id) const;
  bool has_normalized_tokens() const { return has_normalized_; }
  // One past the largest added id (0 when there is none).
  int32_t id_end() const { return id_end_; }

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;  // what is matched for tokens_[i]
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  // Candidates by first byte, longest first, per value of `normalized`.
  std::unordered_map<unsigned char, std::vector<size_t>> by_first_byte_[2];
  bool has_normalized_ = false;
  int32_t id_end_ = 0;
};

}  // namespace linear_ard::io
