// Perplexity over disjoint or strided windows, windows batched longest first.
#include "linear_ard/eval/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "linear_ard/eval/progress.h"     // defines: EvalProgress
#include "linear_ard/dist/distributed.h"  // defines: Distributed (items_gather)

namespace linear_ard::eval {

std::vector<std::string> text_documents_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open text file " + path);
  std::vector<std::string> docs;
  const bool jsonl = path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
  if (!jsonl) {
    std::stringstream s;
    s << in.rdbuf();
    docs.push_back(s.str());
    return docs;
  }
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
      throw std::invalid_argument(path + ":" + std::to_string(number) +
                                  ": expected a JSON object with a string \"text\"");
    docs.push_back(j["text"].get<std::string>());
  }
  return docs;
}

namespace {

struct Window {
  const std::vector<int32_t>* ids;
  int64_t begin, end;
  int64_t first_target;  // first token index scored (absolute)
};

}  // namespace

PerplexityResult perplexity_compute(const EvalModel& model, const std::vector<std::string>& documents,
                                    const PerplexityOptions& options) {
  if (options.ctx_len < 2) throw std::invalid_argument("ctx_len must be at least 2");
  const int64_t stride = options.stride > 0 ? options.stride : options.ctx_len;
  if (stride > options.ctx_len) throw std::invalid_argument("stride must not exceed ctx_len");
  const auto start = std::chrono::steady_clock::now();

  PerplexityResult r;
  r.ctx_len = options.ctx_len;
  r.stride = stride;
  std::vector<std::vector<int32_t>> encoded;
  encoded.reserve(documents.size());
  for (const auto& d : documents) {
    encoded.push_back(model.tokenizer->encode(d, options.add_special_tokens));
    r.bytes += static_cast<int64_t>(d.size());
  }
  r.documents = static_cast<int64_t>(documents.size());

  std::vector<Window> windows;
  for (const auto& ids : encoded) {
    const int64_t n = static_cast<int64_t>(ids.size());
    int64_t prev_end = 0;
    for (int64_t begin = 0; begin < n; begin += stride) {
      const int64_t end = std::min(begin + options.ctx_len, n);
      const int64_t first = std::max(prev_end, begin + 1);
      if (end > first) windows.push_back({&ids, begin, end, first});
      prev_end = end;
      if (end == n) break;
    }
  }
  std::stable_sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) {
    return a.end - a.begin > b.end - b.begin;
  });
  r.windows = static_cast<int64_t>(windows.size());
  if (!windows.empty()) eval_context_warn(model, windows.front().end - windows.front().begin, "perplexity windows");

  // Under torchrun window w is scored on rank w % world and the NLLs are gathered; every rank then
  // sums them in window order, as one process does.
  std::vector<size_t> mine;
  for (size_t w = 0; w < windows.size(); ++w)
    if (!model.distributed || model.distributed->item_owned(static_cast<int64_t>(w))) mine.push_back(w);
  std::vector<double> nll(mine.size());
  int64_t fed = 0;
  for (const Window& win : windows) fed += win.end - win.begin;
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
    const TokenScores scores = token_scores_compute(model, ids);
    for (size_t j = b0; j < b1; ++j) {
      const Window& win = windows[mine[j]];
      // Position p (relative) predicts token begin + p + 1.
      const int64_t from = win.first_target - win.begin - 1;
      const int64_t count = win.end - win.first_target;
      nll[j] = scores.logprob[static_cast<int64_t>(j - b0)].narrow(0, from, count).to(torch::kDouble).sum().item<double>();
    }
    progress.advance(static_cast<int64_t>(b1 - b0), "windows");
  }
  if (model.distributed) nll = model.distributed->items_gather(static_cast<int64_t>(windows.size()), 1, nll);
  for (size_t w = 0; w < windows.size(); ++w) {
    r.nll -= nll[w];
    r.tokens += windows[w].end - windows[w].first_target;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.tokens_per_s = r.seconds > 0 ? static_cast<double>(fed) / r.seconds : 0;
  r.ppl = r.tokens > 0 ? std::exp(r.nll / static_cast<double>(r.tokens)) : 0;
  if (!std::isfinite(r.ppl))  // a NaN/Inf logit, or an NLL past exp's range: never a number to report
    throw std::runtime_error("model " + model.path + ": perplexity at ctx " + std::to_string(options.ctx_len) +
                             " is not finite (summed NLL " + std::to_string(r.nll) + " over " +
                             std::to_string(r.tokens) + " tokens): " +
                             (std::isfinite(r.nll) ? "its exp overflows a double" : "the model computes NaN/Inf"));
  r.bits_per_byte = r.bytes > 0 ? r.nll / std::log(2.0) / static_cast<double>(r.bytes) : 0;
  return r;
}

}  // namespace linear_ard::eval
