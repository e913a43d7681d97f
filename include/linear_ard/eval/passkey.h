// Passkey retrieval (Mohtashami & Jaggi's prompt, as LongLoRA and the context-extension papers use
// it): a number hidden at a chosen depth of repeated filler text, read back with greedy decoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"

namespace linear_ard::eval {

struct PasskeyPrompt {
  std::string text;
  std::string passkey;     // the decimal number to retrieve
  int64_t tokens = 0;      // prompt length in tokens (with BOS)
  double depth = 0;        // fraction of the filler before the passkey line
};

// A prompt of about `target_tokens` tokens (never more) for `tokenizer`, passkey drawn from
// [1, 50000] with `seed`, placed after `depth` (0..1) of the filler. Deterministic for a seed.
PasskeyPrompt passkey_prompt_make(const io::Tokenizer& tokenizer, int64_t target_tokens, double depth,
                                  uint64_t seed);

// 1 when the first run of digits in `generated` is the passkey, else 0.
double passkey_score(const std::string& generated, const std::string& passkey);

struct PasskeyRow {
  int64_t length = 0;       // requested length
  double depth = 0;
  int64_t samples = 0;
  double accuracy = 0;
  std::vector<PasskeyPrompt> prompts;
  std::vector<std::string> outputs;  // generated text of each sample
  std::vector<std::vector<int32_t>> output_ids;  // its token ids (EOS and padding included)
};

struct PasskeyOptions {
  std::vector<int64_t> lengths;
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t samples = 1;  // per length and depth
  uint64_t seed = 0;
  int64_t max_new_tokens = 10;
  bool progress = false;  // progress lines on stderr
};

struct PasskeyResult {
  std::vector<PasskeyRow> rows;
  double tokens_per_s = 0;  // prompt + generated tokens per second
};

PasskeyResult passkey_evaluate(const EvalModel& model, const PasskeyOptions& options);

}  // namespace linear_ard::eval
