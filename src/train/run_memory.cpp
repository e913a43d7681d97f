// run_memory: a training run's memory plan.
#include "run_memory.h"

#include <algorithm>
#include <numeric>

#include "linear_ard/model/lm_head_loss.h"    // defines: lm_head_chunk_rows
#include "linear_ard/train/trainable_set.h"  // defines: trainable_parameters_planned

namespace linear_ard::train {
namespace {

using model::MemoryPart;

double plan_total(const model::MemoryPlan& plan) {
  return std::accumulate(plan.parts.begin(), plan.parts.end(), 0.0,
                         [](double s, const MemoryPart& p) { return s + p.bytes; });
}

// The LM loss's logits: the head runs in chunks (model/lm_head_loss.h), so one chunk's logits in the
// model dtype with their fp32 log-softmax and gradient, and the fp32 per-token losses; the logit-KL
// objective holds every position's logits (teacher's and student's) at once.
MemoryPart lm_logits(const model::ModelConfig& m, double size, double tokens, bool all_positions) {
  const auto vocab = static_cast<double>(m.vocab_size);
  if (all_positions) return {"LM logits (every position)", tokens * vocab * (size + 12)};
  const auto rows = static_cast<double>(model::lm_head_chunk_rows(static_cast<int64_t>(tokens), m.vocab_size));
  return {"LM loss (the head in chunks)", rows * vocab * (size + 12) + tokens * 4};
}

// One stage's activations: what backward keeps over `layers` layers (the input of each layer that
// checkpoint_layers recomputes and one of them recomputed, every activation of the others), the LM
// loss's logits (lm_logits) and the teacher's forward without gradients.
std::vector<MemoryPart> stage_activations(const RestoreConfig& c, const model::ModelConfig& m, torch::ScalarType dtype,
                                          double tokens, double layers, bool lm, bool teacher) {
  const auto size = static_cast<double>(c10::elementSize(dtype));
  std::vector<MemoryPart> parts;
  const double recomputed = std::min(layers, static_cast<double>(c.checkpoint_layers));
  const double kept = tokens * recomputed * static_cast<double>(m.hidden_size) * size +
                      model::memory_backward_bytes(m, tokens, layers - recomputed + (recomputed > 0 ? 1 : 0), dtype);
  parts.push_back({"activations kept for backward (" + std::to_string(static_cast<int64_t>(layers)) + " layers)", kept});
  if (lm) parts.push_back(lm_logits(m, size, tokens, teacher && c.objective.logit_kl > 0));
  if (teacher) parts.push_back({"teacher forward", model::memory_forward_bytes(m, tokens, dtype)});
  return parts;
}

// The validation's passkey at `length` tokens between training steps: the run's weights and
// optimizer state (`fixed`), the KV cache of the prompt and the answer's tokens, the prompt's
// forward and the last position's fp32 logits.
model::MemoryPlan validation_passkey(const model::ModelConfig& m, torch::ScalarType dtype, std::vector<MemoryPart> fixed,
                                     int64_t length, bool cpu) {
  constexpr int64_t kAnswerTokens = 32;
  const auto n = static_cast<double>(length);
  model::MemoryPlan plan{"validation, passkey at " + std::to_string(length), std::move(fixed)};
  plan.parts.push_back({"KV cache of " + std::to_string(length + kAnswerTokens) + " positions",
                        model::memory_kv_cache_bytes(m, n + kAnswerTokens, dtype, cpu)});
  plan.parts.push_back({"prompt forward", model::memory_forward_bytes(m, n, dtype) + 4.0 * static_cast<double>(m.vocab_size)});
  return plan;
}

}  // namespace

model::MemoryPlan run_memory_plan(const RestoreConfig& c, const model::ModelConfig& m, torch::ScalarType dtype,
                                  int64_t last_trainable_layer, const std::string& name,
                                  const std::vector<int64_t>& passkey_lengths, bool cpu) {
  const double trainable = trainable_parameters_planned(c.trainable, c.lora, m, last_trainable_layer);
  const auto size = static_cast<double>(c10::elementSize(dtype));
  std::vector<MemoryPart> fixed{{"weights", model::memory_weights_bytes(m, dtype)},
                                {"trainables' fp32 masters, gradients and AdamW moments", 16 * trainable}};
  if (!trainable_is_lora(c.trainable)) fixed.push_back({"trainables in the model dtype", trainable * size});
  const bool pretrain = c.pretrain.enabled();
  const bool lm1 = pretrain || c.method == Method::kCpt || c.objective.logit_kl > 0;
  const double all_layers = static_cast<double>(m.num_hidden_layers);
  struct Stage {
    int64_t number, ctx, batch;
    bool lm;
  };
  // Before lengths_check resolves them (pretrain plans before drawing its weights), 0 means the
  // model's max_position_embeddings.
  const auto ctx = [&](int64_t n) { return n > 0 ? n : m.max_position_embeddings; };
  std::vector<Stage> stages{{1, ctx(c.ctx_len), c.batch_size, lm1}};
  if (c.stage2.steps > 0) stages.push_back({2, ctx(c.stage2.ctx_len), c.stage2.batch_size, true});
  model::MemoryPlan best;
  for (const Stage& s : stages) {
    const double tokens = static_cast<double>(s.ctx) * static_cast<double>(s.batch);
    const double layers = s.lm ? all_layers : static_cast<double>(last_trainable_layer + 1);
    model::MemoryPlan plan{name + " stage " + std::to_string(s.number) + " at ctx " + std::to_string(s.ctx) +
                               " x batch " + std::to_string(s.batch),
                           fixed};
    for (MemoryPart& p : stage_activations(c, m, dtype, tokens, layers, s.lm, !pretrain && s.number == 1))
      plan.parts.push_back(std::move(p));
    if (best.parts.empty() || plan_total(plan) > plan_total(best)) best = std::move(plan);
  }
  if (!passkey_lengths.empty()) {
    const int64_t longest = *std::max_element(passkey_lengths.begin(), passkey_lengths.end());
    model::MemoryPlan plan = validation_passkey(m, dtype, fixed, longest, cpu);
    plan.what = name + " " + plan.what;
    if (plan_total(plan) > plan_total(best)) best = std::move(plan);
  }
  return best;
}

}  // namespace linear_ard::train
