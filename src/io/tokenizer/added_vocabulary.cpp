// AddedVocabulary: matching added tokens in text the way HF tokenizers' AddedVocabulary does.
#include "added_vocabulary.h"

#include <algorithm>
#include <stdexcept>

#include "linear_ard/io/utf8.h"

#include "json_field.h"
#include "tokenizer_regex.h"
#include "unicode_properties.h"

namespace linear_ard::io {
namespace {

// A word character of Unicode regex \w, which single_word tests on the neighbouring characters.
bool char_is_word(std::string_view ch) {
  static const Regex word(std::string("[") + kRegexWordClass + "]");
  return !word.find_all(ch).empty();
}

std::string_view last_char(std::string_view s) {
  size_t begin = s.size();
  while (begin > 0 && (static_cast<unsigned char>(s[begin - 1]) & 0xC0) == 0x80) --begin;
  return s.substr(begin > 0 ? begin - 1 : 0);
}

std::string_view first_char(std::string_view s) {
  if (s.empty()) return s;
  size_t pos = 0;
  utf8_next(s, pos);
  return s.substr(0, pos);
}

}  // namespace

AddedToken added_token_from_json(const nlohmann::json& spec, int32_t id) {
  const char* what = "added token";
  AddedToken t;
  t.content = json_required<std::string>(spec, "content", what);
  t.id = id;
  t.special = json_field<bool>(spec, "special", false, what);
  t.lstrip = json_field<bool>(spec, "lstrip", false, what);
  t.rstrip = json_field<bool>(spec, "rstrip", false, what);
  t.single_word = json_field<bool>(spec, "single_word", false, what);
  // HF's default: special tokens are matched in the raw input, the others in normalized text.
  t.normalized = json_field<bool>(spec, "normalized", !t.special, what);
  return t;
}

void AddedVocabulary::add(const AddedToken& token, const Normalizer* normalizer) {
  if (token.content.empty() || by_content_.count(token.content)) return;
  const size_t index = tokens_.size();
  tokens_.push_back(token);
  std::string pattern = token.content;
  if (token.normalized && normalizer != nullptr) normalizer->normalize(pattern);
  patterns_.push_back(std::move(pattern));
  by_content_[token.content] = index;
  by_id_.emplace(token.id, index);
  id_end_ = std::max(id_end_, token.id + 1);
  has_normalized_ = has_normalized_ || token.normalized;
  if (patterns_[index].empty()) return;
  auto& candidates = by_first_byte_[token.normalized ? 1 : 0][static_cast<unsigned char>(patterns_[index][0])];
  candidates.push_back(index);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return patterns_[a].size() > patterns_[b].size(); });
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const std::string* AddedVocabulary::text_of(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &patterns_[it->second];
}

std::vector<AddedSplit> AddedVocabulary::split(std::string_view text, bool normalized) const {
  if (text.empty()) return {{-1, 0, 0}};
  const auto& table = by_first_byte_[normalized ? 1 : 0];
  std::vector<AddedSplit> out;
  if (table.empty()) {
    out.push_back({-1, 0, text.size()});
    return out;
  }
  size_t done = 0;  // text before this offset is already in `out`
  size_t pos = 0;
  while (pos < text.size()) {
    const auto candidates = table.find(static_cast<unsigned char>(text[pos]));
    size_t match = tokens_.size();
    if (candidates != table.end()) {
      for (const size_t index : candidates->second) {
        if (text.compare(pos, patterns_[index].size(), patterns_[index]) == 0) {
          match = index;
          break;
        }
      }
    }
    if (match == tokens_.size()) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[match];
    size_t start = pos, stop = pos + patterns_[match].size();
    // The scan resumes after the match even when the checks below reject it, as the
    // non-overlapping leftmost-longest iteration of HF does.
    pos = stop;
    if (token.single_word) {
      const bool space_before = start == 0 || !char_is_word(last_char(text.substr(0, start)));
      const bool space_after = stop == text.size() || !char_is_word(first_char(text.substr(stop)));
      if (!space_before || !space_after) continue;
    }
    if (token.lstrip) start = std::max(trailing_white_space_begin(text.substr(0, start)), done);
    if (token.rstrip) stop += leading_white_space_length(text.substr(stop));
    if (done < start) out.push_back({-1, done, start});
    out.push_back({token.id, start, stop});
    done = stop;
  }
  if (done != text.size()) out.push_back({-1, done, text.size()});
  return out;
}

}  // namespace linear_ard::io
