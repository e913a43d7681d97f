// Loglikelihood requests: harness-compatible encoding and batched scoring.
#include "linear_ard/eval/loglikelihood.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>

namespace linear_ard::eval {

LoglikelihoodRequest loglikelihood_request_encode(const io::Tokenizer& tokenizer, std::string context,
                                                  std::string continuation, bool add_special_tokens) {
  const size_t kept = context.find_last_not_of(" \t\n\r\f\v");
  const size_t cut = kept == std::string::npos ? 0 : kept + 1;
  continuation = context.substr(cut) + continuation;
  context.resize(cut);

  LoglikelihoodRequest r;
  if (context.empty()) {
    const int32_t prefix = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : tokenizer.eos_id();
    if (prefix < 0) throw std::invalid_argument("empty context and the tokenizer has neither BOS nor EOS");
    r.context = {prefix};
    r.continuation = tokenizer.encode(continuation, /*add_special_tokens=*/false);
  } else {
    const auto whole = tokenizer.encode(context + continuation, add_special_tokens);
    r.context = tokenizer.encode(context, add_special_tokens);
    if (whole.size() > r.context.size())
      r.continuation.assign(whole.begin() + static_cast<std::ptrdiff_t>(r.context.size()), whole.end());
  }
  if (r.continuation.empty())
    throw std::invalid_argument("continuation '" + continuation + "' encodes to no token");
  return r;
}

std::vector<LoglikelihoodResult> loglikelihood_compute(const EvalModel& model,
                                                       const std::vector<LoglikelihoodRequest>& requests,
                                                       int64_t batch_size, int64_t max_length,
                                                       LoglikelihoodStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  // Model input of each request: (context + continuation)[-(max_length + 1):][:-1].
  std::vector<std::vector<int32_t>> inputs(requests.size());
  std::vector<int64_t> cont_len(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    std::vector<int32_t> full = requests[i].context;
    full.insert(full.end(), requests[i].continuation.begin(), requests[i].continuation.end());
    const size_t keep = std::min(full.size(), static_cast<size_t>(max_length + 1));
    inputs[i].assign(full.end() - static_cast<std::ptrdiff_t>(keep), full.end() - 1);
    cont_len[i] = std::min<int64_t>(requests[i].continuation.size(), inputs[i].size());
  }
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return inputs[a].size() > inputs[b].size(); });

  std::vector<LoglikelihoodResult> results(requests.size());
  int64_t tokens = 0;
  for (size_t b0 = 0; b0 < order.size(); b0 += static_cast<size_t>(batch_size)) {
    const size_t b1 = std::min(order.size(), b0 + static_cast<size_t>(batch_size));
    // Rows get one extra slot holding the last continuation token, so token_scores sees every
    // target; the longest row of the batch sets the width (sorted, so it is the first).
    const int64_t width = static_cast<int64_t>(inputs[order[b0]].size()) + 1;
    auto ids = torch::zeros({static_cast<int64_t>(b1 - b0), width}, torch::kLong);
    auto acc = ids.accessor<int64_t, 2>();
    for (size_t r = b0; r < b1; ++r) {
      const auto& in = inputs[order[r]];
      for (size_t t = 0; t < in.size(); ++t) acc[r - b0][t] = in[t];
      acc[r - b0][in.size()] = requests[order[r]].continuation.back();
      tokens += static_cast<int64_t>(in.size());
    }
    const TokenScores scores = token_scores_compute(model, ids);
    for (size_t r = b0; r < b1; ++r) {
      const size_t i = order[r];
      const int64_t n = static_cast<int64_t>(inputs[i].size());
      // Input position t predicts slot t + 1; the continuation fills the last cont_len slots.
      auto lp = scores.logprob[static_cast<int64_t>(r - b0)].narrow(0, n - cont_len[i], cont_len[i]);
      auto gr = scores.greedy[static_cast<int64_t>(r - b0)].narrow(0, n - cont_len[i], cont_len[i]);
      results[i].logprob = lp.sum().item<double>();
      results[i].greedy = gr.all().item<bool>();
    }
  }
  if (stats) {
    stats->tokens += tokens;
    stats->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return results;
}

}  // namespace linear_ard::eval
