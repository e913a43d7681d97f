// Loglikelihood requests: harness-compatible encoding and batched scoring.
#include "linear_ard/eval/loglikelihood.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>

#include "linear_ard/dist/distributed.h"  // defines: Distributed (items_gather)
#include "linear_ard/eval/progress.h"     // defines: EvalProgress

namespace linear_ard::eval {

LoglikelihoodRequest loglikelihood_request_encode(const io::Tokenizer& tokenizer, std::string context,
                                                  std::string continuation, bool add_special_tokens) {
  const int32_t prefix = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : tokenizer.eos_id();
  LoglikelihoodRequest r;
  if (context.empty()) {
    if (prefix < 0) throw std::invalid_argument("empty context and the tokenizer has neither BOS nor EOS");
    r.context = {prefix};
    r.continuation = tokenizer.encode(continuation, /*add_special_tokens=*/false);
    // A continuation that starts with the prefix token gives it to the context, as lm-eval does.
    if (!r.continuation.empty() && r.continuation.front() == prefix) r.continuation.erase(r.continuation.begin());
  } else {
    const size_t kept = context.find_last_not_of(" \t\n\r\f\v");
    const size_t cut = kept == std::string::npos ? 0 : kept + 1;
    continuation = context.substr(cut) + continuation;
    context.resize(cut);
    // A context that already starts with the prefix token's text gets no second one.
    bool special = add_special_tokens;
    if (special && prefix >= 0) {
      const std::string prefix_text = tokenizer.decode({prefix});
      if (!prefix_text.empty() && context.rfind(prefix_text, 0) == 0) special = false;
    }
    const auto whole = tokenizer.encode(context + continuation, special);
    r.context = tokenizer.encode(context, special);
    if (whole.size() > r.context.size())
      r.continuation.assign(whole.begin() + static_cast<std::ptrdiff_t>(r.context.size()), whole.end());
  }
  if (r.continuation.empty())
    throw std::invalid_argument("continuation '" + continuation + "' encodes to no token");
  if (r.context.empty())
    throw std::invalid_argument("context '" + context + "' encodes to no token (whitespace only?)");
  return r;
}

std::vector<LoglikelihoodResult> loglikelihood_compute(const EvalModel& model,
                                                       const std::vector<LoglikelihoodRequest>& requests,
                                                       int64_t batch_size, int64_t max_length,
                                                       LoglikelihoodStats* stats, const std::string& progress) {
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

  // Under torchrun the request at sorted position p is scored on rank p % world (neighbours in
  // length land on every rank alike) and the scores are gathered.
  const dist::Distributed* dist = model.distributed;
  std::vector<size_t> all_order;
  if (dist) {
    all_order = order;
    order.clear();
    for (size_t p = 0; p < all_order.size(); ++p)
      if (dist->item_owned(static_cast<int64_t>(p))) order.push_back(all_order[p]);
  }
  std::vector<LoglikelihoodResult> results(requests.size());
  int64_t tokens = 0;
  EvalProgress shown(progress, static_cast<int64_t>(order.size()), !progress.empty());
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
    shown.advance(static_cast<int64_t>(b1 - b0), "requests");
  }
  if (dist) {
    std::vector<double> local;
    for (size_t i : order) local.insert(local.end(), {results[i].logprob, results[i].greedy ? 1.0 : 0.0});
    const std::vector<double> all = dist->items_gather(static_cast<int64_t>(all_order.size()), 2, local);
    tokens = 0;
    for (size_t p = 0; p < all_order.size(); ++p) {
      results[all_order[p]] = {all[2 * p], all[2 * p + 1] != 0};
      tokens += static_cast<int64_t>(inputs[all_order[p]].size());
    }
  }
  if (stats) {
    stats->tokens += tokens;
    stats->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return results;
}

}  // namespace linear_ard::eval
