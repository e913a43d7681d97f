// Greedy decoding with a KV cache (prefill, then one token per step), as HF generate(do_sample=False).
#pragma once

#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::model {

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  // A row stops at any of these; afterwards it is filled with pad_token_id, as HF does.
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = 0;
};

// Wall-clock split of one generation: the prefill forward (which yields the first token) and the
// one-token decode steps after it. Each step ends in a host sync, so the times hold on CUDA too.
struct GenerateStats {
  int64_t prefill_tokens = 0;  // B * n
  double prefill_seconds = 0;
  int64_t decode_tokens = 0;   // tokens fed after the prefill: B per step
  double decode_seconds = 0;
};

// prompt [B, n] int64 (unpadded, equal lengths) -> [B, n + generated]; stops early when every row
// has produced an EOS. `stats`, when given, receives the timings (added to what it holds). On CUDA
// the decode steps replay one captured CUDA graph over a fixed-capacity KV cache (same tokens as the
// eager loop up to bf16 rounding; LINEAR_ARD_NO_CUDA_GRAPHS=1 runs the eager loop).
torch::Tensor model_generate_greedy(const LlamaWeights& weights, const RopeTables& rope,
                                    const Overrides& overrides, const torch::Tensor& prompt,
                                    const GenerateOptions& options, GenerateStats* stats = nullptr);

}  // namespace linear_ard::model
