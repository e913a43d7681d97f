// eval_memory: the parts of each scorer's memory plan.
#include "linear_ard/eval/eval_memory.h"

#include <algorithm>
#include <numeric>

namespace linear_ard::eval {
namespace {

using model::MemoryPart;

// token_scores_compute projects at most this many positions to the vocabulary at once.
constexpr double kLogitsChunk = 1024;

double total(const std::vector<MemoryPart>& parts) {
  return std::accumulate(parts.begin(), parts.end(), 0.0, [](double s, const MemoryPart& p) { return s + p.bytes; });
}

}  // namespace

std::vector<MemoryPart> eval_memory_ppl(const EvalMemoryTarget& t, int64_t ctx, int64_t batch, bool kl) {
  const double tokens = static_cast<double>(batch) * static_cast<double>(ctx);
  const double positions =
      static_cast<double>(batch) * std::clamp<double>(static_cast<double>(ctx) - 1, 0, kLogitsChunk);
  return {{"forward of " + std::to_string(batch) + " x " + std::to_string(ctx) + " tokens",
           memory_forward_bytes(*t.config, tokens, t.dtype) * (kl ? 2 : 1)},
          {"fp32 logits of " + std::to_string(static_cast<int64_t>(positions)) + " positions",
           memory_logits_bytes(*t.config, positions) * (kl ? 2 : 1)}};
}

std::vector<MemoryPart> eval_memory_tasks(const EvalMemoryTarget& t, int64_t tokens, int64_t batch) {
  const double all = static_cast<double>(batch) * static_cast<double>(tokens);
  const double positions = static_cast<double>(batch) * std::min<double>(static_cast<double>(tokens), kLogitsChunk);
  return {{"forward of " + std::to_string(batch) + " x " + std::to_string(tokens) + " tokens",
           memory_forward_bytes(*t.config, all, t.dtype)},
          {"fp32 logits of " + std::to_string(static_cast<int64_t>(positions)) + " positions",
           memory_logits_bytes(*t.config, positions)}};
}

std::vector<MemoryPart> eval_memory_generate(const EvalMemoryTarget& t, int64_t length, int64_t new_tokens,
                                             int64_t prompts) {
  const double positions = static_cast<double>(length) + static_cast<double>(new_tokens);
  constexpr double kHostBytesPerToken = 8;
  return {{"KV cache of " + std::to_string(length + new_tokens) + " positions",
           memory_kv_cache_bytes(*t.config, positions, t.dtype, t.cpu)},
          {"prefill forward of " + std::to_string(length) + " tokens",
           memory_forward_bytes(*t.config, static_cast<double>(length), t.dtype)},
          {"fp32 logits", memory_logits_bytes(*t.config, 1)},
          {std::to_string(prompts) + " prompt texts",
           static_cast<double>(prompts) * static_cast<double>(length) * kHostBytesPerToken, /*host=*/true}};
}

std::vector<MemoryPart> eval_memory_largest(const std::vector<std::vector<MemoryPart>>& candidates) {
  std::vector<MemoryPart> best;
  for (const auto& c : candidates)
    if (best.empty() || total(c) > total(best)) best = c;
  return best;
}

}  // namespace linear_ard::eval
