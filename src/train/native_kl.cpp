// native_kl: KL(native || student) and both perplexities over blocks, the vocabulary projected in
// chunks of positions.
#include "linear_ard/train/native_kl.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "linear_ard/model/llama_model.h"  // defines: model_forward

namespace linear_ard::train {
namespace {

// Positions per lm_head chunk: a batch of 8 x 256 positions x a 128k vocabulary in fp32 is 1 GiB,
// the largest temporary here (the hidden states are small beside it).
constexpr int64_t kChunk = 256;

struct Sums {
  double kl = 0, nll = 0, native_nll = 0;
};

torch::Tensor final_hidden(const model::LlamaWeights& weights, const model::RopeTables& rope,
                           const model::Overrides& overrides, const torch::Tensor& ids) {
  model::ForwardOptions options;
  options.compute_logits = false;
  return model::model_forward(weights, rope, overrides, ids, options).last_hidden_state;
}

// One batch of ids [B, n]: the sums over its predicted positions.
Sums batch_sums(const model::LlamaWeights& weights, const model::RopeTables& native_rope,
                const model::RopeTables& student_rope, const model::Overrides& overrides, const torch::Tensor& ids) {
  const torch::Tensor h_native = final_hidden(weights, native_rope, model::Overrides{}, ids);
  const torch::Tensor h_student = final_hidden(weights, student_rope, overrides, ids);
  const int64_t n = ids.size(1);
  Sums sums;
  for (int64_t s = 0; s < n - 1; s += kChunk) {
    const int64_t len = std::min(kChunk, n - 1 - s);
    const auto log_softmax = [&](const torch::Tensor& h, const model::Overrides& o) {
      return torch::log_softmax(model::weights_linear(weights, o, "lm_head", h.narrow(1, s, len)).to(torch::kFloat), -1);
    };
    const torch::Tensor native = log_softmax(h_native, model::Overrides{});
    const torch::Tensor student = log_softmax(h_student, overrides);
    const torch::Tensor target = ids.narrow(1, s + 1, len).unsqueeze(-1);
    sums.kl += (native.exp() * (native - student)).sum(-1).to(torch::kDouble).sum().item<double>();
    sums.nll -= student.gather(-1, target).to(torch::kDouble).sum().item<double>();
    sums.native_nll -= native.gather(-1, target).to(torch::kDouble).sum().item<double>();
  }
  return sums;
}

void blocks_check(const std::vector<std::vector<int32_t>>& blocks, int64_t batch_size) {
  if (blocks.empty()) throw std::invalid_argument("native_kl_evaluate: no blocks");
  if (batch_size < 1) throw std::invalid_argument("native_kl_evaluate: batch_size must be >= 1");
  const size_t n = blocks.front().size();
  if (n < 2) throw std::invalid_argument("native_kl_evaluate: blocks of " + std::to_string(n) + " token(s) predict nothing");
  for (const auto& b : blocks)
    if (b.size() != n)
      throw std::invalid_argument("native_kl_evaluate: blocks of " + std::to_string(b.size()) + " and " +
                                  std::to_string(n) + " tokens; all must be of one length");
}

}  // namespace

NativeKl native_kl_evaluate(const model::LlamaWeights& weights, const model::RopeTables& native_rope,
                            const model::RopeTables& student_rope, const model::Overrides& student_overrides,
                            const std::vector<std::vector<int32_t>>& blocks, int64_t batch_size,
                            const torch::Device& device) {
  blocks_check(blocks, batch_size);
  torch::NoGradGuard no_grad;
  const auto n = static_cast<int64_t>(blocks.front().size());
  Sums total;
  for (size_t b0 = 0; b0 < blocks.size(); b0 += static_cast<size_t>(batch_size)) {
    const size_t b1 = std::min(blocks.size(), b0 + static_cast<size_t>(batch_size));
    auto ids = torch::empty({static_cast<int64_t>(b1 - b0), n}, torch::kLong);
    auto* p = ids.data_ptr<int64_t>();
    for (size_t b = b0; b < b1; ++b)
      for (int32_t id : blocks[b]) *p++ = id;
    const Sums s = batch_sums(weights, native_rope, student_rope, student_overrides, ids.to(device));
    total.kl += s.kl;
    total.nll += s.nll;
    total.native_nll += s.native_nll;
  }
  NativeKl r;
  r.tokens = static_cast<int64_t>(blocks.size()) * (n - 1);
  const auto tokens = static_cast<double>(r.tokens);
  r.kl = total.kl / tokens;
  r.ppl = std::exp(total.nll / tokens);
  r.native_ppl = std::exp(total.native_nll / tokens);
  return r;
}

}  // namespace linear_ard::train
