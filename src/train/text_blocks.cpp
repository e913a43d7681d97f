// text_blocks: one stage's blocks from the token stream: shuffle pool, shards, and counts.
#include "linear_ard/train/text_blocks.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace linear_ard::train {

TextBlocks::TextBlocks(TokenStream& stream, int64_t ctx_len, int64_t count, std::string stage,
                       std::function<void(const std::string&)> warn)
    : stream_(stream), ctx_len_(ctx_len), count_(count), stage_(std::move(stage)), warn_(std::move(warn)) {
  if (ctx_len_ < 1) throw std::invalid_argument("data: ctx_len must be >= 1");
}

void TextBlocks::shard(int64_t rank, int64_t world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("data: shard rank " + std::to_string(rank) + " of " + std::to_string(world));
  shard_rank_ = rank;
  shard_world_ = world;
}

void TextBlocks::shuffle(int64_t buffer, uint64_t seed) {
  if (buffer < 0) throw std::invalid_argument("data: shuffle buffer " + std::to_string(buffer) + " must be >= 0");
  shuffle_buffer_ = buffer;
  shuffle_rng_.seed(seed);
  pool_.clear();
}

std::vector<int32_t> TextBlocks::next() {
  for (int64_t r = 0; r < shard_rank_; ++r) shuffled_next();
  std::vector<int32_t> block = shuffled_next();
  for (int64_t r = shard_rank_ + 1; r < shard_world_; ++r) shuffled_next();
  return block;
}

void TextBlocks::skip_rest() {
  while (drawn_ < count_) shuffled_next();
}

TokenStream::Block TextBlocks::stream_next() {
  const int64_t passes_before = stream_.passes();
  TokenStream::Block block = stream_.block_next(ctx_len_);
  if (stream_.passes() > passes_before) {
    ++passes_;
    if (warn_)
      warn_(stage_ + " ran out of data after reading " + std::to_string(read_ * ctx_len_) +
            " tokens: its blocks now repeat data read before (pass " + std::to_string(stream_.passes() + 1) +
            " over the files); add data, or fewer steps, to train on tokens seen once");
  }
  ++read_;
  return block;
}

std::vector<int32_t> TextBlocks::shuffled_next() {
  TokenStream::Block block;
  // The pool reads ahead no further than the stage's blocks, so the next stage starts where they end.
  const int64_t ahead = std::min(shuffle_buffer_, count_ - drawn_);
  while (static_cast<int64_t>(pool_.size()) < ahead) pool_.push_back(stream_next());
  if (pool_.empty()) {
    block = stream_next();
  } else {
    const auto j = static_cast<size_t>(shuffle_rng_() % pool_.size());
    std::swap(pool_[j], pool_.back());
    block = std::move(pool_.back());
    pool_.pop_back();
  }
  ++drawn_;
  // Merge [offset, offset + n) into the covered intervals.
  int64_t begin = block.offset, end = block.offset + ctx_len_;
  auto it = covered_.upper_bound(begin);
  if (it != covered_.begin() && std::prev(it)->second >= begin) --it;
  while (it != covered_.end() && it->first <= end) {
    begin = std::min(begin, it->first);
    end = std::max(end, it->second);
    it = covered_.erase(it);
  }
  covered_.emplace(begin, end);
  return std::move(block.ids);
}

int64_t TextBlocks::distinct_tokens() const {
  int64_t n = 0;
  for (const auto& [begin, end] : covered_) n += end - begin;
  return n;
}

}  // namespace linear_ard::train
