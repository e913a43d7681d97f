// Perplexity over disjoint or strided windows, windows batched longest first.
#include "linear_ard/eval/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <stdexcept>

#include "linear_ard/eval/progress.h"     // defines: EvalProgress
#include "linear_ard/dist/distributed.h"  // defines: Distributed (items_gather)

namespace linear_ard::eval {

PerplexityText perplexity_text_encode(const io::Tokenizer& tokenizer, const std::vector<std::string>& documents,
                                      bool add_special_tokens, std::string name) {
  PerplexityText text;
  text.name = std::move(name);
  text.ids.reserve(documents.size());
  for (const auto& d : documents) {
    text.ids.push_back(tokenizer.encode(d, add_special_tokens));
    text.bytes += static_cast<int64_t>(d.size());
  }
  return text;
}

void perplexity_text_check(const EvalModel& model, const PerplexityText& text, const std::vector<int64_t>& ctx_lens) {
  int64_t tokens = 0, longest = 0;
  for (const auto& ids : text.ids) {
    tokens += static_cast<int64_t>(ids.size());
    longest = std::max(longest, static_cast<int64_t>(ids.size()));
  }
  const std::string counts = std::to_string(text.ids.size()) + " document(s) give " + std::to_string(tokens) +
                             " token(s) after tokenization";
  if (longest < 2)
    throw std::invalid_argument(text.name + ": no token to score: " + counts + ", and a window needs 2 in one document");
  for (const int64_t ctx : ctx_lens) {
    if (tokens < ctx)
      throw std::invalid_argument(text.name + ": " + counts + ", fewer than one window of ctx " + std::to_string(ctx) +
                                  "; give more text or a smaller --ctx");
    if (longest < ctx && (!model.distributed || model.distributed->is_main()))
      std::cerr << "linear-ard: warning: " << text.name << ": no document fills a window of ctx " << ctx
                << " (the longest has " << longest << " tokens): its perplexity is that of shorter contexts" << std::endl;
  }
}

namespace {

struct Window {
  const std::vector<int32_t>* ids;
  int64_t begin, end;
  int64_t first_target;  // first token index scored (absolute)
};

// The windows of `text`, each scoring the tokens no earlier window of its document scored, longest
// first (stable: document order within a length).
std::vector<Window> windows_make(const PerplexityText& text, int64_t ctx_len, int64_t stride) {
  std::vector<Window> windows;
  for (const auto& ids : text.ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    int64_t prev_end = 0;
    for (int64_t begin = 0; begin < n; begin += stride) {
      const int64_t end = std::min(begin + ctx_len, n);
      const int64_t first = std::max(prev_end, begin + 1);
      if (end > first) windows.push_back({&ids, begin, end, first});
      prev_end = end;
      if (end == n) break;
    }
  }
  std::stable_sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) {
    return a.end - a.begin > b.end - b.begin;
  });
  return windows;
}

// The summed NLL (and KL to options.kl_reference) of the scored tokens of each window of `mine`
// (indices into `windows`), in batches of options.batch_size windows.
struct WindowSums {
  std::vector<double> nll, kl;
};
WindowSums windows_score(const EvalModel& model, const std::vector<Window>& windows, const std::vector<size_t>& mine,
                         const PerplexityOptions& options) {
  WindowSums sums{std::vector<double>(mine.size()), std::vector<double>(options.kl_reference ? mine.size() : 0)};
  const auto batch = static_cast<size_t>(std::max<int64_t>(1, options.batch_size));
  EvalProgress progress("ppl@" + std::to_string(options.ctx_len), static_cast<int64_t>(mine.size()), options.progress);
  for (size_t b0 = 0; b0 < mine.size(); b0 += batch) {
    const size_t b1 = std::min(mine.size(), b0 + batch);
    const int64_t width = windows[mine[b0]].end - windows[mine[b0]].begin;
    auto ids = torch::zeros({static_cast<int64_t>(b1 - b0), width}, torch::kLong);
    auto acc = ids.accessor<int64_t, 2>();
    for (size_t j = b0; j < b1; ++j) {
      const Window& win = windows[mine[j]];
      for (int64_t t = win.begin; t < win.end; ++t) acc[j - b0][t - win.begin] = (*win.ids)[t];
    }
    const TokenScores scores = token_scores_compute(model, ids, options.kl_reference);
    for (size_t j = b0; j < b1; ++j) {
      const Window& win = windows[mine[j]];
      // Position p (relative) predicts token begin + p + 1.
      const int64_t from = win.first_target - win.begin - 1;
      const int64_t count = win.end - win.first_target;
      const auto row = static_cast<int64_t>(j - b0);
      sums.nll[j] = scores.logprob[row].narrow(0, from, count).to(torch::kDouble).sum().item<double>();
      if (options.kl_reference) sums.kl[j] = scores.kl[row].narrow(0, from, count).to(torch::kDouble).sum().item<double>();
    }
    progress.advance(static_cast<int64_t>(b1 - b0), "windows");
  }
  return sums;
}

// r.ppl, bits per byte and KL from the sums in r (nll, tokens) and `kl_sum`; a result that is not
// finite is an error naming the model.
void result_finish(const EvalModel& model, const PerplexityOptions& options, double kl_sum, PerplexityResult& r) {
  r.ppl = std::exp(r.nll / static_cast<double>(r.tokens));  // tokens > 0: a window scores at least one
  if (!std::isfinite(r.ppl))  // a NaN/Inf logit, or an NLL past exp's range: never a number to report
    throw std::runtime_error("model " + model.path + ": perplexity at ctx " + std::to_string(options.ctx_len) +
                             " is not finite (summed NLL " + std::to_string(r.nll) + " over " +
                             std::to_string(r.tokens) + " tokens): " +
                             (std::isfinite(r.nll) ? "its exp overflows a double" : "the model computes NaN/Inf"));
  r.bits_per_byte = r.bytes > 0 ? r.nll / std::log(2.0) / static_cast<double>(r.bytes) : 0;
  if (options.kl_reference) {
    r.kl = kl_sum / static_cast<double>(r.tokens);
    if (!std::isfinite(*r.kl))
      throw std::runtime_error("model " + model.path + ": KL to " + options.kl_reference->path + " at ctx " +
                               std::to_string(options.ctx_len) + " is not finite: one of them computes NaN/Inf");
  }
}

}  // namespace

PerplexityResult perplexity_compute(const EvalModel& model, const PerplexityText& text, const PerplexityOptions& options) {
  if (options.ctx_len < 2) throw std::invalid_argument("ctx_len must be at least 2");
  const int64_t stride = options.stride > 0 ? options.stride : options.ctx_len;
  if (stride > options.ctx_len) throw std::invalid_argument("stride must not exceed ctx_len");
  const auto start = std::chrono::steady_clock::now();

  PerplexityResult r;
  r.ctx_len = options.ctx_len;
  r.stride = stride;
  r.bytes = text.bytes;
  r.documents = static_cast<int64_t>(text.ids.size());
  const std::vector<Window> windows = windows_make(text, options.ctx_len, stride);
  r.windows = static_cast<int64_t>(windows.size());
  if (windows.empty()) perplexity_text_check(model, text, {});
  eval_context_warn(model, windows.front().end - windows.front().begin, "perplexity windows");

  // Under torchrun window w is scored on rank w % world and the NLLs are gathered; every rank then
  // sums them in window order, as one process does.
  std::vector<size_t> mine;
  for (size_t w = 0; w < windows.size(); ++w)
    if (!model.distributed || model.distributed->item_owned(static_cast<int64_t>(w))) mine.push_back(w);
  int64_t fed = 0;
  for (const Window& win : windows) fed += win.end - win.begin;
  WindowSums sums = windows_score(model, windows, mine, options);
  if (model.distributed) {
    sums.nll = model.distributed->items_gather(static_cast<int64_t>(windows.size()), 1, sums.nll);
    if (options.kl_reference) sums.kl = model.distributed->items_gather(static_cast<int64_t>(windows.size()), 1, sums.kl);
  }
  double kl_sum = 0;
  for (size_t w = 0; w < windows.size(); ++w) {
    r.nll -= sums.nll[w];
    r.tokens += windows[w].end - windows[w].first_target;
    if (options.kl_reference) kl_sum += sums.kl[w];
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.tokens_per_s = r.seconds > 0 ? static_cast<double>(fed) / r.seconds : 0;
  result_finish(model, options, kl_sum, r);
  return r;
}

}  // namespace linear_ard::eval
