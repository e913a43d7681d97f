// BpeModel: byte-pair encoding of one pre-token with HF tokenizers' semantics.
#include "bpe_model.h"

#include <cstdio>
#include <queue>
#include <stdexcept>

#include "linear_ard/io/utf8.h"

#include "json_field.h"

namespace linear_ard::io {
namespace {

// Words longer than this (bytes) are not cached, like HF; whole documents become one word for
// files without a pre-tokenizer and would only fill the cache.
constexpr size_t kCacheMaxWordBytes = 256;
constexpr size_t kCacheMaxEntries = 1 << 16;

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct Symbol {
  int32_t id;
  int32_t prev, next;  // neighbours in the linked list, -1 at the ends
  bool alive;
};

struct MergeCandidate {
  int32_t rank, pos, merged_id;
  // Lowest rank first, then leftmost, as HF's BinaryHeap orders its merges.
  bool operator<(const MergeCandidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

std::vector<std::pair<std::string, std::string>> bpe_merges_from_json(const nlohmann::json& merges) {
  if (!merges.is_array()) throw std::invalid_argument("model.merges is not an array");
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& m = merges[i];
    const auto bad = [&](const std::string& why) {
      return std::invalid_argument("model.merges[" + std::to_string(i) + "] " + why + ": " + m.dump());
    };
    if (m.is_string()) {
      const auto& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        throw bad("is not two tokens separated by one space");
      }
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      throw bad("is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return out;
}

BpeModel::BpeModel(const nlohmann::json& spec) {
  const char* what = "model";
  for (const char* unsupported : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!json_field<std::string>(spec, unsupported, "", what).empty()) {
      throw std::invalid_argument(std::string("model: unsupported option ") + unsupported + " (not used by LLaMA-family BPE)");
    }
  }
  if (json_field<double>(spec, "dropout", 0.0, what) != 0.0) {
    throw std::invalid_argument("model: BPE dropout is a training-time option and is not supported");
  }
  fuse_unk_ = json_field<bool>(spec, "fuse_unk", false, what);
  byte_fallback_ = json_field<bool>(spec, "byte_fallback", false, what);
  ignore_merges_ = json_field<bool>(spec, "ignore_merges", false, what);

  const auto& vocab = json_required<nlohmann::json>(spec, "vocab", what);
  if (!vocab.is_object()) throw std::invalid_argument("model.vocab is not an object");
  vocab_.reserve(vocab.size());
  for (const auto& [token, id_json] : vocab.items()) {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 || id_json.get<int64_t>() > INT32_MAX) {
      throw std::invalid_argument("model.vocab[\"" + token + "\"] is not a non-negative 32-bit id");
    }
    const auto id = id_json.get<int32_t>();
    vocab_[token] = id;
    if (static_cast<size_t>(id) >= tokens_.size()) tokens_.resize(id + 1);
    tokens_[id] = token;
  }

  const auto merges = bpe_merges_from_json(json_required<nlohmann::json>(spec, "merges", what));
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t l = token_to_id(left), r = token_to_id(right), m = token_to_id(left + right);
    for (const auto& [id, token] : {std::pair{l, left}, {r, right}, {m, left + right}}) {
      if (id < 0) {
        throw std::invalid_argument("model.merges[" + std::to_string(rank) + "]: token \"" + token +
                                    "\" is not in the vocabulary");
      }
    }
    merges_[pair_key(l, r)] = {static_cast<int32_t>(rank), m};
  }

  const auto unk = json_field<std::string>(spec, "unk_token", "", what);
  if (!unk.empty()) {
    unk_id_ = token_to_id(unk);
    if (unk_id_ < 0) throw std::invalid_argument("model.unk_token \"" + unk + "\" is not in the vocabulary");
  }
  if (byte_fallback_) {
    byte_ids_.resize(256);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      byte_ids_[b] = token_to_id(name);
    }
  }
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? -1 : it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= id_end() || tokens_[id].empty()) return nullptr;
  return &tokens_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const int32_t whole = token_to_id(word);
    if (whole >= 0) {
      ids.push_back(whole);
      return;
    }
  }
  if (word.size() >= kCacheMaxWordBytes) {
    merge_word(word, ids);
    return;
  }
  const std::string key(word);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word_ids;
  merge_word(word, word_ids);
  ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kCacheMaxEntries) cache_.clear();
  cache_.emplace(key, std::move(word_ids));
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  // Initial symbols: one per character, or its <0xNN> bytes, or the unknown token (consecutive
  // unknowns fused into one when fuse_unk is set). A character with neither is dropped, as HF does.
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  const auto add = [&](int32_t id) { symbols.push_back({id, static_cast<int32_t>(symbols.size()) - 1, -1, true}); };
  bool pending_unk = false;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    utf8_next(word, pos);
    const std::string_view ch = word.substr(begin, pos - begin);
    const int32_t id = token_to_id(ch);
    if (id >= 0) {
      if (pending_unk) add(unk_id_);
      pending_unk = false;
      add(id);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (const char c : ch) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all_bytes) {
        // HF emits the bytes without flushing a pending unknown first; kept for identical ids.
        for (const char c : ch) add(byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (pending_unk && !fuse_unk_) add(unk_id_);
      pending_unk = true;
    }
  }
  if (pending_unk) add(unk_id_);
  for (size_t i = 0; i + 1 < symbols.size(); ++i) symbols[i].next = static_cast<int32_t>(i + 1);

  std::priority_queue<MergeCandidate> queue;
  const auto push_pair = [&](int32_t left_pos) {
    const int32_t right_pos = symbols[left_pos].next;
    if (right_pos < 0) return;
    const auto it = merges_.find(pair_key(symbols[left_pos].id, symbols[right_pos].id));
    if (it != merges_.end()) queue.push({it->second.first, left_pos, it->second.second});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) push_pair(static_cast<int32_t>(i));

  while (!queue.empty()) {
    const MergeCandidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    // The entry is stale when either side changed since it was queued.
    const auto it = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (it == merges_.end() || it->second.second != top.merged_id) continue;
    Symbol& right = symbols[left.next];
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const auto& s : symbols) {
    if (s.alive) ids.push_back(s.id);
  }
}

}  // namespace linear_ard::io
