// Greedy generation: prefill the prompt into a KV cache, then feed back the argmax token.
#include "linear_ard/model/generate.h"

#include <chrono>

#include "linear_ard/model/llama_model.h"

namespace linear_ard::model {

torch::Tensor model_generate_greedy(const LlamaWeights& weights, const RopeTables& rope,
                                    const Overrides& overrides, const torch::Tensor& prompt,
                                    const GenerateOptions& options, GenerateStats* stats) {
  torch::NoGradGuard no_grad;
  KvCache cache = kv_cache_init(weights.config.num_hidden_layers);
  ForwardOptions step;
  step.cache = &cache;
  step.logits_last_only = true;

  auto eos = torch::tensor(options.eos_token_ids, prompt.options());
  auto finished = torch::zeros({prompt.size(0)}, prompt.options().dtype(torch::kBool));
  std::vector<torch::Tensor> pieces{prompt};
  torch::Tensor input = prompt;
  auto start = std::chrono::steady_clock::now();
  for (int64_t t = 0; t < options.max_new_tokens; ++t) {
    auto logits = model_forward(weights, rope, overrides, input, step).logits;
    auto next = logits.select(1, 0).argmax(-1);
    next = torch::where(finished, torch::full_like(next, options.pad_token_id), next);
    pieces.push_back(next.unsqueeze(1));
    if (eos.numel() > 0) finished = finished.logical_or(torch::isin(next, eos));
    const bool done = finished.all().item<bool>();  // the host sync that ends the step
    if (stats) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - start).count();
      (t == 0 ? stats->prefill_seconds : stats->decode_seconds) += seconds;
      (t == 0 ? stats->prefill_tokens : stats->decode_tokens) += input.numel();
      start = now;
    }
    if (done) break;
    input = next.unsqueeze(1);
  }
  return torch::cat(pieces, 1);
}

}  // namespace linear_ard::model
