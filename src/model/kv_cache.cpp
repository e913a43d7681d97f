// KV cache: concatenation along the sequence axis, per layer.
#include "linear_ard/model/kv_cache.h"

namespace linear_ard::model {

KvCache kv_cache_init(int64_t num_layers) {
  return {std::vector<torch::Tensor>(num_layers), std::vector<torch::Tensor>(num_layers)};
}

int64_t kv_cache_length(const KvCache& cache) {
  return cache.k.empty() || !cache.k.front().defined() ? 0 : cache.k.front().size(2);
}

std::pair<torch::Tensor, torch::Tensor> kv_cache_append(KvCache& cache, int64_t layer,
                                                        const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  auto& ck = cache.k.at(layer);
  auto& cv = cache.v.at(layer);
  ck = ck.defined() ? torch::cat({ck, k}, 2) : k;
  cv = cv.defined() ? torch::cat({cv, v}, 2) : v;
  return {ck, cv};
}

}  // namespace linear_ard::model
