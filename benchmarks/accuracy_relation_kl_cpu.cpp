// accuracy_relation_kl_cpu: the paper's Appendix L table (kernel numerical verification) for the CPU
// operator against the dense fp64 reference.
//
// Forward error: fp32 inputs, mean_i |kl_i - kl_ref_i| / mean_i |kl_ref_i|.
// Backward errors: bf16 inputs (the reference reads the same rounded values), the operator's fp32
// gradient rounded to bf16, over every element of dX (Y is X):
//   mean |g - g_ref| / mean |g_ref|   and   max |g - g_ref| / mean |g_ref|.
// Problem: B = 1, H = 4, d = 64, causal self-relation (X = Y), scale 1/sqrt(d), the student's X the
// teacher's plus 50% noise, upstream gradient 1/n per row (the mean over rows).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "linear_ard/core/float16.h"  // defines: bf16_to_float, float_to_bf16
#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_cases.h"      // defines: relation_kl_appendix_l_spec
#include "linear_ard/core/relation_kl_problem.h"    // defines: RelationKLProblem
#include "linear_ard/core/relation_kl_reference.h"  // defines: relation_kl_reference

namespace {

double mean_abs(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += std::fabs(x);
  return sum / double(v.size());
}

}  // namespace

int main() {
  using namespace linear_ard;
  std::printf("Kernel numerical verification (paper Appendix L), CPU operator vs dense fp64 reference\n");
  std::printf("B = 1, H = 4, d = 64, causal self-relation, student = teacher + 50%% noise, grad_kl = 1/n\n");
  std::printf("forward: fp32 inputs, mean|kl - kl_ref| / mean|kl_ref|\n");
  std::printf("backward: bf16 inputs, dX rounded to bf16; mean|g - g_ref| / mean|g_ref|, "
              "max|g - g_ref| / mean|g_ref|\n\n");
  std::printf("%6s | %22s | %22s | %20s\n", "n", "forward error (1e-7)", "backward mean (1e-4)",
              "backward max (1e-2)");
  for (int64_t n : {256, 512, 1024, 2048, 4096}) {
    RelationKLProblem fp32(relation_kl_appendix_l_spec(n, DType::kF32));
    relation_kl_forward_cpu(fp32.params());
    const RelationKLReference fwd_ref = relation_kl_reference(fp32.params(), false);
    std::vector<double> kl_err(fwd_ref.kl.size());
    for (size_t i = 0; i < kl_err.size(); ++i) kl_err[i] = fp32.kl[i] - fwd_ref.kl[i];
    const double forward_error = mean_abs(kl_err) / mean_abs(fwd_ref.kl);

    RelationKLProblem bf16(relation_kl_appendix_l_spec(n, DType::kBF16));
    for (size_t i = 0; i < bf16.grad_kl.size(); ++i) bf16.grad_kl.set(i, 1.0 / double(n));
    relation_kl_forward_cpu(bf16.params());
    relation_kl_backward_cpu(bf16.params());
    const RelationKLReference bwd_ref = relation_kl_reference(bf16.params(), true);
    std::vector<double> g_err(bwd_ref.dx.size());
    double g_err_max = 0;
    for (size_t k = 0; k < g_err.size(); ++k) {
      const double g = bf16_to_float(float_to_bf16(float(bf16.dx[k])));
      g_err[k] = g - bwd_ref.dx[k];
      g_err_max = std::max(g_err_max, std::fabs(g_err[k]));
    }
    const double g_scale = mean_abs(bwd_ref.dx);
    std::printf("%6lld | %22.2f | %22.2f | %20.2f\n", (long long)n, forward_error * 1e7,
                mean_abs(g_err) / g_scale * 1e4, g_err_max / g_scale * 1e2);
    std::fflush(stdout);
  }
  return 0;
}
