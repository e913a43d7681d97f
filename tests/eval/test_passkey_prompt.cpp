// passkey_prompt_make's answer lead: the prompt's ids are its text's, then the bare space that every
// common tokenizer writes before the key's digits, so that the model's first greedy choice is the
// key's first digit and not "a number or a word" (docs/eval.md, "Passkey"). Checked with the demo
// model's SentencePiece tokenizer and LLaMA-2's and LLaMA-3's (byte-level BPE) where present.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "linear_ard/eval/passkey.h"  // defines: passkey_prompt_make, passkey_prompt_ids
#include "linear_ard/io/tokenizer.h"  // defines: tokenizer_load

namespace {

using namespace linear_ard;

class PasskeyPrompt : public ::testing::TestWithParam<std::string> {};

bool whitespace_only(const std::string& s) { return s.find_first_not_of(" \t\n") == std::string::npos; }

TEST_P(PasskeyPrompt, LeadIsTheAnswersWhitespaceAndTheKeyFollows) {
  if (!std::filesystem::is_directory(GetParam())) GTEST_SKIP() << GetParam() << " is absent";
  const auto tokenizer = io::tokenizer_load(GetParam());
  for (int64_t target : {150, 233, 400}) {
    for (double depth : {0.0, 0.5, 1.0}) {
      const uint64_t seed = static_cast<uint64_t>(target) * 31 + static_cast<uint64_t>(depth * 4);
      const eval::PasskeyPrompt p = eval::passkey_prompt_make(*tokenizer, target, depth, seed);
      const std::vector<int32_t> ids = eval::passkey_prompt_ids(*tokenizer, p);
      ASSERT_FALSE(p.answer_lead.empty()) << "these tokenizers write a bare space before digits";
      EXPECT_TRUE(whitespace_only(tokenizer->decode(p.answer_lead, true)));
      EXPECT_EQ(static_cast<int64_t>(ids.size()), p.tokens);
      EXPECT_LE(p.tokens, target);
      // The prompt's ids are a prefix of the ids of prompt + answer, and the next id starts the key.
      const std::vector<int32_t> full = tokenizer->encode(p.text + " " + p.passkey + ".", true);
      ASSERT_GT(full.size(), ids.size());
      EXPECT_TRUE(std::equal(ids.begin(), ids.end(), full.begin())) << p.text;
      const std::string next = tokenizer->decode({full[ids.size()]}, true);
      EXPECT_FALSE(whitespace_only(next));
      EXPECT_EQ(p.passkey.rfind(next, 0), 0u) << "'" << next << "' does not start the key " << p.passkey;
      // Without the lead: the reference prompt, the same key and text fitted to the same target.
      const eval::PasskeyPrompt ref = eval::passkey_prompt_make(*tokenizer, target, depth, seed, false);
      EXPECT_TRUE(ref.answer_lead.empty());
      EXPECT_EQ(ref.passkey, p.passkey);
      EXPECT_EQ(eval::passkey_prompt_ids(*tokenizer, ref), tokenizer->encode(ref.text, true));
      EXPECT_LE(ref.tokens, target);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, PasskeyPrompt,
                         ::testing::Values(std::string(LINEAR_ARD_DEMO_MODEL),
                                           std::string(LINEAR_ARD_TOKENIZER_FIXTURES) + "/llama2",
                                           std::string(LINEAR_ARD_TOKENIZER_FIXTURES) + "/llama3"));

}  // namespace
