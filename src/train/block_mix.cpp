// block_mix: deterministic per-block replacement of a block's tail by a synthetic sample.
#include "linear_ard/train/block_mix.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

namespace linear_ard::train {

std::vector<int32_t> block_mix(std::vector<int32_t> block, int64_t index, const BlockMix& mix,
                               const io::Tokenizer& tokenizer) {
  if (!mix.make || mix.fraction <= 0) return block;
  // One generator per block, seeded from (seed, index): the choice does not depend on what other
  // blocks drew, so resuming at any block reproduces it.
  std::seed_seq seq{static_cast<uint32_t>(mix.seed), static_cast<uint32_t>(mix.seed >> 32),
                    static_cast<uint32_t>(index), static_cast<uint32_t>(static_cast<uint64_t>(index) >> 32)};
  std::mt19937_64 rng(seq);
  if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) >= mix.fraction) return block;
  const auto n = static_cast<int64_t>(block.size());
  const int64_t length = std::uniform_int_distribution<int64_t>(std::max<int64_t>(1, n / 4), n)(rng);
  const std::vector<int32_t> sample = mix.make(tokenizer, length, rng());
  if (static_cast<int64_t>(sample.size()) > length)
    throw std::logic_error("block_mix: sample of " + std::to_string(sample.size()) + " tokens exceeds the " +
                           std::to_string(length) + " allowed");
  block.resize(static_cast<size_t>(n) - sample.size());
  block.insert(block.end(), sample.begin(), sample.end());
  return block;
}

}  // namespace linear_ard::train
