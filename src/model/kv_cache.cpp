// KV cache: concatenation along the sequence axis per layer, or fixed-capacity buffers written in place.
#include "linear_ard/model/kv_cache.h"

#include <stdexcept>

namespace linear_ard::model {

KvCache kv_cache_init(int64_t num_layers) {
  return {std::vector<torch::Tensor>(num_layers), std::vector<torch::Tensor>(num_layers), std::nullopt};
}

int64_t kv_cache_length(const KvCache& cache) {
  return cache.k.empty() || !cache.k.front().defined() ? 0 : cache.k.front().size(2);
}

std::pair<torch::Tensor, torch::Tensor> kv_cache_append(KvCache& cache, int64_t layer,
                                                        const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  auto& ck = cache.k.at(layer);
  auto& cv = cache.v.at(layer);
  if (cache.fixed) {
    ck.index_copy_(2, cache.fixed->position, k);
    cv.index_copy_(2, cache.fixed->position, v);
    return {ck, cv};
  }
  ck = ck.defined() ? torch::cat({ck, k}, 2) : k;
  cv = cv.defined() ? torch::cat({cv, v}, 2) : v;
  return {ck, cv};
}

namespace {

torch::Tensor buffer_from(const torch::Tensor& filled, int64_t capacity) {
  auto sizes = filled.sizes().vec();
  sizes[2] = capacity;
  auto buffer = torch::zeros(sizes, filled.options());
  buffer.narrow(2, 0, filled.size(2)).copy_(filled);
  return buffer;
}

}  // namespace

KvCache kv_cache_fixed(const KvCache& filled, int64_t capacity, const RopeTables& rope) {
  const int64_t length = kv_cache_length(filled);
  if (length == 0 || filled.fixed)
    throw std::invalid_argument("kv_cache_fixed: the cache to copy must be a filled, growing one");
  if (capacity < length)
    throw std::invalid_argument("kv_cache_fixed: capacity " + std::to_string(capacity) + " < the " +
                                std::to_string(length) + " cached tokens");
  if (rope.rope.type == RopeType::kDynamic || rope.rope.type == RopeType::kLongrope)
    throw std::invalid_argument("kv_cache_fixed: a dynamic or longrope RoPE depends on the sequence length");
  KvCache out = kv_cache_init(static_cast<int64_t>(filled.k.size()));
  for (size_t l = 0; l < filled.k.size(); ++l) {
    out.k[l] = buffer_from(filled.k[l], capacity);
    out.v[l] = buffer_from(filled.v[l], capacity);
  }
  const auto index = torch::TensorOptions().dtype(torch::kLong).device(filled.k.front().device());
  const auto key_index = torch::arange(capacity, index);
  out.fixed = KvCacheFixed{torch::full({1}, length, index), key_index,
                           rope_cos_sin(rope, key_index.unsqueeze(0), filled.k.front().scalar_type(), capacity)};
  return out;
}

RopeCosSin kv_cache_fixed_rope(const KvCache& cache) {
  const KvCacheFixed& f = cache.fixed.value();
  return {f.rope.cos.index_select(1, f.position), f.rope.sin_signed.index_select(1, f.position)};
}

torch::Tensor kv_cache_fixed_visible(const KvCache& cache) {
  const KvCacheFixed& f = cache.fixed.value();
  return f.key_index.le(f.position).view({1, 1, 1, -1});
}

}  // namespace linear_ard::model
