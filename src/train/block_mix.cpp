// block_mix: deterministic per-block replacement of a block's tail by a synthetic sample, and the
// loss weights of its answer.
#include "linear_ard/train/block_mix.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

namespace linear_ard::train {

MixedBlock block_mix(std::vector<int32_t> block, int64_t index, const BlockMix& mix, const io::Tokenizer& tokenizer) {
  MixedBlock out;
  if (!mix.make || mix.fraction <= 0) {
    out.ids = std::move(block);
    return out;
  }
  // One generator per block, seeded from (seed, index): the choice does not depend on what other
  // blocks drew, so resuming at any block reproduces it.
  std::seed_seq seq{static_cast<uint32_t>(mix.seed), static_cast<uint32_t>(mix.seed >> 32),
                    static_cast<uint32_t>(index), static_cast<uint32_t>(static_cast<uint64_t>(index) >> 32)};
  std::mt19937_64 rng(seq);
  if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) >= mix.fraction) {
    out.ids = std::move(block);
    return out;
  }
  const auto n = static_cast<int64_t>(block.size());
  const int64_t length = std::uniform_int_distribution<int64_t>(std::max<int64_t>(1, n / 4), n)(rng);
  const MixSample sample = mix.make(tokenizer, length, rng());
  const auto size = static_cast<int64_t>(sample.ids.size());
  if (size > length)
    throw std::logic_error("block_mix: sample of " + std::to_string(size) + " tokens exceeds the " +
                           std::to_string(length) + " allowed");
  if (sample.answer_begin < 0 || sample.answer_begin > size)
    throw std::logic_error("block_mix: answer_begin " + std::to_string(sample.answer_begin) +
                           " is outside the sample's " + std::to_string(size) + " tokens");
  const int64_t start = n - size;
  block.resize(static_cast<size_t>(start));
  block.insert(block.end(), sample.ids.begin(), sample.ids.end());
  out.ids = std::move(block);
  // answer_weight 1 leaves the weights out, so the loss takes the plain mean exactly as unmixed.
  if (mix.answer_weight != 1.0 && sample.answer_begin < size) {
    out.weights.assign(static_cast<size_t>(n), 1.0f);
    std::fill(out.weights.begin() + start + sample.answer_begin, out.weights.end(), static_cast<float>(mix.answer_weight));
  }
  return out;
}

}  // namespace linear_ard::train
