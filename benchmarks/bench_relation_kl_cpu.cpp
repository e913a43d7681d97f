// bench_relation_kl_cpu: time and FLOP/s of the CPU relation-KL operator, and its speed-up over the
// dense fp64 reference in the same process.
//
// FLOP count, per visible logit (causal: n (n + 1) / 2 per head): the forward's two logit GEMMs
// (teacher and student) are 2 x 2d = 4d; the backward recomputes both (4d) and does dX and dY (4d),
// 8d; together 12d, the paper's count. Exponentials and the rest are not counted.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_problem.h"    // defines: RelationKLProblem
#include "linear_ard/core/relation_kl_reference.h"  // defines: relation_kl_reference

namespace {

double seconds(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Best of `reps` timings: the least disturbed by other work on the machine.
double best_seconds(const std::function<void()>& run, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) best = std::min(best, seconds(run));
  return best;
}

}  // namespace

int main() {
  using namespace linear_ard;
  const int reference_max_n = 1024;  // the dense fp64 reference is O(n^2 d) scalar code: keep it short
  std::printf("relation-KL CPU operator, fp32 inputs, B = 1, H = 4, d = 64, causal, %d OpenMP threads\n",
              omp_get_max_threads());
  std::printf("FLOPs per visible logit: forward 4d, backward 8d, fwd+bwd 12d; best of 3 runs\n");
  std::printf("%6s | %9s %8s | %9s %8s | %9s %8s | %12s\n", "n", "fwd ms", "GFLOP/s", "bwd ms", "GFLOP/s",
              "f+b ms", "GFLOP/s", "vs fp64 ref");
  for (int64_t n : {512, 1024, 2048, 4096}) {
    RelationKLProblemSpec spec;
    spec.heads = 4;
    spec.heads_y_student = spec.heads_y_teacher = 4;
    spec.seq_len = n;
    spec.dim_student = spec.dim_teacher = 64;
    spec.causal = true;
    RelationKLProblem problem(spec);
    RelationKLParams& p = problem.params();
    const double logits = double(spec.batch) * spec.heads * double(n) * double(n + 1) / 2;
    const double d = spec.dim_student;
    const double fwd = best_seconds([&] { relation_kl_forward_cpu(p); }, 3);
    const double bwd = best_seconds([&] { relation_kl_backward_cpu(p); }, 3);
    const double both = fwd + bwd;
    char ratio[32] = "-";
    if (n <= reference_max_n) {
      const double ref = seconds([&] { relation_kl_reference(p, true); });
      std::snprintf(ratio, sizeof ratio, "%.1fx", ref / both);
    }
    std::printf("%6lld | %9.2f %8.1f | %9.2f %8.1f | %9.2f %8.1f | %12s\n", (long long)n, fwd * 1e3,
                4 * d * logits / fwd * 1e-9, bwd * 1e3, 8 * d * logits / bwd * 1e-9, both * 1e3,
                12 * d * logits / both * 1e-9, ratio);
  }
  return 0;
}
