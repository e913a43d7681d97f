// Loading a model folder for evaluation, and the shared scoring forward.
#include "linear_ard/eval/eval_model.h"

#include <algorithm>
#include <stdexcept>

#include "linear_ard/io/hf_folder.h"      // defines: hf_folder_load
#include "linear_ard/model/device_choice.h"  // defines: device_choice_resolve
#include "linear_ard/model/llama_model.h"  // defines: model_forward
#include "linear_ard/dist/distributed.h"  // defines: distributed_process

namespace linear_ard::eval {

EvalModel eval_model_load(const std::string& path, const std::string& device, const std::string& dtype) {
  const model::DeviceChoice choice = model::device_choice_resolve(device, dtype);
  EvalModel m;
  m.path = path;
  m.device_name = choice.device_name;
  m.dtype_name = choice.dtype_name;
  m.device = choice.device;
  m.dtype = choice.dtype;
  m.distributed = dist::distributed_process(choice.device);
  if (m.distributed) m.device = m.distributed->device();

  io::HfFolder folder = io::hf_folder_load(path, /*load_weights=*/true);
  std::map<std::string, torch::Tensor> tensors;
  for (auto& [name, t] : folder.weights) tensors[name] = t.to(m.device, m.dtype);
  folder.weights.clear();
  m.weights = model::llama_weights_from_map(folder.model_config, std::move(tensors));
  m.rope = model::rope_tables_init(folder.model_config);
  m.tokenizer = io::tokenizer_load(path);
  return m;
}

TokenScores token_scores_compute(const EvalModel& model, const torch::Tensor& ids) {
  torch::NoGradGuard no_grad;
  model::ForwardOptions options;
  options.compute_logits = false;
  const torch::Tensor input = ids.to(model.device);
  const torch::Tensor hidden = model::model_forward(model.weights, model.rope, model.overrides, input,
                                                    options).last_hidden_state;
  const int64_t n = input.size(1);
  // 1024 positions x vocab 128k x batch in fp32 is the largest temporary; it bounds the memory.
  constexpr int64_t chunk = 1024;
  std::vector<torch::Tensor> logprobs, greedy;
  for (int64_t s = 0; s < n - 1; s += chunk) {
    const int64_t len = std::min(chunk, n - 1 - s);
    auto logits = model::weights_linear(model.weights, model.overrides, "lm_head",
                                        hidden.narrow(1, s, len)).to(torch::kFloat);
    auto target = input.narrow(1, s + 1, len).unsqueeze(-1);
    logprobs.push_back(torch::log_softmax(logits, -1).gather(-1, target).squeeze(-1).cpu());
    greedy.push_back(logits.argmax(-1).eq(target.squeeze(-1)).cpu());
  }
  if (logprobs.empty())
    return {torch::zeros({ids.size(0), 0}), torch::zeros({ids.size(0), 0}, torch::kBool)};
  return {torch::cat(logprobs, 1), torch::cat(greedy, 1)};
}

}  // namespace linear_ard::eval
