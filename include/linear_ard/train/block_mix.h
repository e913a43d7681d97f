// BlockMix: synthetic samples (e.g. passkey retrieval) mixed into a share of the training blocks,
// with a loss weight for each sample's answer.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "linear_ard/io/tokenizer.h"

namespace linear_ard::train {

// One synthetic sample: ids (BOS ... EOS) whose tokens from answer_begin on are the answer, what the
// model should produce after the question (answer_begin == ids.size(): no answer).
struct MixSample {
  std::vector<int32_t> ids;
  int64_t answer_begin = 0;
};

// Makes one sample of at most `max_tokens` ids for `tokenizer`, deterministic for `seed`; no ids: no
// sample fits.
using SampleMaker = std::function<MixSample(const io::Tokenizer& tokenizer, int64_t max_tokens, uint64_t seed)>;

struct BlockMix {
  double fraction = 0.0;       // share of blocks that get a sample
  uint64_t seed = 0;
  double answer_weight = 1.0;  // LM-loss weight of a sample's answer tokens (every other token 1)
  SampleMaker make;            // empty: no mixing
};

// A training block and the LM-loss weight of each of its tokens as a prediction target (weights[i]
// weighs predicting ids[i] from ids[..i-1]; weights[0] is never used). Empty weights: all 1.
struct MixedBlock {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Block number `index` of a run (counted from 0 over the stage's training blocks), possibly mixed:
// with probability mix.fraction, decided by a generator seeded from (mix.seed, index) so that a
// resumed run mixes the same blocks, its last L tokens are replaced by a sample, L drawn uniformly
// from [n/4, n], and the first n - L tokens of the corpus block stay in front of it (document
// packing, so every block still holds exactly n real tokens). A mixed block whose sample has an
// answer gets weights (answer tokens mix.answer_weight, the rest 1) unless answer_weight is 1; any
// other block gets none. Throws std::logic_error when the sample maker returns more than it was
// allowed or an answer_begin outside its ids.
MixedBlock block_mix(std::vector<int32_t> block, int64_t index, const BlockMix& mix, const io::Tokenizer& tokenizer);

}  // namespace linear_ard::train
