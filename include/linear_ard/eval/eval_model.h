// EvalModel: an HF model folder loaded for evaluation (frozen weights on a device in a dtype, its
// RoPE tables and tokenizer), and token_scores_compute, the one forward every scorer builds on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/eval/eval_memory.h"
#include "linear_ard/io/tokenizer.h"
#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::dist {
class Distributed;
}  // namespace linear_ard::dist

namespace linear_ard::eval {

struct EvalModel {
  std::string path;
  std::string device_name;  // "cpu" or "cuda"
  std::string dtype_name;   // "fp32" or "bf16"
  torch::Device device = torch::kCPU;
  torch::ScalarType dtype = torch::kFloat;
  model::LlamaWeights weights;
  model::RopeTables rope;
  model::Overrides overrides;  // empty when loaded: evaluation reads the checkpoint as saved (a
                               // restore run's validation puts its trainables here)
  std::shared_ptr<const io::Tokenizer> tokenizer;  // shared by eval_model_rescaled's models
  // Under torchrun (WORLD_SIZE > 1): this process's rank; the scorers split their windows, requests
  // or prompts over the ranks and gather the scores, so every rank returns the whole result.
  const dist::Distributed* distributed = nullptr;
};

// What a command will run on a model beside holding its weights, for the memory plan: its name
// with its sizes ("eval passkey at lengths 300, 1000000") and its parts (eval_memory's).
struct EvalMemoryUse {
  std::string what;
  std::function<std::vector<model::MemoryPart>(const EvalMemoryTarget&)> parts;
  bool log = false;  // the plan's line ("[memory] ... needs an estimated ...") on stderr
};

// Loads `path` (config, weights, tokenizer): a folder, or a hub name in the local Hugging Face cache
// (io::model_path_resolve). device: cpu, cuda or auto (cuda when available);
// dtype: fp32, bf16 or auto (bf16 on cuda, fp32 on cpu). Throws std::invalid_argument for a bad
// device/dtype name or a cuda request without a CUDA device, and an error naming the file, key or
// tensor for weights that disagree with config.json (io::hf_folder_weights_check), a tokenizer
// larger than the embedding, weights that do not fit the device's free memory or hold NaN/Inf
// (model::weights_place). With `use`, the plan of the weights and use's parts is checked against
// the device's free memory (model::memory_plan_check) before anything is placed. Under torchrun the process joins its process group here
// (dist::distributed_process) and loads onto its own GPU (LOCAL_RANK).
EvalModel eval_model_load(const std::string& path, const std::string& device = "auto",
                          const std::string& dtype = "auto", const EvalMemoryUse& use = {});

// The model `base` holds under another RoPE: the same weights (shared, not copied), tokenizer, device
// and dtype, its config `config` (the base's with another rope and max_position_embeddings, e.g. a
// scaled student's: what eval_context_warn and the RoPE read). Its `path` is `name`, which messages
// print (e.g. "models/x with yarn x4"). Nothing is loaded or copied: the tensors stay `base`'s.
EvalModel eval_model_rescaled(const EvalModel& base, const model::ModelConfig& config, const std::string& name);

// A `linear-ard: warning:` on stderr (rank 0 only) when `what` (e.g. "perplexity windows") of
// `length` tokens go beyond the context the model's RoPE was trained or scaled for
// (model_config_context_length): legal, but the scores measure untrained positions.
void eval_context_warn(const EvalModel& model, int64_t length, const std::string& what);

// One batched forward of ids [B, n] (int64, right-padded rows are fine: causal attention keeps
// padding out of earlier positions). Returns, for t < n - 1, log p(ids[b, t+1] | ids[b, :t+1]) in
// fp32 and whether ids[b, t+1] is the argmax there. The vocabulary projection runs in chunks of
// positions so no [B, n, vocab] fp32 tensor exists at long context.
struct TokenScores {
  torch::Tensor logprob;  // [B, n - 1] fp32, CPU
  torch::Tensor greedy;   // [B, n - 1] bool, CPU
  torch::Tensor kl;       // [B, n - 1] fp32, CPU: KL(p_reference || p_model) in nats; only with a reference
};
// With `kl_reference` (e.g. the native model, on any device) also the KL of its next-token
// distributions to the model's at each position, from the same forward of the model: how far a
// restored model has moved on the same tokens. Throws std::invalid_argument naming both when their
// vocabularies differ in size.
TokenScores token_scores_compute(const EvalModel& model, const torch::Tensor& ids,
                                 const EvalModel* kl_reference = nullptr);


}  // namespace linear_ard::eval
