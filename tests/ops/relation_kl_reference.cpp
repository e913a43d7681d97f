// relation_kl_dense: softmax relations and their KL built from full n x n matrices, differentiated
// by PyTorch autograd. Rows with no visible key are given finite logits and then zeroed, so that
// neither the KL nor the gradient sees a NaN from softmax over -inf only.
#include "relation_kl_reference.h"

#include <limits>

namespace linear_ard::ops::testing {
namespace {

// [B, 1, n, n] true where key j is visible from query i.
at::Tensor visible_keys(int64_t batch, int64_t n, const std::optional<at::Tensor>& key_mask,
                        bool causal) {
  at::Tensor visible = at::ones({batch, 1, n, n}, at::kBool);
  if (key_mask.has_value()) visible = visible & key_mask->cpu().view({batch, 1, 1, n});
  if (causal) visible = visible & at::ones({n, n}, at::kBool).tril();
  return visible;
}

// Row log-probabilities of softmax(scale X Y^T + M) and the row LSEs; Y's heads are repeated for
// grouped heads. Rows without a visible key get logits 0 (their result is discarded).
std::pair<at::Tensor, at::Tensor> log_relation(const at::Tensor& x, const at::Tensor& y,
                                               double scale, const at::Tensor& visible,
                                               const at::Tensor& has_key) {
  const at::Tensor y_full = y.repeat_interleave(x.size(1) / y.size(1), 1);
  at::Tensor z = scale * at::matmul(x, y_full.transpose(-1, -2));
  z = z.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
  const at::Tensor lse = at::where(has_key.squeeze(-1), z.logsumexp(-1),
                                   -std::numeric_limits<double>::infinity());
  z = at::where(has_key, z, at::zeros({}, z.options()));
  return {at::log_softmax(z, -1), lse};
}

}  // namespace

DenseRelationKL relation_kl_dense(const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
                                  const at::Tensor& x_t, const std::optional<at::Tensor>& y_t,
                                  const std::optional<at::Tensor>& key_mask, bool causal,
                                  double scale_s, double scale_t, const at::Tensor& grad_kl,
                                  at::ScalarType dtype) {
  const int64_t batch = x_s.size(0);
  const int64_t n = x_s.size(2);
  const at::Tensor visible = visible_keys(batch, n, key_mask, causal);
  const at::Tensor has_key = visible.any(-1, /*keepdim=*/true);  // [B, 1, n, 1]

  at::Tensor xs = x_s.detach().cpu().to(dtype).requires_grad_();
  at::Tensor ys = y_s.has_value() ? y_s->detach().cpu().to(dtype).requires_grad_() : xs;
  const at::Tensor xt = x_t.detach().cpu().to(dtype);
  const at::Tensor yt = y_t.has_value() ? y_t->detach().cpu().to(dtype) : xt;

  auto [log_rs, lse_s] = log_relation(xs, ys, scale_s, visible, has_key);
  auto [log_rt, lse_t] = log_relation(xt, yt, scale_t, visible, has_key);
  const at::Tensor zero = at::zeros({}, log_rs.options());
  // Masked entries are -inf in both; zero them before the difference so no NaN reaches autograd.
  const at::Tensor diff = at::where(visible, log_rt, zero) - at::where(visible, log_rs, zero);
  const at::Tensor kl =
      at::where(has_key.squeeze(-1), (log_rt.exp() * diff).sum(-1), zero);
  kl.backward(grad_kl.detach().cpu().to(dtype));

  DenseRelationKL out;
  out.kl = kl.detach();
  out.lse_s = lse_s.detach();
  out.lse_t = lse_t.detach();
  out.dx_s = xs.grad();
  if (y_s.has_value()) out.dy_s = ys.grad();
  return out;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor a64 = a.detach().cpu().to(at::kDouble);
  const at::Tensor b64 = b.detach().cpu().to(at::kDouble);
  const at::Tensor same_inf = a64.isinf() & b64.isinf() & (a64 == b64);
  return at::where(same_inf, at::zeros({}, a64.options()), (a64 - b64).abs()).max().item<double>();
}

}  // namespace linear_ard::ops::testing
