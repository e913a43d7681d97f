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

// The harness's encoding of a (context, continuation) pair: trailing whitespace of the context
// moves to the front of the continuation; the pair is encoded whole and the context alone, and the
// continuation is what the whole adds past the context's tokens (so merges across the boundary are
// the tokenizer's own). With `add_special_tokens` the tokenizer's BOS starts the context. Throws
// std::invalid_argument when the continuation encodes to no token.
LoglikelihoodRequest loglikelihood_request_encode(const io::Tokenizer& tokenizer, std::string context,
                                                  std::string continuation, bool add_special_tokens);

struct LoglikelihoodStats {
  int64_t tokens = 0;   // tokens fed through the model
  double seconds = 0;
};

// Scores `requests` in batches of `batch_size`, longest first, right-padded. A request longer than
// max_length + 1 tokens keeps its last max_length + 1 (the harness's left truncation).
std::vector<LoglikelihoodResult> loglikelihood_compute(const EvalModel& model,
                                                       const std::vector<LoglikelihoodRequest>& requests,
                                                       int64_t batch_size, int64_t max_length,
                                                       LoglikelihoodStats* stats = nullptr);

}  // namespace linear_ard::eval
