// lm_requests: lm-evaluation-harness's three request types (loglikelihood, loglikelihood_rolling,
// generate_until) answered by this project's model engine, the way lm-eval's HF backend answers them
// (v0.4.13, HFLM): the engine behind the `linear-ard` lm-eval model (python/linear_ard/lm_eval_model.py)
// and `linear-ard eval requests`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/eval/eval_model.h"

namespace linear_ard::eval {

struct LmRequestOptions {
  int64_t batch_size = 1;
  int64_t max_length = 0;           // 0: the model's max_position_embeddings (HFLM.max_length)
  int64_t max_gen_toks = 256;       // HFLM's default for generate_until without max_gen_toks
  bool add_special_tokens = true;   // false: lm-eval's add_bos_token=False
  bool progress = false;            // progress lines on stderr
};

// Answers `requests`, each one of
//   {"type": "loglikelihood", "context": str, "continuation": str}  -> {"logprob": x, "greedy": bool}
//   {"type": "loglikelihood_rolling", "text": str}                   -> {"logprob": x}
//   {"type": "generate_until", "context": str, "until": [str] | str, "max_gen_toks": n}  -> {"text": str}
// in the same order. loglikelihood encodes as loglikelihood_request_encode; loglikelihood_rolling
// cuts the text's tokens into lm-eval's disjoint rolling windows of max_length (the first one
// conditioned on the prefix token: BOS, else EOS) and sums their loglikelihoods;
// generate_until decodes greedily from the context (left-truncated to max_length - max_gen_toks)
// until EOS or max_gen_toks tokens, and cuts the text at the first of each `until` string (EOS's
// text included). Throws std::invalid_argument naming the request's index and key for a
// malformed request.
nlohmann::json lm_requests_answer(const EvalModel& model, const nlohmann::json& requests, const LmRequestOptions& options);

// lm-eval's rolling windows (utils.get_rolling_token_windows with context_len 1, then
// make_disjoint_window): (context, continuation) token pairs covering every token of `tokens`
// once, each at most max_length + 1 tokens long together.
std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> rolling_windows(const std::vector<int32_t>& tokens,
                                                                                  int32_t prefix, int64_t max_length);

}  // namespace linear_ard::eval
