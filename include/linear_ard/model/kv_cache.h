// Per-layer cache of post-RoPE keys and values for incremental decoding.
#pragma once

#include <utility>
#include <vector>

#include <torch/torch.h>

namespace linear_ard::model {

// k[l], v[l]: [B, Hkv, T, d] for layer l, T tokens seen so far. Keys are cached after RoPE, so a
// length-dependent RoPE (dynamic, longrope) keeps the rotation each key was computed with, as HF's
// DynamicCache does.
struct KvCache {
  std::vector<torch::Tensor> k, v;
};

KvCache kv_cache_init(int64_t num_layers);
// Tokens cached (0 when empty).
int64_t kv_cache_length(const KvCache& cache);
// Appends this step's k/v of `layer`; returns the full keys and values to attend over.
std::pair<torch::Tensor, torch::Tensor> kv_cache_append(KvCache& cache, int64_t layer,
                                                        const torch::Tensor& k,
                                                        const torch::Tensor& v);

}  // namespace linear_ard::model
