// The relation-KL operator on raw pointers (no libtorch): params struct and entry points.
//
// For each batch b and head h (docs/architecture.md, "The operator's contract"):
//   Z_m = scale_m * X_m Y_m^T + M,  R_m = softmax_rows(Z_m),  m in {student, teacher}
//   M(i,j) = -inf where key j is padding or (causal) j > i
//   kl[i]  = sum_j R_t(i,j) (log R_t(i,j) - log R_s(i,j)),  0 for a row with no visible key
// Backward, with upstream g_i = grad_kl[i]:
//   dZ(i,j) = g_i (R_s(i,j) - R_t(i,j)),  dX_s = scale_s dZ Y_s,  dY_s = scale_s dZ^T X_s
// Non-finite inputs, row by row: a row whose logits over the keys it sees (visible, not past it when
// causal) are not all finite in both models (NaN or Inf in the inputs, a dot product that overflows
// the fp32 accumulation) gets kl, lse_student and lse_teacher NaN, never a finite value; rows that do
// not see the offending key are unaffected, and keys a row does not see are never read. Backward: a
// NaN row's dZ is NaN over the keys it sees (where g_i != 0), so the dX of that row and the dY of
// those keys are NaN. A NaN or Inf in the student's X or Y may also reach gradients whose exact value
// is finite (the gradient GEMMs multiply zero weights by it, as a dense implementation does), and on
// CUDA a row with g_i == 0 may still pass a NaN on (0 x NaN); no gradient is finite where a row it
// depends on through a nonzero g_i is NaN.
// Memory: nothing of size n x n is ever allocated; extra memory is O(n * d) per head.
#pragma once

#include <cstddef>
#include <cstdint>

namespace linear_ard {

// Element type of X and Y (teacher and student share it). Accumulation is always fp32
// (fp64 for kF64, which exists for checks).
enum class DType : int32_t {
  kF32 = 0,
  kBF16 = 1,
  kF16 = 2,
  kF64 = 3,
};

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

// One model's side of the relation: X is [B, heads_x, n, head_dim], Y is [B, heads_y, n, head_dim],
// addressed through element strides (the last axis must be contiguous). heads_x % heads_y == 0 and
// X head h reads Y head h / (heads_x / heads_y) (GQA). Y == X (same pointer and strides) is the
// self-relation of the paper.
struct RelationSide {
  const void* x = nullptr;
  const void* y = nullptr;
  int64_t x_batch_stride = 0;  // elements between batch items of X
  int64_t x_head_stride = 0;   // elements between heads of X
  int64_t x_row_stride = 0;    // elements between sequence positions of X
  int64_t y_batch_stride = 0;
  int64_t y_head_stride = 0;
  int64_t y_row_stride = 0;
  int32_t heads_y = 0;   // heads of Y (divides RelationKLParams::heads)
  int32_t head_dim = 0;  // d of this model (teacher and student may differ)
  float scale = 0.f;     // logit scale, e.g. 1/sqrt(head_dim)
};

// Everything the forward and backward need. Output and gradient buffers are dense row-major.
struct RelationKLParams {
  RelationSide student;
  RelationSide teacher;
  DType dtype = DType::kF32;

  int64_t batch = 0;    // B
  int32_t heads = 0;    // H: heads of X, the same for teacher and student
  int64_t seq_len = 0;  // n: rows (queries) and columns (keys) of every relation

  bool causal = false;
  // Optional key padding mask, [B, n] bytes, nonzero = key visible; nullptr = all visible.
  const uint8_t* key_mask = nullptr;
  int64_t key_mask_batch_stride = 0;

  // Forward outputs, fp32 [B, H, n]: per-row KL and per-row natural-log LSE of each model
  // (-inf for a row with no visible key). The backward reads lse_* back.
  // fp64 rule: for dtype kF64 (checks such as finite differences and torch gradcheck) kl, lse_*,
  // grad_kl, dx and dy all point to double buffers instead (cast the pointers); fp32 outputs would
  // round away what those checks measure. CUDA entry points may refuse kF64.
  float* kl = nullptr;
  float* lse_student = nullptr;
  float* lse_teacher = nullptr;

  // Backward input: fp32 [B, H, n] upstream gradient of kl.
  const float* grad_kl = nullptr;
  // Backward outputs, fp32, overwritten: dx [B, H, n, d_s], dy [B, heads_y_s, n, d_s].
  // dy == nullptr means the student's X and Y are one tensor: the Y gradient is added into dx.
  float* dx = nullptr;
  float* dy = nullptr;

  // CUDA stream (cudaStream_t) for the CUDA entry points; ignored on CPU.
  void* stream = nullptr;
  // CUDA tensor-core kernels' launch order, a scheduling choice that leaves every result as it is:
  // their CTAs start in groups of this many (batch, head) pairs, each group's heaviest tiles (the
  // longest rows and keys of a causal relation) first; 1 = one pair's tiles after another; 0 = the
  // library's choice (relation_kl_cuda.cu). Ignored on CPU.
  int32_t cta_head_group = 0;
};

// Throws std::invalid_argument naming the offending field when the params are inconsistent.
void relation_kl_check(const RelationKLParams& p, bool backward);

// CPU: one fused tiled pass per row block, all cores. Throws std::invalid_argument on bad params.
void relation_kl_forward_cpu(const RelationKLParams& p);
void relation_kl_backward_cpu(const RelationKLParams& p);

// CUDA (defined only when built with CUDA; see LINEAR_ARD_WITH_CUDA).
void relation_kl_forward_cuda(const RelationKLParams& p);
void relation_kl_backward_cuda(const RelationKLParams& p);

}  // namespace linear_ard
