// TextBlocks: the training blocks of one stage (paper Appendix B: every block holds exactly ctx_len
// real tokens), cut from a TokenStream, shuffled by a seeded buffer, sharded over data-parallel
// ranks, and counted (tokens, distinct tokens, passes over the data).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "linear_ard/train/token_stream.h"

namespace linear_ard::train {

class TextBlocks {
 public:
  // The blocks of `ctx_len` tokens that `stage` (its name in warnings, e.g. "stage 1") reads from
  // `stream`, starting where the stream stands: `count` blocks in all over every rank (the stage's
  // L B A U G tokens), so the next stage's blocks start where this one's end. `warn` receives one
  // line each time the stage runs out of data and the stream starts a new pass.
  TextBlocks(TokenStream& stream, int64_t ctx_len, int64_t count, std::string stage,
             std::function<void(const std::string&)> warn);

  // The next training block of this rank.
  std::vector<int32_t> next();
  // Makes next() return only blocks rank, rank + world, rank + 2·world, ... of the stage's blocks:
  // the disjoint shard of one of `world` data-parallel ranks. The union over ranks of their k-th
  // group of blocks is the single stream's k-th group of `world` blocks.
  void shard(int64_t rank, int64_t world);
  // Makes next() draw each block at random from a pool of the stage's next `buffer` blocks
  // (std::mt19937_64 seeded by `seed`), as a streaming shuffle buffer does; the pool never reads
  // past the stage's `count` blocks, so a buffer of at least `count` shuffles the whole stage. 0
  // keeps the stream's order. The draws depend only on (buffer, seed), so a resumed run that
  // replays its blocks gets the same ones, and the shuffle is of the unsharded blocks, so ranks
  // stay disjoint. Throws for buffer < 0.
  void shuffle(int64_t buffer, uint64_t seed);
  // Reads the stage's blocks not drawn yet, without returning them: a resumed run that skips this
  // finished stage moves the stream to where the next stage starts.
  void skip_rest();

  // Blocks drawn so far over every rank, and their tokens.
  int64_t drawn() const { return drawn_; }
  int64_t tokens() const { return drawn_ * ctx_len_; }
  // Distinct positions of the data (offsets in a pass) among the drawn blocks' tokens.
  int64_t distinct_tokens() const;
  // Passes over the data the stream completed while this stage read it.
  int64_t passes() const { return passes_; }

 private:
  // The stream's next block, counted (a completed pass warned about).
  TokenStream::Block stream_next();
  // The next block of the stage after the shuffle (stream_next's when there is none), counted.
  std::vector<int32_t> shuffled_next();

  TokenStream& stream_;
  int64_t ctx_len_;
  int64_t count_;
  std::string stage_;
  std::function<void(const std::string&)> warn_;
  int64_t read_ = 0, drawn_ = 0, passes_ = 0;
  int64_t shard_rank_ = 0, shard_world_ = 1;
  int64_t shuffle_buffer_ = 0;
  std::mt19937_64 shuffle_rng_;
  std::vector<TokenStream::Block> pool_;  // the shuffle's blocks, read ahead of the draws
  std::map<int64_t, int64_t> covered_;    // the drawn blocks' [offset, end) in a pass, merged
};

}  // namespace linear_ard::train
