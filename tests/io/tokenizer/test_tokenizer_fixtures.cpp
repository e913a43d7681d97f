// The real LLaMA-2 and LLaMA-3 tokenizer.json files (skipped where ../shared is absent): known ids,
// round trips, special tokens, and concurrent use. Full parity with HF is
// tests/python/test_tokenizer_parity.py.
#include <gtest/gtest.h>

#include <thread>

#include "linear_ard/io/tokenizer.h"
#include "tokenizer_test_files.h"  // defines: tokenizer_fixture

namespace linear_ard::io {
namespace {

std::unique_ptr<Tokenizer> load_or_skip(const std::string& name) {
  const std::string folder = tokenizer_fixture(name);
  if (folder.empty()) return nullptr;
  return tokenizer_load(folder);
}

#define LOAD_OR_SKIP(var, name)                                                          \
  const auto var = load_or_skip(name);                                                   \
  if (!var) GTEST_SKIP() << "real tokenizer files not found (../shared/fixtures/tokenizers/" name ")"

TEST(TokenizerFixtures, Llama2) {
  LOAD_OR_SKIP(t, "llama2");
  EXPECT_EQ(t->vocab_size(), 32000);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  // Ids from HF tokenizers 0.23.3 on the same file.
  EXPECT_EQ(t->encode("Hello world ! It's <s> a test"),
            (std::vector<int32_t>{1, 22557, 1526, 918, 661, 28742, 28713, 28705, 1, 28705, 264, 1369}));
  EXPECT_EQ(t->encode("", false), (std::vector<int32_t>{}));
  EXPECT_EQ(t->encode(""), (std::vector<int32_t>{1}));
  const std::string text = "Grüße, мир! 😀\n\tcode()";
  EXPECT_EQ(t->decode(t->encode(text), true), text);
  EXPECT_EQ(t->decode(t->encode(text)), "<s> " + text);
  EXPECT_EQ(t->id_to_token(3), "<0x00>");
  EXPECT_EQ(t->token_to_id("\xE2\x96\x81the"), 272);  // "▁the"
}

TEST(TokenizerFixtures, Llama3) {
  LOAD_OR_SKIP(t, "llama3");
  EXPECT_EQ(t->vocab_size(), 128256);
  EXPECT_EQ(t->bos_id(), 128000);
  EXPECT_EQ(t->eos_id(), 128001);
  // This file's post-processor is ByteLevel: no BOS, as with transformers.
  EXPECT_EQ(t->encode("Hello world ! It's <s> a test .  <|begin_of_text|>x"),
            (std::vector<int32_t>{9906, 1917, 758, 1102, 596, 366, 82, 29, 264, 1296, 662, 256, 128000, 87}));
  const std::string text = "  Grüße,\r\n мир! 😀👨‍👩‍👧 12345 I'LL\n\n";
  EXPECT_EQ(t->decode(t->encode(text)), text);
  EXPECT_EQ(t->decode({128000, 9906}, true), "Hello");
  EXPECT_EQ(t->decode({128000, 9906}, false), "<|begin_of_text|>Hello");
}

TEST(TokenizerFixtures, ConcurrentEncodesAgree) {
  LOAD_OR_SKIP(t, "llama3");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "word" + std::to_string(i) + " Straße 東京 ";
  const auto expected = t->encode(text);
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) threads.emplace_back([&] { g = t->encode(text); });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, expected);
}

}  // namespace
}  // namespace linear_ard::io
