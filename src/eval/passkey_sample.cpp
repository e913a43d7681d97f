// passkey_sample_make: passkey prompt + answer as one training sample, with the answer's position.
#include "linear_ard/eval/passkey_sample.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "linear_ard/eval/passkey.h"  // defines: passkey_prompt_make

namespace linear_ard::eval {

train::MixSample passkey_sample_make(const io::Tokenizer& tokenizer, int64_t max_tokens, uint64_t seed) {
  // Room for " " + 5 digits + "." (at most 7 pieces) and EOS after the prompt.
  constexpr int64_t answer_budget = 8;
  std::mt19937_64 rng(seed);
  const double depth = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  const uint64_t prompt_seed = rng();
  PasskeyPrompt p;
  try {
    p = passkey_prompt_make(tokenizer, max_tokens - answer_budget, depth, prompt_seed, /*answer_lead=*/false);
  } catch (const std::invalid_argument&) {
    return {};  // too short for the prompt even without filler: the block stays corpus text
  }
  train::MixSample sample;
  sample.ids = tokenizer.encode(p.text + " " + p.passkey + ".", /*add_special_tokens=*/true);
  if (tokenizer.eos_id() >= 0) sample.ids.push_back(tokenizer.eos_id());
  if (static_cast<int64_t>(sample.ids.size()) > max_tokens)
    throw std::logic_error("passkey sample of " + std::to_string(sample.ids.size()) + " tokens exceeds " +
                           std::to_string(max_tokens));
  // Where the sample's ids part from the prompt's: a token merged across the boundary holds answer
  // text, so it counts as answer.
  const std::vector<int32_t> prompt = tokenizer.encode(p.text, /*add_special_tokens=*/true);
  const auto common = std::mismatch(prompt.begin(), prompt.end(), sample.ids.begin(), sample.ids.end());
  sample.answer_begin = static_cast<int64_t>(common.second - sample.ids.begin());
  return sample;
}

}  // namespace linear_ard::eval
