// Loglikelihood requests as lm-evaluation-harness defines them: log p(continuation | context)
// summed over the continuation's tokens, and whether greedy decoding would produce it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"

namespace linear_ard::eval {

struct LoglikelihoodRequest {
  std::vector<int32_t> context;       // never empty (an empty context becomes BOS, else EOS)
  std::vector<int32_t> continuation;  // never empty
};

struct LoglikelihoodResult {
  double logprob = 0;   // sum over the continuation's tokens
  bool greedy = false;  // every continuation token is the argmax at its position
};

// lm-eval's HF-backend encoding of a (context, continuation) pair (TemplateLM._encode_pair,
// HFLM.tok_encode, v0.4.13): trailing whitespace of the context moves to the front of the
// continuation; the pair is encoded whole and the context alone, and the continuation is what the
// whole adds past the context's tokens (so merges across the boundary are the tokenizer's own).
// With `add_special_tokens` both are encoded with the tokenizer's special tokens (transformers'
// add_special_tokens=True: BOS exactly where its post-processor puts one), except a context that
// already starts with the prefix token's text; without, with none. An empty context becomes the
// prefix token (BOS, else EOS), or the continuation's first token when that is the prefix token.
// Throws std::invalid_argument when the continuation encodes to no token.
LoglikelihoodRequest loglikelihood_request_encode(const io::Tokenizer& tokenizer, std::string context,
                                                  std::string continuation, bool add_special_tokens);

struct LoglikelihoodStats {
  int64_t tokens = 0;   // tokens fed through the model
  double seconds = 0;
};

// Scores `requests` in batches of `batch_size`, longest first, right-padded. A request longer than
// max_length + 1 tokens keeps its last max_length + 1 (the harness's left truncation). A non-empty
// `progress` tag prints progress lines on stderr ("[tag] done/total ...").
std::vector<LoglikelihoodResult> loglikelihood_compute(const EvalModel& model,
                                                       const std::vector<LoglikelihoodRequest>& requests,
                                                       int64_t batch_size, int64_t max_length,
                                                       LoglikelihoodStats* stats = nullptr,
                                                       const std::string& progress = "");

}  // namespace linear_ard::eval
