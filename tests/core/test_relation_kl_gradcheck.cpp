// Gradients of the CPU operator against central finite differences of the fp64 reference's loss.
//
// Inputs are fp64, so the operator accumulates in fp64 and writes fp64 gradients (the header's kF64
// rule); the reference loss L = sum_i g_i kl_i is exact to ~1e-15, so with step h = 1e-5 the
// difference quotient is good to ~h^2 |L'| + 1e-15/h, about 1e-10. Tolerance: 1e-8 of the gradient's
// largest element plus 1e-7 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_problem.h"    // defines: RelationKLProblem
#include "linear_ard/core/relation_kl_reference.h"  // defines: relation_kl_reference

namespace linear_ard {
namespace {

double reference_loss(const RelationKLParams& p) {
  const RelationKLReference r = relation_kl_reference(p, false);
  const double* g = reinterpret_cast<const double*>(p.grad_kl);  // kF64: grad_kl is double
  double loss = 0;
  for (size_t i = 0; i < r.kl.size(); ++i) loss += g[i] * r.kl[i];
  return loss;
}

// Perturbs `coords` random elements of one student tensor and compares the quotient with `grad`.
void check_tensor(RelationKLProblem& problem, bool y_tensor, const OperatorBuffer& grad, int coords,
                  std::mt19937_64& rng) {
  RelationKLParams& p = problem.params();
  const RelationSide& s = p.student;
  double* base = const_cast<double*>(static_cast<const double*>(y_tensor ? s.y : s.x));
  const int64_t heads = y_tensor ? s.heads_y : p.heads;
  double scale = 0;
  for (double g : grad.values()) scale = std::max(scale, std::fabs(g));
  for (int c = 0; c < coords; ++c) {
    const int64_t b = std::uniform_int_distribution<int64_t>(0, p.batch - 1)(rng);
    const int64_t h = std::uniform_int_distribution<int64_t>(0, heads - 1)(rng);
    const int64_t i = std::uniform_int_distribution<int64_t>(0, p.seq_len - 1)(rng);
    const int64_t k = std::uniform_int_distribution<int64_t>(0, s.head_dim - 1)(rng);
    const int64_t at = y_tensor ? b * s.y_batch_stride + h * s.y_head_stride + i * s.y_row_stride + k
                                : b * s.x_batch_stride + h * s.x_head_stride + i * s.x_row_stride + k;
    const double h_step = 1e-5, saved = base[at];
    base[at] = saved + h_step;
    const double up = reference_loss(p);
    base[at] = saved - h_step;
    const double down = reference_loss(p);
    base[at] = saved;
    const double quotient = (up - down) / (2 * h_step);
    const double got = grad[size_t(((b * heads + h) * p.seq_len + i) * s.head_dim + k)];
    EXPECT_NEAR(got, quotient, 1e-8 * scale + 1e-7 * std::fabs(quotient))
        << (y_tensor ? "dy" : "dx") << " at b=" << b << " h=" << h << " i=" << i << " k=" << k;
  }
}

void gradcheck(RelationKLProblemSpec spec) {
  spec.dtype = DType::kF64;
  spec.seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(spec.seed));
  RelationKLProblem problem(spec);
  relation_kl_forward_cpu(problem.params());
  relation_kl_backward_cpu(problem.params());
  std::mt19937_64 rng(spec.seed);
  check_tensor(problem, false, problem.dx, 12, rng);
  if (!spec.self_relation) check_tensor(problem, true, problem.dy, 12, rng);
}

TEST(RelationKLGradcheck, SelfRelationCausalMasked) {
  RelationKLProblemSpec s;
  s.batch = 2;
  s.heads = 2;
  s.heads_y_student = s.heads_y_teacher = 2;
  s.seq_len = 19;
  s.dim_student = 6;
  s.dim_teacher = 9;
  s.causal = true;
  s.mask = KeyMaskKind::kLeading;
  s.logit_std = 2;
  gradcheck(s);
}

TEST(RelationKLGradcheck, SeparateYWithGqa) {
  RelationKLProblemSpec s;
  s.heads = 4;
  s.heads_y_student = 2;
  s.heads_y_teacher = 1;
  s.seq_len = 70;  // two key tiles
  s.dim_student = 5;
  s.dim_teacher = 5;
  s.self_relation = false;
  s.strided = true;
  s.mask = KeyMaskKind::kRandom;
  s.logit_std = 3;
  gradcheck(s);
}

}  // namespace
}  // namespace linear_ard
