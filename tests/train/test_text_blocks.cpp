// The data flow of a run (token_stream.h, text_blocks.h): the validation blocks held out of every
// pass; the shuffle's order changing with the seed and kept within it; stage 2 continuing the stream
// where stage 1's blocks end, re-reading data only after the stream ran out, with one warning and
// the counts (tokens, distinct tokens, passes) that training_summary.json reports.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "linear_ard/io/tokenizer.h"        // defines: tokenizer_load
#include "linear_ard/train/text_blocks.h"   // defines: TextBlocks
#include "linear_ard/train/token_stream.h"  // defines: TokenStream
#include "demo_tokenizer.h"                 // defines: demo_tokenizer

namespace {

namespace fs = std::filesystem;
using namespace linear_ard;
using train::demo_tokenizer;
using train::TextBlocks;
using train::TokenStream;

// A .npy file of ids 0, 1, ..., n - 1 (uint32), so that every id names its position in a pass; named
// by the process, since ctest runs this file's tests side by side.
std::string positions_npy(int64_t n) {
  const fs::path path =
      fs::temp_directory_path() / ("text_blocks_" + std::to_string(::getpid()) + "_" + std::to_string(n) + ".npy");
  std::string header = "{'descr': '<u4', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  header.resize(118, ' ');
  header += '\n';  // magic (6) + version (2) + length (2) + header = 128 bytes
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  std::vector<uint32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0u);
  out.write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * 4));
  return path.string();
}

TokenStream positions_stream(int64_t n) {
  return TokenStream({{positions_npy(n)}}, demo_tokenizer(), /*vocab_size=*/1 << 30, "data");
}

// The first id of each of `count` blocks drawn.
std::vector<int32_t> firsts(TextBlocks& blocks, int64_t count) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(blocks.next().front());
  return out;
}

TEST(TextBlocks, ValidationBlocksAreHeldOutOfEveryPass) {
  TokenStream stream = positions_stream(100);
  const auto val = stream.hold_out(2, 10, "the validation");
  ASSERT_EQ(val.size(), 2u);
  EXPECT_EQ(val[0].front(), 0);
  EXPECT_EQ(val[1].front(), 10);
  stream.block_fits(30, "ctx_len");
  TextBlocks blocks(stream, 30, 6, "stage 1", nullptr);
  // 80 tokens after the held-out 20: blocks at 20, 50, then (the tail of 20 dropped) a new pass.
  EXPECT_EQ(firsts(blocks, 6), (std::vector<int32_t>{20, 50, 20, 50, 20, 50}));
  EXPECT_EQ(blocks.passes(), 2);
  EXPECT_EQ(blocks.tokens(), 180);
  EXPECT_EQ(blocks.distinct_tokens(), 60);
}

TEST(TextBlocks, TooLittleDataIsAnErrorNamingTheKey) {
  TokenStream stream = positions_stream(100);
  stream.hold_out(2, 30, "the validation");
  EXPECT_THROW(
      {
        try {
          stream.block_fits(50, "config key 'ctx_len' (50)");
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("config key 'ctx_len' (50)"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
  TokenStream small = positions_stream(10);
  EXPECT_THROW(small.hold_out(2, 8, "the validation"), std::invalid_argument);
}

TEST(TextBlocks, ShuffleChangesTheOrderAcrossSeedsAndKeepsItWithinOne) {
  const auto drawn = [](uint64_t seed, int64_t buffer) {
    TokenStream stream = positions_stream(10000);
    TextBlocks blocks(stream, 10, 1000, "stage 1", nullptr);
    blocks.shuffle(buffer, seed);
    return firsts(blocks, 1000);
  };
  const std::vector<int32_t> a = drawn(0, 1024), again = drawn(0, 1024), b = drawn(1, 1024);
  EXPECT_EQ(a, again);
  EXPECT_NE(a, b);
  // A buffer holding the whole stage draws a permutation of its blocks.
  std::vector<int32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> stream_order(1000);
  for (int32_t i = 0; i < 1000; ++i) stream_order[i] = 10 * i;
  EXPECT_EQ(sorted, stream_order);
  int64_t moved = 0;
  for (size_t i = 0; i < a.size(); ++i) moved += a[i] != b[i];
  EXPECT_GT(moved, 990);
  EXPECT_EQ(drawn(0, 0), stream_order);
}

TEST(TextBlocks, StageTwoContinuesTheStreamWhereStageOneEnds) {
  TokenStream stream = positions_stream(1000);
  stream.hold_out(1, 40, "the validation");
  stream.block_fits(20, "ctx_len");
  stream.block_fits(100, "stage2.ctx_len");
  std::vector<std::string> warnings;
  const auto warn = [&](const std::string& w) { warnings.push_back(w); };
  TextBlocks stage1(stream, 20, 12, "stage 1", warn), stage2(stream, 100, 12, "stage 2", warn);
  stage1.shuffle(1024, 0);
  stage2.shuffle(1024, 1);
  std::set<int32_t> seen1;
  for (int i = 0; i < 12; ++i)
    for (int32_t id : stage1.next()) seen1.insert(id);
  // Stage 1 read tokens 40..279 (its 12 blocks, shuffled); stage 2 starts at 280: 7 blocks of 100
  // to the end of the pass (tail of 20 dropped), then the data runs out and it re-reads from 40.
  EXPECT_EQ(*seen1.begin(), 40);
  EXPECT_EQ(*seen1.rbegin(), 279);
  std::vector<int32_t> starts;
  for (int i = 0; i < 12; ++i) {
    const std::vector<int32_t> block = stage2.next();
    for (size_t k = 1; k < block.size(); ++k) ASSERT_EQ(block[k], block[k - 1] + 1);  // contiguous
    starts.push_back(block.front());
  }
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts, (std::vector<int32_t>{40, 140, 240, 280, 340, 380, 440, 480, 580, 680, 780, 880}));
  EXPECT_TRUE(warnings.size() == 1 && warnings[0].find("stage 2 ran out of data after reading 700 tokens") == 0)
      << (warnings.empty() ? "no warning" : warnings[0]);
  EXPECT_EQ(stage1.passes(), 0);
  EXPECT_EQ(stage2.passes(), 1);
  EXPECT_EQ(stage1.distinct_tokens(), 240);
  EXPECT_EQ(stage2.tokens(), 1200);
  EXPECT_EQ(stage2.distinct_tokens(), 940);  // [40, 540) and [280, 980): the 20 at the pass's end dropped
}

TEST(TextBlocks, SkipRestMovesTheStreamPastAFinishedStage) {
  const auto stage2_first = [](bool skip) {
    TokenStream stream = positions_stream(1000);
    TextBlocks stage1(stream, 10, 8, "stage 1", nullptr), stage2(stream, 50, 2, "stage 2", nullptr);
    stage1.shuffle(4, 0);
    if (skip) {
      stage1.skip_rest();
    } else {
      for (int i = 0; i < 8; ++i) stage1.next();
    }
    return stage2.next().front();
  };
  EXPECT_EQ(stage2_first(true), 80);
  EXPECT_EQ(stage2_first(false), 80);
}

// The shuffle on the demo run (configs/demo_cpu.yaml: data/demo/restore.jsonl, 256-token blocks
// after 16 validation blocks, 300 steps of one block): the fraction of its 300 positions that seeds
// 0 and 1 fill with different blocks, which the key table's data_shuffle line states.
TEST(TextBlocks, DemoShuffleMovesNearlyEveryBlock) {
  const auto drawn = [](uint64_t seed) {
    TokenStream stream({{LINEAR_ARD_DEMO_DATA}}, demo_tokenizer(), 1 << 30, "data");
    stream.hold_out(16, 256, "the validation");
    TextBlocks blocks(stream, 256, 300, "stage 1", nullptr);
    blocks.shuffle(1024, seed);
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < 300; ++i) out.push_back(blocks.next());
    return out;
  };
  const auto a = drawn(0), b = drawn(1);
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  const double fraction = static_cast<double>(differ) / static_cast<double>(a.size());
  std::printf("demo run, data_shuffle 1024: %ld of %zu positions differ between seeds 0 and 1 (%.1f %%)\n",
              static_cast<long>(differ), a.size(), 100 * fraction);
  EXPECT_GT(fraction, 0.95);
}

}  // namespace
