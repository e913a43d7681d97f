// BpeModel: the tokenizer.json "model" of type BPE (vocabulary, ranked merges, byte fallback,
// unknown token, ignore_merges) that turns one pre-token into ids.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace linear_ard::io {

// Merges as (left, right) strings in rank order, from either serialisation HF writes: "a b"
// strings (split at the one space) or ["a", "b"] pairs. Throws std::invalid_argument naming the
// 0-based index of a malformed entry.
std::vector<std::pair<std::string, std::string>> bpe_merges_from_json(const nlohmann::json& merges);

class BpeModel {
 public:
  // Throws std::invalid_argument on an unsupported option, a merge whose parts or result are not
  // in the vocabulary, or an unknown unk_token.
  explicit BpeModel(const nlohmann::json& spec);

  // Appends the ids of one pre-token. Thread-safe; results for short words are cached.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  const std::string* id_to_token(int32_t id) const;   // nullptr when absent
  // One past the largest id of the vocabulary.
  int32_t id_end() const { return static_cast<int32_t>(tokens_.size()); }

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;  // by id; ids missing from the vocabulary hold ""
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::vector<int32_t> byte_ids_;  // id of "<0xNN>" by byte, -1 when absent; empty without byte_fallback

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace linear_ard::io
