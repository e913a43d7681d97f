// BlockMix: synthetic samples (e.g. passkey retrieval) mixed into a share of the training blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "linear_ard/io/tokenizer.h"

namespace linear_ard::train {

// Makes one sample of at most `max_tokens` ids (BOS ... EOS) for `tokenizer`, deterministic for `seed`.
using SampleMaker = std::function<std::vector<int32_t>(const io::Tokenizer& tokenizer, int64_t max_tokens, uint64_t seed)>;

struct BlockMix {
  double fraction = 0.0;  // share of blocks that get a sample
  uint64_t seed = 0;
  SampleMaker make;       // empty: no mixing
};

// Block number `index` of a run (counted from 0 over the stage's training blocks), possibly mixed:
// with probability mix.fraction, decided by a generator seeded from (mix.seed, index) so that a
// resumed run mixes the same blocks, its last L tokens are replaced by a sample, L drawn uniformly
// from [n/4, n], and the first n - L tokens of the corpus block stay in front of it (document
// packing, so every block still holds exactly n real tokens). Throws std::logic_error when the
// sample maker returns more than it was allowed.
std::vector<int32_t> block_mix(std::vector<int32_t> block, int64_t index, const BlockMix& mix,
                               const io::Tokenizer& tokenizer);

}  // namespace linear_ard::train
