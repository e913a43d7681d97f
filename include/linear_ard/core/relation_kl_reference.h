// relation_kl_reference: the dense fp64 relation-KL operator that materialises Z and R (tests only).
#pragma once

#include <vector>

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams

namespace linear_ard {

// Results in double, dense row-major with the shapes of the operator's outputs.
struct RelationKLReference {
  std::vector<double> kl;           // [B, H, n]
  std::vector<double> lse_student;  // [B, H, n], -inf for a row with no visible key
  std::vector<double> lse_teacher;  // [B, H, n]
  // [B, H, n]: largest |z| over the row's visible logits of either model, the scale of its rounding.
  std::vector<double> logit_abs_max;
  std::vector<double> dx;  // [B, H, n, d_s]; only with backward
  std::vector<double> dy;  // [B, heads_y_s, n, d_s]; empty when p.dy == nullptr (then folded into dx)
  // dx and dy summed with every term's absolute value, |scale dZ(i,j) Y(j,k)| and so on: each
  // element's rounding error is proportional to it, also where the terms cancel.
  std::vector<double> dx_abs, dy_abs;
};

// Reads the inputs, mask and (with backward) grad_kl that p points to, in any DType, exactly as the
// operator's contract says (grad_kl is double for kF64, as for the operator), the non-finite rule
// included (a row with g_i == 0 contributes no gradient); writes nothing through p. Logits are fp64,
// so inputs that overflow fp32 logits do not overflow here. Memory O(n^2) per (batch, head).
RelationKLReference relation_kl_reference(const RelationKLParams& p, bool backward);

}  // namespace linear_ard
