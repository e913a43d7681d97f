// Defines relation_loss: the paper's overall objective (Eq. overall_loss), a lambda-weighted sum of
// the Q/Q, K/K and V/V relation KLs, each a mean of per-row KL over valid rows, heads and batch.
#pragma once

#include <ATen/Tensor.h>

#include <optional>

namespace linear_ard::ops {

// One model's post-RoPE projections of the distilled layer: q [B, H_q, n, d], k and v
// [B, H_kv, n, d] (any strides with a contiguous last dim).
struct RelationQKV {
  at::Tensor q;
  at::Tensor k;
  at::Tensor v;
};

struct RelationLossOptions {
  std::optional<at::Tensor> key_mask;  // [B, n] bool, true = real token; nullopt: no padding
  bool causal = false;
  double lambda_q = 1.0;  // weights >= 0; a relation with weight 0 is not computed
  double lambda_k = 1.0;
  double lambda_v = 1.0;
  bool deterministic = false;  // each relation's backward gives the same bits on every run (relation_kl)
};

// float32 (float64 for float64 inputs), on the inputs' device.
struct RelationLoss {
  at::Tensor total;            // scalar, sum_r lambda_r L_r; differentiable in the student
  at::Tensor relation_losses;  // [3]: unweighted L_q, L_k, L_v; 0 where lambda_r = 0
};

// Valid rows are real query positions (key_mask true, all rows without a mask): such a row always
// sees at least one key (itself). A batch with no valid row gives a loss of 0. Teacher tensors
// must not require grad. Goes through the dispatcher (op linear_ard::relation_loss).
RelationLoss relation_loss(const RelationQKV& student, const RelationQKV& teacher,
                           const RelationLossOptions& options = {});

// Mean of kl [B, H, n] over the valid rows of key_mask (see relation_loss), heads and batch.
at::Tensor relation_kl_row_mean(const at::Tensor& kl, const std::optional<at::Tensor>& key_mask);

}  // namespace linear_ard::ops
