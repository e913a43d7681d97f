// Defines relation_kl_dense: the test oracle for the ops, relation KL computed by PyTorch autograd
// on materialised n x n matrices, and max_abs_diff for comparing against it.
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace linear_ard::ops::testing {

struct DenseRelationKL {
  at::Tensor kl;     // [B, H, n]
  at::Tensor lse_s;  // [B, H, n], -inf for a row with no visible key
  at::Tensor lse_t;
  at::Tensor dx_s;  // gradient of sum(grad_kl * kl); holds the Y part too for a self-relation
  at::Tensor dy_s;  // undefined for a self-relation
};

// Evaluates the contract of docs/architecture.md ("The operator's contract") densely in `dtype`
// (kDouble for the oracle; the inputs' own dtype for the same-dtype baseline of the tolerance rule).
DenseRelationKL relation_kl_dense(const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
                                  const at::Tensor& x_t, const std::optional<at::Tensor>& y_t,
                                  const std::optional<at::Tensor>& key_mask, bool causal,
                                  double scale_s, double scale_t, const at::Tensor& grad_kl,
                                  at::ScalarType dtype);

// max |a - b| in fp64, treating equal infinities (empty rows' LSE) as equal.
double max_abs_diff(const at::Tensor& a, const at::Tensor& b);

}  // namespace linear_ard::ops::testing
