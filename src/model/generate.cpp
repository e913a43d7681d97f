// Greedy generation: prefill the prompt into a KV cache, then feed back the argmax token; on CUDA
// the decode steps replay one captured CUDA graph over a fixed-capacity cache (decode_graph.h).
#include "linear_ard/model/generate.h"

#include <chrono>

#include "decode_graph.h"
#include "linear_ard/model/llama_model.h"
#include "linear_ard/model/model_family.h"  // defines: model_family_of

namespace linear_ard::model {
namespace {

// The greedy choice from last-position logits [B, 1, vocab]: the argmax, the pad token for rows
// already finished; marks rows that chose an EOS (in place, so a captured step updates `finished`).
torch::Tensor greedy_next(const torch::Tensor& logits, const torch::Tensor& eos, torch::Tensor& finished,
                          int64_t pad_token_id) {
  auto next = logits.select(1, 0).argmax(-1);
  next = torch::where(finished, torch::full_like(next, pad_token_id), next);
  if (eos.numel() > 0) finished.logical_or_(torch::isin(next, eos));
  return next.unsqueeze(1);
}

// Adds the time since `start` (and restarts it) to the prefill or decode share of `stats`.
void stats_add(GenerateStats* stats, bool prefill, int64_t tokens, std::chrono::steady_clock::time_point& start) {
  if (!stats) return;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - start).count();
  (prefill ? stats->prefill_seconds : stats->decode_seconds) += seconds;
  (prefill ? stats->prefill_tokens : stats->decode_tokens) += tokens;
  start = now;
}

// The cache length at which a decode step reruns the whole sequence instead: Phi3ForCausalLM's
// prepare_inputs_for_generation drops a cache of original_max_position_embeddings tokens (filled
// with longrope's short factors) when the next one arrives, so every key is recomputed with the
// long factors. nullopt for other families and RoPEs.
std::optional<int64_t> rerun_length(const ModelConfig& config, const RopeTables& rope) {
  if (!model_family_of(config).longrope_rerun || rope.rope.type != RopeType::kLongrope) return std::nullopt;
  return rope_original_max_positions(rope.config, rope.rope);
}

}  // namespace

torch::Tensor model_generate_greedy(const LlamaWeights& weights, const RopeTables& rope,
                                    const Overrides& overrides, const torch::Tensor& prompt,
                                    const GenerateOptions& options, GenerateStats* stats) {
  torch::NoGradGuard no_grad;
  if (options.max_new_tokens <= 0) return prompt;
  KvCache cache = kv_cache_init(weights.config.num_hidden_layers);
  ForwardOptions forward;
  forward.cache = &cache;
  forward.logits_last_only = true;
  const auto eos = torch::tensor(options.eos_token_ids, prompt.options());
  auto finished = torch::zeros({prompt.size(0)}, prompt.options().dtype(torch::kBool));

  auto start = std::chrono::steady_clock::now();
  auto input = greedy_next(model_forward(weights, rope, overrides, prompt, forward).logits, eos, finished,
                           options.pad_token_id);
  std::vector<torch::Tensor> pieces{prompt, input.clone()};
  bool done = finished.all().item<bool>();  // the host sync that ends a step
  stats_add(stats, true, prompt.numel(), start);

  const int64_t steps = options.max_new_tokens - 1;
  if (!done && steps > 0 && decode_graph_supported(weights.config, rope, prompt))
    cache = kv_cache_fixed(cache, prompt.size(1) + steps, rope);
  // One decode step: `input` in, the chosen tokens back into it.
  const std::optional<int64_t> rerun_at = rerun_length(weights.config, rope);
  auto step = [&] {
    const bool rerun = rerun_at && kv_cache_length(cache) == *rerun_at;
    if (rerun) cache = kv_cache_init(weights.config.num_hidden_layers);
    const torch::Tensor in = rerun ? torch::cat(pieces, 1) : input;
    input.copy_(greedy_next(model_forward(weights, rope, overrides, in, forward).logits, eos, finished,
                            options.pad_token_id));
    if (cache.fixed) cache.fixed->position.add_(1);
  };
  DecodeGraph graph(prompt.device(), step);
  for (int64_t t = 0; t < steps && !done; ++t) {
    cache.fixed ? graph.run() : step();
    pieces.push_back(input.clone());
    done = finished.all().item<bool>();
    stats_add(stats, false, input.numel(), start);
  }
  return torch::cat(pieces, 1);
}

}  // namespace linear_ard::model
