// Per-layer cache of post-RoPE keys and values for incremental decoding.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/model/rope.h"

namespace linear_ard::model {

// Fixed-capacity mode (CUDA-graph decoding, decode_graph.h): the buffers are [B, Hkv, capacity, d],
// written in place at `position` (a [1] int64 tensor on the cache's device: the next token's index)
// and read whole, through the mask key_index <= position, so that no shape or address changes from
// one step to the next. cos/sin of every position are computed once, before any step.
struct KvCacheFixed {
  torch::Tensor position;   // [1] int64
  torch::Tensor key_index;  // [capacity] int64, 0..capacity-1
  RopeCosSin rope;          // [1, capacity, rotary_dim]
};

// k[l], v[l]: [B, Hkv, T, d] for layer l, T tokens seen so far. Keys are cached after RoPE, so a
// length-dependent RoPE (dynamic, longrope) keeps the rotation each key was computed with, as HF's
// DynamicCache does.
struct KvCache {
  std::vector<torch::Tensor> k, v;
  std::optional<KvCacheFixed> fixed;  // set: fixed-capacity mode
};

KvCache kv_cache_init(int64_t num_layers);
// Tokens cached (0 when empty; in fixed-capacity mode the capacity: what position does not tell
// without a host sync).
int64_t kv_cache_length(const KvCache& cache);
// Appends this step's k/v of `layer`; returns the full keys and values to attend over (in fixed
// mode the whole buffers, written at `position`).
std::pair<torch::Tensor, torch::Tensor> kv_cache_append(KvCache& cache, int64_t layer,
                                                        const torch::Tensor& k,
                                                        const torch::Tensor& v);

// A fixed-capacity copy of a filled cache (its tokens first, room for capacity - length more);
// cos/sin of positions 0..capacity-1 from `rope` in the cache's dtype. Throws when capacity < length
// or the RoPE depends on the sequence length (dynamic, longrope: its rotation changes as the cache grows).
KvCache kv_cache_fixed(const KvCache& filled, int64_t capacity, const RopeTables& rope);
// Fixed mode, one token at `position`: its cos/sin ([1, 1, rotary_dim]) and the mask of the keys it
// sees ([1, 1, 1, capacity], bool).
RopeCosSin kv_cache_fixed_rope(const KvCache& cache);
torch::Tensor kv_cache_fixed_visible(const KvCache& cache);

}  // namespace linear_ard::model
