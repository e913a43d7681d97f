// passkey_sample_make, the sample `linear-ard pretrain` mixes into its blocks: the prompt `eval
// passkey` asks, then the answer; answer_begin must point exactly at " <key>." + EOS, which the loss
// weights (pretrain.answer_weight). Checked by decoding with the demo model's SentencePiece
// tokenizer and LLaMA-2's and LLaMA-3's (byte-level BPE) where their fixtures are present.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "linear_ard/eval/passkey_sample.h"  // defines: passkey_sample_make
#include "linear_ard/io/tokenizer.h"         // defines: tokenizer_load

namespace {

using namespace linear_ard;

class PasskeySample : public ::testing::TestWithParam<std::string> {};

std::string trimmed_left(const std::string& s) { return s.substr(std::min(s.find_first_not_of(' '), s.size())); }

TEST_P(PasskeySample, AnswerTokensSpellTheKeyAndEos) {
  if (!std::filesystem::is_directory(GetParam())) GTEST_SKIP() << GetParam() << " is absent";
  const auto tokenizer = io::tokenizer_load(GetParam());
  const std::regex needle("The pass key is ([0-9]+)\\. Remember it\\. \\1 is the pass key\\.");
  int64_t samples = 0;
  for (int64_t max_tokens : {120, 147, 180, 213, 256}) {
    for (uint64_t seed = 0; seed < 8; ++seed) {
      const train::MixSample s = eval::passkey_sample_make(*tokenizer, max_tokens, seed * 7919 + 1);
      ASSERT_FALSE(s.ids.empty()) << max_tokens;
      ++samples;
      const auto size = static_cast<int64_t>(s.ids.size());
      ASSERT_LE(size, max_tokens);
      ASSERT_GT(s.answer_begin, 0);
      ASSERT_LT(s.answer_begin, size);
      EXPECT_EQ(s.ids.back(), tokenizer->eos_id());
      const std::vector<int32_t> prompt(s.ids.begin(), s.ids.begin() + s.answer_begin);
      const std::vector<int32_t> answer(s.ids.begin() + s.answer_begin, s.ids.end());
      const std::string prompt_text = tokenizer->decode(prompt, /*skip_special_tokens=*/true);
      std::smatch m;
      ASSERT_TRUE(std::regex_search(prompt_text, m, needle)) << prompt_text;
      const std::string key = m[1];
      // The prompt ends with the question; the answer is the key, the full stop and EOS, nothing else.
      const std::string question = "\nWhat is the pass key? The pass key is";
      EXPECT_TRUE(prompt_text.size() > question.size() &&
                  prompt_text.compare(prompt_text.size() - question.size(), question.size(), question) == 0)
          << prompt_text;
      EXPECT_EQ(trimmed_left(tokenizer->decode(answer, /*skip_special_tokens=*/true)), key + ".");
      EXPECT_EQ(tokenizer->decode(s.ids, true), prompt_text + " " + key + ".");
      EXPECT_LE(static_cast<int64_t>(answer.size()), 8) << "the answer budget is 8 tokens";
    }
  }
  EXPECT_EQ(samples, 40);
}

TEST_P(PasskeySample, NoSampleWhenThePromptCannotFit) {
  if (!std::filesystem::is_directory(GetParam())) GTEST_SKIP() << GetParam() << " is absent";
  const auto tokenizer = io::tokenizer_load(GetParam());
  const train::MixSample s = eval::passkey_sample_make(*tokenizer, 20, 1);
  EXPECT_TRUE(s.ids.empty());
  EXPECT_EQ(s.answer_begin, 0);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, PasskeySample,
                         ::testing::Values(std::string(LINEAR_ARD_DEMO_MODEL),
                                           std::string(LINEAR_ARD_TOKENIZER_FIXTURES) + "/llama2",
                                           std::string(LINEAR_ARD_TOKENIZER_FIXTURES) + "/llama3"));

}  // namespace
