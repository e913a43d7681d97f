// The relation-KL operator's case table, shared by everything that checks or times it: the CPU tests
// (tests/core), the operator harness relation_kl_ops (tests/core: --backend cpu|cuda --mode
// test|perf, which is the GPU check and the C++ benchmark), the accuracy benchmark and dev/cuda.
// Like RelationKLProblem, for tests and benchmarks only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "linear_ard/core/relation_kl_problem.h"  // defines: RelationKLProblemSpec, RelationKLProblem

namespace linear_ard {

// One line naming every field of a spec that shapes a case (dtype, sizes, layout, mask, logit size).
std::string relation_kl_describe(const RelationKLProblemSpec& s);

// The reference cases (against the fp64 reference): every dtype x d in {64, 80, 96, 128, 256} x
// n in {1, 97, 333} x causal; GQA, X != Y, d_s != d_t, strided views, masks with empty rows, an
// all-padding batch item, logits to +-80 (bf16, fp16); n = 1000 and 1537. quick: four small cases
// (for compute-sanitizer).
std::vector<RelationKLProblemSpec> relation_kl_reference_cases(bool quick);

// Non-finite inputs (the contract's rule): a case plants NaN, Inf or huge values into a problem.
struct RelationKLNonFiniteCase {
  const char* name;
  RelationKLProblemSpec spec;
  std::function<void(RelationKLProblem&)> plant;
  // Gradients may also be NaN where the reference is finite (a NaN in the student's inputs reaches
  // every gradient GEMM term it is in, zero-weighted ones too); else NaN exactly where it is NaN.
  bool grad_may_spread;
  // Without a reference (the fp64 one does not overflow where fp32 does): these output rows, and
  // the dX rows of the same indices, must be NaN; empty = compare with the reference.
  std::vector<int64_t> nan_rows;
};
std::vector<RelationKLNonFiniteCase> relation_kl_nonfinite_cases();

// An input value whose logits overflow the accumulation (fp32, or fp64 for kF64); fp16 cannot hold
// one: Inf.
double relation_kl_huge(DType dtype);

// Rows that see a single key (R_s = R_t = 1: an exact zero gradient). relation_kl_single_key_prepare
// hides every key but only_visible_key when it is >= 0, sets the upstream gradient to 1 on the rows
// that see one key and 0 elsewhere, and returns how many rows that is.
struct RelationKLSingleKeyCase {
  const char* name;
  RelationKLProblemSpec spec;
  int64_t only_visible_key;
};
std::vector<RelationKLSingleKeyCase> relation_kl_single_key_cases();
int relation_kl_single_key_prepare(RelationKLProblem& problem, int64_t only_visible_key);

// The timed cases. CUDA: B = 1, H = 32, d = 128, causal bf16 self-relation (the benchmark's shape,
// benchmarks/authors/README.md), n = 1K..16K. CPU: B = 1, H = 4, d = 64, causal fp32, n = 512..4096.
std::vector<RelationKLProblemSpec> relation_kl_perf_cases(bool cuda);

// The paper's Appendix L problem: B = 1, H = 4, d = 64, causal self-relation, student = teacher +
// 50 % noise.
RelationKLProblemSpec relation_kl_appendix_l_spec(int64_t n, DType dtype);

}  // namespace linear_ard
