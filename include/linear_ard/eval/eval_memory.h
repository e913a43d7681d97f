// eval_memory: the memory each scorer needs beside a model's weights, planned from config.json's
// sizes and the command's own (context lengths, batch, prompt lengths, tokens to generate) before
// the model is loaded; eval_model_load checks the plan (weights included) against the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/model/memory_fit.h"
#include "linear_ard/model/model_config.h"

namespace linear_ard::eval {

// The sizes a plan is made for: `dtype` on the CPU or not (the CPU's decode copies one more layer
// of KV cache per step).
struct EvalMemoryTarget {
  const model::ModelConfig* config = nullptr;
  torch::ScalarType dtype = torch::kFloat;
  bool cpu = true;
};

// Perplexity windows of up to `ctx` tokens, `batch` per forward: the forward, and the fp32 logits
// of a chunk of 1024 positions (twice, with a KL reference beside them).
std::vector<model::MemoryPart> eval_memory_ppl(const EvalMemoryTarget& t, int64_t ctx, int64_t batch, bool kl);

// Loglikelihood requests of up to `tokens` tokens, `batch` per forward.
std::vector<model::MemoryPart> eval_memory_tasks(const EvalMemoryTarget& t, int64_t tokens, int64_t batch);

// Greedy generation of `new_tokens` after a prompt of up to `length` tokens (one at a time): the KV
// cache of length + new_tokens positions, the prompt's forward and its last logits; with the
// texts of `prompts` prompts of that length kept in host memory (about 8 bytes a token: text and ids).
std::vector<model::MemoryPart> eval_memory_generate(const EvalMemoryTarget& t, int64_t length, int64_t new_tokens,
                                                    int64_t prompts);

// The largest of `candidates` (the scorers of one command run one at a time), by total bytes.
std::vector<model::MemoryPart> eval_memory_largest(const std::vector<std::vector<model::MemoryPart>>& candidates);

}  // namespace linear_ard::eval
