// lm_head_loss (include/linear_ard/model/lm_head_loss.h): the chunked LM head + cross-entropy as a
// custom autograd function whose forward also forms the gradients.
#include "linear_ard/model/lm_head_loss.h"

#include <torch/autograd.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace linear_ard::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Logits a chunk holds at once: [rows, V] in the model dtype, then as fp32 log-probabilities (in
// bf16 at 2^27: 256 MiB and 512 MiB), large enough that the chunk's GEMMs run at full rate.
constexpr int64_t kChunkLogits = int64_t(1) << 27;

int64_t chunk_rows_for(int64_t positions, int64_t vocab, int64_t requested) {
  if (requested > 0) return requested;
  return std::clamp<int64_t>(kChunkLogits / std::max<int64_t>(vocab, 1), 1, std::max<int64_t>(positions, 1));
}

// What one pass over the chunks gives: per-position CE and, where asked, the loss's gradients of
// the hidden states (model dtype), the weight and the bias (fp32 sums over the chunks).
struct ChunkedCe {
  at::Tensor ce, d_hidden, d_weight, d_bias;
};

// d_weight += dz^T h in fp32: on CUDA 16-bit inputs by cuBLAS with an fp32 output (no rounding per
// chunk), elsewhere in fp32.
void add_outer(at::Tensor& d_weight, const at::Tensor& dz, const at::Tensor& h) {
  if (dz.is_cuda() && dz.scalar_type() != at::kFloat) {
    d_weight.add_(at::mm(dz.t(), h, at::kFloat));
  } else {
    d_weight.addmm_(dz.t().to(at::kFloat), h.to(at::kFloat));
  }
}

// One chunk: logits z = h W^T (+ b) in the model dtype, log-probabilities in fp32, CE of the
// targets; with gradients, dz = coef_i (softmax_i - onehot(t_i)) in the model dtype (coef = each
// position's weight in the loss, 0 where ignored), then d_hidden rows = dz W, d_weight += dz^T h,
// d_bias += sum dz.
void chunk_pass(ChunkedCe& out, const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                const at::Tensor& targets, const at::Tensor& coef, int64_t r0, int64_t rows) {
  const at::Tensor h = hidden.narrow(0, r0, rows);
  const at::Tensor t = targets.narrow(0, r0, rows);
  const at::Tensor valid = t.ne(kLmIgnoreIndex);
  const at::Tensor safe = at::where(valid, t, at::zeros({}, t.options())).unsqueeze(1);
  at::Tensor logp = at::log_softmax(at::linear(h, weight, bias), 1, at::kFloat);
  out.ce.narrow(0, r0, rows).copy_(at::where(valid, logp.gather(1, safe).squeeze(1).neg(), 0.0));
  if (!out.d_hidden.defined() && !out.d_weight.defined() && !out.d_bias.defined()) return;
  at::Tensor p = logp.exp_();
  p.scatter_add_(1, safe, valid.unsqueeze(1).to(at::kFloat).neg());
  at::Tensor dz = at::empty(p.sizes(), hidden.options());
  at::mul_out(dz, p, coef.narrow(0, r0, rows).unsqueeze(1));
  p.reset(), logp.reset();
  if (out.d_hidden.defined()) {
    at::Tensor rows_out = out.d_hidden.narrow(0, r0, rows);
    at::mm_out(rows_out, dz, weight);
  }
  if (out.d_weight.defined()) add_outer(out.d_weight, dz, h);
  if (out.d_bias.defined()) out.d_bias.add_(dz.sum(0, false, at::kFloat));
}

ChunkedCe chunked_ce(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                     const at::Tensor& targets, const at::Tensor& coef, int64_t chunk, bool grad_hidden,
                     bool grad_weight, bool grad_bias) {
  const int64_t n = hidden.size(0);
  const auto f32 = hidden.options().dtype(at::kFloat);
  ChunkedCe out;
  out.ce = at::zeros({n}, f32);
  if (grad_hidden) out.d_hidden = at::empty_like(hidden);
  if (grad_weight) out.d_weight = at::zeros(weight.sizes(), f32);
  if (grad_bias) out.d_bias = at::zeros(bias.sizes(), f32);
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    chunk_pass(out, hidden, weight, bias, targets, coef, r0, std::min(chunk, n - r0));
  }
  return out;
}

// loss = sum_i coef_i CE_i with the gradients formed in the forward (the loss ends the graph): the
// backward scales them by the upstream gradient. Outputs: loss, and CE (not differentiable).
class LmHeadCrossEntropy : public torch::autograd::Function<LmHeadCrossEntropy> {
 public:
  // bias as an optional: autograd's Function records every tensor argument as a variable, and an
  // undefined one (no bias) has no device to record.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias, const at::Tensor& targets,
                               const at::Tensor& coef, int64_t chunk, bool grad_hidden, bool grad_weight,
                               bool grad_bias) {
    ChunkedCe r = chunked_ce(hidden, weight, bias.value_or(at::Tensor()), targets, coef, chunk, grad_hidden,
                             grad_weight, grad_bias);
    ctx->saved_data["d_hidden"] = r.d_hidden;
    ctx->saved_data["d_weight"] = r.d_weight;
    ctx->saved_data["d_bias"] = r.d_bias;
    const at::Tensor loss = at::dot(r.ce, coef);
    ctx->mark_non_differentiable({r.ce});
    return {loss, r.ce};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list grads(9);
    const at::Tensor& g = grad_outputs[0];
    if (!g.defined()) return grads;
    for (auto [slot, name] : {std::pair<size_t, const char*>{0, "d_hidden"}, {1, "d_weight"}, {2, "d_bias"}}) {
      const at::Tensor d = ctx->saved_data[name].toTensor();
      if (d.defined()) grads[slot] = d * g;
    }
    return grads;
  }
};

void check_inputs(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                  const at::Tensor& targets, const at::Tensor& token_weights) {
  constexpr const char* kOp = "lm_head_cross_entropy: ";
  TORCH_CHECK(hidden.dim() == 2 && hidden.is_floating_point(), kOp, "hidden must be [N, h] floating, got ",
              hidden.sizes(), " ", hidden.scalar_type());
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) == hidden.size(1), kOp, "weight must be [V, ", hidden.size(1),
              "], got ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == hidden.scalar_type(), kOp, "weight is ", weight.scalar_type(),
              " but hidden is ", hidden.scalar_type());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0) &&
                                  bias.scalar_type() == weight.scalar_type()),
              kOp, "bias must be [", weight.size(0), "] in the weight's dtype, got ", bias.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0) && targets.scalar_type() == at::kLong, kOp,
              "targets must be [", hidden.size(0), "] int64, got ", targets.sizes(), " ", targets.scalar_type());
  TORCH_CHECK(!token_weights.defined() ||
                  (token_weights.dim() == 1 && token_weights.size(0) == hidden.size(0) &&
                   token_weights.is_floating_point()),
              kOp, "token_weights must be [", hidden.size(0), "] floating, got ", token_weights.sizes());
}

}  // namespace

LmHeadLoss lm_head_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                                 const torch::Tensor& targets, const torch::Tensor& token_weights,
                                 int64_t chunk_rows) {
  check_inputs(hidden, weight, bias, targets, token_weights);
  const int64_t chunk = chunk_rows_for(hidden.size(0), weight.size(0), chunk_rows);
  // Each position's weight in the loss: w_i / sum_j w_j over the counted positions (0 elsewhere).
  at::Tensor w = targets.ne(kLmIgnoreIndex).to(at::kFloat);
  if (token_weights.defined()) w = w * token_weights.to(at::kFloat);
  const at::Tensor coef = (w / w.sum()).contiguous();
  const at::Tensor h = hidden.contiguous(), t = targets.contiguous();
  const bool graph = torch::GradMode::is_enabled();
  const bool grad_hidden = graph && hidden.requires_grad(), grad_weight = graph && weight.requires_grad();
  const bool grad_bias = graph && bias.defined() && bias.requires_grad();
  LmHeadLoss out;
  if (!grad_hidden && !grad_weight && !grad_bias) {
    out.token_ce = chunked_ce(h, weight, bias, t, coef, chunk, false, false, false).ce;
    out.loss = at::dot(out.token_ce, coef);
    return out;
  }
  const variable_list r =
      LmHeadCrossEntropy::apply(h, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt, t, coef,
                                chunk, grad_hidden, grad_weight, grad_bias);
  out.loss = r[0];
  out.token_ce = r[1];
  return out;
}

LmHeadLoss lm_head_loss(const LlamaWeights& weights, const Overrides& overrides, const torch::Tensor& hidden,
                        const torch::Tensor& targets, const torch::Tensor& token_weights) {
  if (overrides.lora.count("lm_head")) {
    throw std::invalid_argument("lm_head_loss: a LoRA adapter on lm_head is not supported");
  }
  const torch::Tensor weight = weights_get(weights, overrides, "lm_head.weight");
  const auto bias = weights_find(weights, overrides, "lm_head.bias");
  const int64_t h = hidden.size(-1);
  return lm_head_cross_entropy(hidden.reshape({-1, h}), weight, bias ? *bias : torch::Tensor(), targets.reshape({-1}),
                               token_weights.defined() ? token_weights.reshape({-1}) : torch::Tensor());
}

int64_t lm_head_chunk_rows(int64_t positions, int64_t vocab) { return chunk_rows_for(positions, vocab, 0); }

}  // namespace linear_ard::model
