// Loading a model folder for evaluation, and the shared scoring forward.
#include "linear_ard/eval/eval_model.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "linear_ard/io/hf_folder.h"      // defines: hf_folder_load, hf_folder_weights_check, hf_folder_tokenizer_check
#include "linear_ard/io/model_path.h"     // defines: model_path_resolve
#include "linear_ard/model/device_choice.h"  // defines: device_choice_resolve
#include "linear_ard/model/llama_model.h"  // defines: model_forward
#include "linear_ard/model/memory_fit.h"   // defines: memory_plan_check, memory_weights_bytes
#include "linear_ard/dist/distributed.h"  // defines: distributed_process
#include "linear_ard/model/weights_place.h"  // defines: weights_place

namespace linear_ard::eval {

EvalModel eval_model_load(const std::string& path, const std::string& device, const std::string& dtype,
                          const EvalMemoryUse& use) {
  const model::DeviceChoice choice = model::device_choice_resolve(device, dtype);
  EvalModel m;
  m.path = path;
  m.device_name = choice.device_name;
  m.dtype_name = choice.dtype_name;
  m.device = choice.device;
  m.dtype = choice.dtype;
  m.distributed = dist::distributed_process(choice.device);
  if (m.distributed) m.device = m.distributed->device();

  // Everything is checked before anything is allocated: the weights' headers against config.json,
  // the tokenizer against the embedding, the parameters against the device's free memory; the
  // placed weights are then checked finite.
  const std::string folder_path = io::model_path_resolve(path);
  io::HfFolder folder = io::hf_folder_load(folder_path, /*load_weights=*/true);
  io::hf_folder_weights_check(folder);
  if (use.parts) {
    model::MemoryPlan plan{use.what + " of model " + folder.path,
                           {{"weights", model::memory_weights_bytes(folder.model_config, m.dtype)}}};
    for (model::MemoryPart& p : use.parts({&folder.model_config, m.dtype, !m.device.is_cuda()}))
      plan.parts.push_back(std::move(p));
    const std::string planned = model::memory_plan_check(plan, m.device);
    if (use.log && (!m.distributed || m.distributed->is_main())) std::fprintf(stderr, "[memory] %s\n", planned.c_str());
  }
  m.tokenizer = io::tokenizer_load(folder_path);
  io::hf_folder_tokenizer_check(folder, *m.tokenizer, io::tokenizer_file(folder_path));
  auto tensors = model::weights_place(folder.weights, m.device, m.dtype, "model " + folder.path, "evaluate");
  folder.weights.clear();
  m.weights = model::llama_weights_from_map(folder.model_config, std::move(tensors));
  m.rope = model::rope_tables_init(folder.model_config);
  return m;
}

EvalModel eval_model_rescaled(const EvalModel& base, const model::ModelConfig& config, const std::string& name) {
  EvalModel m = base;  // device, dtype, tokenizer and process group; the tensors are shared, not copied
  m.path = name;
  m.weights = {config, base.weights.tensors};
  m.rope = model::rope_tables_init(config);
  m.overrides = {};
  return m;
}

void eval_context_warn(const EvalModel& model, int64_t length, const std::string& what) {
  const model::ModelConfig& c = model.weights.config;
  const int64_t context = model::model_config_context_length(c);
  if (length <= context || (model.distributed && !model.distributed->is_main())) return;
  const std::string why =
      c.rope.type == model::RopeType::kDefault
          ? "its native context (max_position_embeddings " + std::to_string(context) + ") and its RoPE is not scaled"
          : "the " + std::to_string(context) + " positions its RoPE scaling (" + model::rope_type_name(c.rope.type) +
                ") targets";
  std::fprintf(stderr, "linear-ard: warning: model %s: %s of %ld tokens go beyond %s: positions past %ld were never "
               "trained, expect degraded scores\n", model.path.c_str(), what.c_str(), static_cast<long>(length),
               why.c_str(), static_cast<long>(context));
}

namespace {

// The final hidden states of ids [B, n] (no logits: the callers project chunks of positions).
torch::Tensor hidden_states(const EvalModel& model, const torch::Tensor& input) {
  model::ForwardOptions options;
  options.compute_logits = false;
  return model::model_forward(model.weights, model.rope, model.overrides, input, options).last_hidden_state;
}

// fp32 logits of positions [s, s + len) of `hidden`.
torch::Tensor logits_chunk(const EvalModel& model, const torch::Tensor& hidden, int64_t s, int64_t len) {
  return model::weights_linear(model.weights, model.overrides, "lm_head", hidden.narrow(1, s, len)).to(torch::kFloat);
}

// 1024 positions x vocab 128k x batch in fp32 is the largest temporary; it bounds the memory.
constexpr int64_t kChunk = 1024;

}  // namespace

TokenScores token_scores_compute(const EvalModel& model, const torch::Tensor& ids, const EvalModel* kl_reference) {
  torch::NoGradGuard no_grad;
  const torch::Tensor input = ids.to(model.device);
  const torch::Tensor hidden = hidden_states(model, input);
  const torch::Tensor hidden_ref = kl_reference ? hidden_states(*kl_reference, ids.to(kl_reference->device)) : torch::Tensor();
  const int64_t n = input.size(1);
  std::vector<torch::Tensor> logprobs, greedy, kl;
  for (int64_t s = 0; s < n - 1; s += kChunk) {
    const int64_t len = std::min(kChunk, n - 1 - s);
    auto logits = logits_chunk(model, hidden, s, len);
    auto target = input.narrow(1, s + 1, len).unsqueeze(-1);
    const auto own = torch::log_softmax(logits, -1);
    logprobs.push_back(own.gather(-1, target).squeeze(-1).cpu());
    greedy.push_back(logits.argmax(-1).eq(target.squeeze(-1)).cpu());
    if (!kl_reference) continue;
    const auto ref = torch::log_softmax(logits_chunk(*kl_reference, hidden_ref, s, len), -1).to(own.device());
    if (ref.size(-1) != own.size(-1))
      throw std::invalid_argument("KL to " + kl_reference->path + ": its vocabulary has " +
                                  std::to_string(ref.size(-1)) + " tokens, " + model.path + "'s " +
                                  std::to_string(own.size(-1)));
    kl.push_back((ref.exp() * (ref - own)).sum(-1).cpu());
  }
  if (logprobs.empty()) {
    const auto none = torch::zeros({ids.size(0), 0});
    return {none, torch::zeros({ids.size(0), 0}, torch::kBool), kl_reference ? none : torch::Tensor()};
  }
  return {torch::cat(logprobs, 1), torch::cat(greedy, 1), kl_reference ? torch::cat(kl, 1) : torch::Tensor()};
}

}  // namespace linear_ard::eval
