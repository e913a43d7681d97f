// Defines the linear_ard op library: the schemas of relation_kl, relation_kl_backward and
// relation_loss (docs/operator-api.md documents them). Kernels register in their own files.
#include <torch/library.h>

TORCH_LIBRARY(linear_ard, m) {
  // Per-row KL(R_t || R_s) of the relation softmax(scale X Y^T + M) of student and teacher, and
  // each model's row LSE (natural log) that the backward reads; all [B, H, n], float32
  // (float64 for float64 inputs).
  m.def(
      "relation_kl(Tensor x_s, Tensor? y_s, Tensor x_t, Tensor? y_t, Tensor? key_mask=None, "
      "bool causal=False, float? scale_s=None, float? scale_t=None, bool deterministic=False) "
      "-> (Tensor kl, Tensor lse_s, Tensor lse_t)");
  // Gradient of sum(grad_kl * kl) for the student: [dx_s] for a self-relation (y_s = None, the Y
  // gradient added in), else [dx_s, dy_s]; in the student's dtype. deterministic: the same bits on
  // every run (the forward's flag, kept for its backward by autograd).
  m.def(
      "relation_kl_backward(Tensor grad_kl, Tensor x_s, Tensor? y_s, Tensor x_t, Tensor? y_t, "
      "Tensor lse_s, Tensor lse_t, Tensor? key_mask=None, bool causal=False, "
      "float? scale_s=None, float? scale_t=None, bool deterministic=False) -> Tensor[]");
  // The paper's overall loss sum_r lambda_r L_KL(R_t^r, R_s^r) over the Q/Q, K/K, V/V
  // self-relations, and the unweighted per-relation losses [L_q, L_k, L_v] (0 where lambda_r = 0).
  m.def(
      "relation_loss(Tensor q_s, Tensor k_s, Tensor v_s, Tensor q_t, Tensor k_t, Tensor v_t, "
      "Tensor? key_mask=None, bool causal=False, float lambda_q=1.0, float lambda_k=1.0, "
      "float lambda_v=1.0, bool deterministic=False) -> (Tensor loss, Tensor relation_losses)");
}
