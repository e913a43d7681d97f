// block_mix: which blocks get a sample (seeded per block index, so resume mixes the same ones),
// where the sample lands, and the loss weights of its answer tokens.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "linear_ard/io/tokenizer.h"      // defines: tokenizer_load
#include "linear_ard/train/block_mix.h"  // defines: block_mix, BlockMix, MixSample
#include "demo_tokenizer.h"                // defines: demo_tokenizer

namespace {

using namespace linear_ard;
using train::demo_tokenizer;

std::vector<int32_t> corpus_block(int64_t n) {
  std::vector<int32_t> block(static_cast<size_t>(n));
  std::iota(block.begin(), block.end(), 1000);
  return block;
}

// A sample of max_tokens - (seed % 5) ids 7, 8, 9, ... whose last `answer` ids are the answer.
train::SampleMaker fake_maker(int64_t answer) {
  return [answer](const io::Tokenizer&, int64_t max_tokens, uint64_t seed) {
    train::MixSample s;
    s.ids.resize(static_cast<size_t>(max_tokens - static_cast<int64_t>(seed % 5)));
    std::iota(s.ids.begin(), s.ids.end(), 7);
    s.answer_begin = static_cast<int64_t>(s.ids.size()) - answer;
    return s;
  };
}

TEST(BlockMix, AnswerTokensCarryTheAnswerWeight) {
  const int64_t n = 64;
  const train::BlockMix mix{1.0, 42, 30.0, fake_maker(6)};
  for (int64_t index = 0; index < 20; ++index) {
    const train::MixedBlock m = train::block_mix(corpus_block(n), index, mix, demo_tokenizer());
    ASSERT_EQ(static_cast<int64_t>(m.ids.size()), n);
    ASSERT_EQ(static_cast<int64_t>(m.weights.size()), n);
    // The sample is the tail (7, 8, ...), the corpus block's head stays in front.
    int64_t start = 0;
    while (m.ids[static_cast<size_t>(start)] >= 1000) ++start;
    ASSERT_LE(start, n - n / 4) << "a sample holds at least n/4 tokens";
    for (int64_t i = start; i < n; ++i) EXPECT_EQ(m.ids[static_cast<size_t>(i)], 7 + (i - start));
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(m.weights[static_cast<size_t>(i)], i >= n - 6 ? 30.0f : 1.0f) << i;
  }
}

TEST(BlockMix, UnitWeightUnmixedAndAnswerlessBlocksHaveNoWeights) {
  const int64_t n = 48;
  const train::BlockMix weighted{0.5, 3, 10.0, fake_maker(4)};
  const train::BlockMix unit{0.5, 3, 1.0, fake_maker(4)};
  const train::BlockMix no_answer{1.0, 3, 10.0, fake_maker(0)};
  int64_t mixed = 0;
  for (int64_t index = 0; index < 200; ++index) {
    const train::MixedBlock w = train::block_mix(corpus_block(n), index, weighted, demo_tokenizer());
    const train::MixedBlock u = train::block_mix(corpus_block(n), index, unit, demo_tokenizer());
    // The weight changes nothing but the weights: the same blocks get the same samples.
    EXPECT_EQ(w.ids, u.ids);
    EXPECT_TRUE(u.weights.empty());
    const bool is_mixed = w.ids != corpus_block(n);
    EXPECT_EQ(!w.weights.empty(), is_mixed) << index;
    mixed += is_mixed;
    EXPECT_TRUE(train::block_mix(corpus_block(n), index, no_answer, demo_tokenizer()).weights.empty());
  }
  EXPECT_GT(mixed, 70);
  EXPECT_LT(mixed, 130);
  const train::MixedBlock off = train::block_mix(corpus_block(n), 0, train::BlockMix{}, demo_tokenizer());
  EXPECT_EQ(off.ids, corpus_block(n));
  EXPECT_TRUE(off.weights.empty());
}

TEST(BlockMix, EachBlockDependsOnlyOnSeedAndIndex) {
  const train::BlockMix mix{0.5, 9, 5.0, fake_maker(3)};
  std::vector<train::MixedBlock> forward;
  for (int64_t index = 0; index < 30; ++index) forward.push_back(train::block_mix(corpus_block(40), index, mix, demo_tokenizer()));
  // Resuming at any block (here: backwards, one at a time) reproduces it.
  for (int64_t index = 29; index >= 0; --index) {
    const train::MixedBlock again = train::block_mix(corpus_block(40), index, mix, demo_tokenizer());
    EXPECT_EQ(again.ids, forward[static_cast<size_t>(index)].ids);
    EXPECT_EQ(again.weights, forward[static_cast<size_t>(index)].weights);
  }
}

TEST(BlockMix, BadSamplesAreRefused) {
  const auto too_long = [](const io::Tokenizer&, int64_t max_tokens, uint64_t) {
    return train::MixSample{std::vector<int32_t>(static_cast<size_t>(max_tokens + 1), 7), 0};
  };
  const auto bad_answer = [](const io::Tokenizer&, int64_t, uint64_t) {
    return train::MixSample{std::vector<int32_t>(3, 7), 4};
  };
  EXPECT_THROW(train::block_mix(corpus_block(32), 0, {1.0, 0, 2.0, too_long}, demo_tokenizer()), std::logic_error);
  EXPECT_THROW(train::block_mix(corpus_block(32), 0, {1.0, 0, 2.0, bad_answer}, demo_tokenizer()), std::logic_error);
}

}  // namespace
