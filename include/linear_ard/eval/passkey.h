// Passkey retrieval (Mohtashami & Jaggi's prompt, as LongLoRA and the context-extension papers use
// it): a number hidden at a chosen depth of repeated filler text, read back with greedy decoding.
//
// The answer lead: every common tokenizer (SentencePiece LLaMA/Mistral, byte-level BPE LLaMA 3,
// Qwen2, SmolLM2) writes " 25248" as a bare-space token and then the digits, so the reference
// prompt, which ends at "The pass key is", makes the model's first greedy choice "start a number
// (the space) or go on with a word (' the', ' a')" rather than "which number". A small model can
// hold the key (every digit ranked first once the space is given) and still lose that choice: on
// SmolLM2-135M the untrained YaRN x4 model does at 4K (docs/eval.md, "Passkey"). By default the
// prompt therefore ends with those key-independent tokens, so the score measures retrieval.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"

namespace linear_ard::eval {

struct PasskeyPrompt {
  std::string text;
  std::string passkey;     // the decimal number to retrieve
  int64_t tokens = 0;      // prompt length in tokens fed to the model (BOS and answer lead included)
  double depth = 0;        // fraction of the filler before the passkey line
  // The answer lead's ids, fed after the encoded text: the answer's first tokens that decode to
  // whitespace only (the bare space before the digits); empty without the lead, or where the
  // tokenizer merges the space into the key's first token.
  std::vector<int32_t> answer_lead;
};

// A prompt of about `target_tokens` tokens (never more, answer lead included) for `tokenizer`,
// passkey drawn from [1, 50000] with `seed`, placed after `depth` (0..1) of the filler; with
// `answer_lead`, the prompt ends with the answer's key-independent tokens (see above).
// Deterministic for a seed.
PasskeyPrompt passkey_prompt_make(const io::Tokenizer& tokenizer, int64_t target_tokens, double depth,
                                  uint64_t seed, bool answer_lead = true);

// The ids a prompt feeds the model: its encoded text (with BOS), then its answer lead.
std::vector<int32_t> passkey_prompt_ids(const io::Tokenizer& tokenizer, const PasskeyPrompt& prompt);

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
  bool answer_lead = true;  // end each prompt with the answer lead; false: the reference prompt
  bool progress = false;    // progress lines on stderr
};

struct PasskeyResult {
  std::vector<PasskeyRow> rows;
  bool answer_lead = true;  // PasskeyOptions::answer_lead of the run
  double tokens_per_s = 0;  // prompt + generated tokens per second
};

PasskeyResult passkey_evaluate(const EvalModel& model, const PasskeyOptions& options);

}  // namespace linear_ard::eval
