// The CPU relation-KL operator against the dense fp64 reference, over fixed and freshly random shapes,
// and on non-finite inputs (NaN, Inf, logits that overflow).
//
// Tolerances. The reference reads the same stored (already rounded) inputs, so bf16/fp16 inputs add no
// error of their own: what differs is fp32 accumulation (unit roundoff u = 2^-24 = 6e-8) against fp64.
// A logit is a d-term dot product, off by about u sqrt(d) |z|; LSE and KL are R-weighted sums of
// logits, so their absolute error scales with the row's largest |z| too. Per row we allow
//   |kl - kl_ref| <= 1e-5 |kl_ref| + 1e-6 sqrt(d) (1 + max|z|)      (about 16 u sqrt(d) |z|)
// and the same for the LSEs. A gradient element sums n terms dZ(i,j) Y(j,k) whose dZ carries the
// relative error of R (about u sqrt(d) max|z|), so each element is compared against the sum of its
// terms' absolute values:
//   |g - g_ref| <= 4 u sqrt(d) (1 + max|z|) sum|terms| + n FLT_MIN
// (the last for sums of terms that fp32 cannot resolve: below its smallest normal number).
// fp64 inputs accumulate in fp64 and round only the fp32 outputs: 1e-6 relative (16 u).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_cases.h"      // defines: relation_kl_describe, relation_kl_huge
#include "linear_ard/core/relation_kl_problem.h"    // defines: RelationKLProblem, RelationKLProblemSpec
#include "linear_ard/core/relation_kl_reference.h"  // defines: relation_kl_reference

namespace linear_ard {
namespace {

constexpr double kGradientTolerance = 4;

// Where the reference is NaN (the non-finite rule) the operator must be NaN. kExact: and nowhere
// else. kMaySpread: a gradient may also be NaN where the reference is finite (a NaN or Inf in the
// student's inputs reaches every gradient it is multiplied into, with zero weights too); the
// forward outputs are still exact.
enum class NanPolicy { kExact, kMaySpread };

// Runs forward and backward of `problem` and checks them against the reference; failures name the spec.
void expect_matches_reference(RelationKLProblem& problem, NanPolicy nan_policy = NanPolicy::kExact) {
  const RelationKLProblemSpec& spec = problem.spec();
  SCOPED_TRACE(relation_kl_describe(spec));
  RelationKLParams& p = problem.params();
  relation_kl_forward_cpu(p);
  relation_kl_backward_cpu(p);
  const RelationKLReference ref = relation_kl_reference(p, true);

  const bool f64 = spec.dtype == DType::kF64;
  const double sqrt_d = std::sqrt(double(std::max(spec.dim_student, spec.dim_teacher)));
  double zmax = 0;
  for (double z : ref.logit_abs_max) zmax = std::max(zmax, z);

  // Relative units: u sqrt(d) (1 + max|z|) for fp32 accumulation, ~fp64 roundoff for kF64.
  const double unit = f64 ? 1e-13 * (1 + zmax) : 6e-8 * sqrt_d * (1 + zmax);
  // fp32 resolves nothing below its smallest normal (the exponential flushes e^-87 and below to 0):
  // with logits of +-80 a gradient element can be a sum of n such terms.
  const double underflow = f64 ? 1e-300 : double(spec.seq_len) * std::numeric_limits<float>::min();
  int reported = 0;
  auto expect_row = [&](const char* what, double got, double want, double row_zmax, size_t row) {
    if (std::isinf(want) || std::isnan(want)) {
      const bool same = std::isnan(want) ? std::isnan(got) : got == want;
      if (!same && reported++ < 5) ADD_FAILURE() << what << "[" << row << "] = " << got << ", want " << want;
      return;
    }
    const double tol = f64 ? 1e-13 * (std::fabs(want) + 1 + row_zmax)
                           : 1e-5 * std::fabs(want) + 1e-6 * sqrt_d * (1 + row_zmax);
    if (!(std::fabs(got - want) <= tol) && reported++ < 5) {
      ADD_FAILURE() << what << "[" << row << "] = " << got << ", reference " << want << ", tolerance " << tol;
    }
  };
  for (size_t r = 0; r < ref.kl.size(); ++r) {
    expect_row("kl", problem.kl[r], ref.kl[r], ref.logit_abs_max[r], r);
    expect_row("lse_student", problem.lse_student[r], ref.lse_student[r], ref.logit_abs_max[r], r);
    expect_row("lse_teacher", problem.lse_teacher[r], ref.lse_teacher[r], ref.logit_abs_max[r], r);
  }

  auto expect_grad = [&](const char* what, const OperatorBuffer& got, const std::vector<double>& want,
                         const std::vector<double>& want_abs) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double worst = 0;
    size_t worst_at = 0, nan_missing = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      if (std::isnan(want[k]) || (nan_policy == NanPolicy::kMaySpread && std::isnan(got[k]))) {
        if (!std::isnan(got[k]) && nan_missing++ == 0) {
          ADD_FAILURE() << what << "[" << k << "] = " << got[k] << ", want NaN (first of the misses)";
        }
        continue;
      }
      const double ratio = std::fabs(got[k] - want[k]) / (unit * want_abs[k] + underflow);
      if (!(ratio <= worst)) {
        worst = ratio;
        worst_at = k;
      }
    }
    EXPECT_LE(worst, kGradientTolerance) << what << "[" << worst_at << "] = " << got[worst_at] << ", reference "
                          << want[worst_at] << ", sum of |terms| " << want_abs[worst_at];
  };
  expect_grad("dx", problem.dx, ref.dx, ref.dx_abs);
  if (!spec.self_relation) expect_grad("dy", problem.dy, ref.dy, ref.dy_abs);
}

void expect_matches_reference(const RelationKLProblemSpec& spec) {
  RelationKLProblem problem(spec);
  expect_matches_reference(problem);
}

RelationKLProblemSpec base_spec(int64_t n, int32_t d, DType dtype) {
  RelationKLProblemSpec s;
  s.seq_len = n;
  s.dim_student = s.dim_teacher = d;
  s.dtype = dtype;
  s.seed = std::random_device{}();
  return s;
}

class RelationKLCpuDType : public ::testing::TestWithParam<DType> {};

TEST_P(RelationKLCpuDType, OddLengthsAndHeadDims) {
  for (int64_t n : {1, 2, 97}) {
    for (int32_t d : {8, 64, 72, 128}) {
      RelationKLProblemSpec s = base_spec(n, d, GetParam());
      s.heads = 2;
      s.heads_y_student = s.heads_y_teacher = 2;
      s.causal = d == 64;
      expect_matches_reference(s);
    }
  }
}

TEST_P(RelationKLCpuDType, LongCausalRow) {
  RelationKLProblemSpec s = base_spec(1025, 64, GetParam());
  s.causal = true;
  expect_matches_reference(s);
}

TEST_P(RelationKLCpuDType, TeacherAndStudentDiffer) {
  RelationKLProblemSpec s = base_spec(130, 72, GetParam());
  s.dim_teacher = 128;
  s.self_relation = false;
  s.heads = 8;
  s.heads_y_student = 2;  // GQA on the student: X head h reads Y head h / 4
  s.heads_y_teacher = 4;
  s.causal = true;
  expect_matches_reference(s);
}

TEST_P(RelationKLCpuDType, EmptyRowsFromMasks) {
  RelationKLProblemSpec s = base_spec(97, 64, GetParam());
  s.batch = 3;
  s.heads = 2;
  s.heads_y_student = s.heads_y_teacher = 2;
  s.causal = true;
  s.mask = KeyMaskKind::kLeading;  // rows before the first visible key see nothing
  s.last_batch_masked = true;      // a batch item with every key padded
  expect_matches_reference(s);
  s.causal = false;
  s.mask = KeyMaskKind::kRandom;
  s.self_relation = false;
  s.heads_y_student = 1;
  expect_matches_reference(s);
}

TEST_P(RelationKLCpuDType, StridedStorage) {
  RelationKLProblemSpec s = base_spec(97, 64, GetParam());
  s.batch = 2;
  s.heads = 4;
  s.heads_y_student = s.heads_y_teacher = 4;
  s.strided = true;  // [B, n, H, d + 3] viewed as [B, H, n, d]
  expect_matches_reference(s);
  s.self_relation = false;
  s.heads_y_student = 2;
  s.causal = true;
  expect_matches_reference(s);
}

TEST_P(RelationKLCpuDType, LargeLogits) {
  RelationKLProblemSpec s = base_spec(200, 64, GetParam());
  s.logit_std = 20;  // logits reach about +-80
  s.heads = 2;
  s.heads_y_student = s.heads_y_teacher = 2;
  s.causal = true;
  expect_matches_reference(s);
  s.self_relation = false;
  s.causal = false;
  expect_matches_reference(s);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, RelationKLCpuDType,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16, DType::kF64),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

// Non-finite inputs, the contract's rule: a row whose visible logits (either model) are not all
// finite has NaN kl, lse_s and lse_t and NaN gradients; keys a row does not see are never read; rows
// with no visible key keep KL 0, LSE -inf. The reference follows the same rule.
class RelationKLCpuNonFinite : public ::testing::TestWithParam<DType> {};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

RelationKLProblemSpec nonfinite_spec(DType dtype) {
  RelationKLProblemSpec s = base_spec(97, 64, dtype);
  s.batch = 2;
  s.heads = 2;
  s.heads_y_student = s.heads_y_teacher = 2;
  s.causal = true;
  return s;
}

// How many of v[begin, begin + count) are NaN.
size_t nan_count(const OperatorBuffer& v, size_t begin, size_t count) {
  size_t nans = 0;
  for (size_t i = begin; i < begin + count; ++i) nans += std::isnan(v[i]) ? 1 : 0;
  return nans;
}

// Row indices (into the [B, H, n] outputs) whose value is NaN.
std::vector<size_t> nan_rows(const OperatorBuffer& v) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) rows.push_back(i);
  }
  return rows;
}

TEST_P(RelationKLCpuNonFinite, NaNInOneTeacherRowPoisonsThatRowOnly) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  s.self_relation = false;  // the teacher's X row 40 meets finite Y rows: only row 40 is affected
  s.heads_y_teacher = 1;
  RelationKLProblem problem(s);
  problem.set_input(true, false, 1, 1, 40, 5, kNaN);
  expect_matches_reference(problem);
  const size_t row = size_t((1 * s.heads + 1) * s.seq_len + 40);
  EXPECT_EQ(nan_rows(problem.kl), std::vector<size_t>{row});
  EXPECT_EQ(nan_rows(problem.lse_teacher), std::vector<size_t>{row});
  EXPECT_EQ(nan_rows(problem.lse_student), std::vector<size_t>{row});
  EXPECT_EQ(nan_count(problem.dx, row * s.dim_student, size_t(s.dim_student)), size_t(s.dim_student));
}

TEST_P(RelationKLCpuNonFinite, NaNTeacherColumnPoisonsEveryRowWithAKey) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  s.mask = KeyMaskKind::kLeading;  // rows before the first visible key see nothing: KL 0 stays
  RelationKLProblem problem(s);
  for (int32_t h = 0; h < s.heads; ++h) {
    for (int64_t i = 0; i < s.seq_len; ++i) problem.set_input(true, false, 0, h, i, 3, kNaN);
  }
  expect_matches_reference(problem);
  const int64_t empty = std::max<int64_t>(1, s.seq_len / 8);
  std::vector<size_t> want;
  for (int64_t o = 0; o < s.heads * s.seq_len; ++o) {
    if (o % s.seq_len >= empty) want.push_back(size_t(o));
  }
  EXPECT_EQ(nan_rows(problem.kl), want);
  EXPECT_EQ(problem.kl[0], 0.0);
  EXPECT_EQ(problem.lse_teacher[0], -kInf);
}

TEST_P(RelationKLCpuNonFinite, AllNaNTeacherGivesNaNNotZero) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  s.causal = false;
  RelationKLProblem problem(s);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int32_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seq_len; ++i)
        for (int32_t k = 0; k < s.dim_teacher; ++k) problem.set_input(true, false, b, h, i, k, kNaN);
  expect_matches_reference(problem);
  EXPECT_EQ(nan_rows(problem.kl).size(), problem.kl.size());
  EXPECT_EQ(nan_rows(problem.dx).size(), problem.dx.size());
}

TEST_P(RelationKLCpuNonFinite, NaNInAStudentRowPoisonsTheRowsThatSeeIt) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  RelationKLProblem problem(s);
  problem.set_input(false, false, 0, 1, 30, 0, kNaN);  // self-relation: X row 30 and key 30
  expect_matches_reference(problem, NanPolicy::kMaySpread);
  // Causal: rows >= 30 of head 1 see key 30, the others do not.
  std::vector<size_t> want;
  for (int64_t i = 30; i < s.seq_len; ++i) want.push_back(size_t(s.seq_len + i));
  EXPECT_EQ(nan_rows(problem.kl), want);
}

TEST_P(RelationKLCpuNonFinite, InfInputsGiveNaN) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  s.self_relation = false;
  s.causal = false;
  RelationKLProblem problem(s);
  problem.set_input(false, false, 0, 0, 11, 2, kInf);   // student X row 11
  problem.set_input(true, true, 1, 1, 7, 4, -kInf);     // teacher key 7: every row of (1, 1) sees it
  expect_matches_reference(problem, NanPolicy::kMaySpread);
  EXPECT_TRUE(std::isnan(problem.kl[11]));
  EXPECT_EQ(nan_count(problem.kl, 3 * size_t(s.seq_len), size_t(s.seq_len)), size_t(s.seq_len));
}

// "A k projection of 3e38": every logit overflows to +inf. The fp64 reference would not overflow at
// 3e38, so the expectation is written out.
TEST_P(RelationKLCpuNonFinite, OverflowingLogitsGiveNaN) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  RelationKLProblem problem(s);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int32_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seq_len; ++i)
        for (int32_t k = 0; k < s.dim_teacher; ++k) problem.set_input(true, false, b, h, i, k, relation_kl_huge(s.dtype));
  relation_kl_forward_cpu(problem.params());
  relation_kl_backward_cpu(problem.params());
  EXPECT_EQ(nan_rows(problem.kl).size(), problem.kl.size());
  EXPECT_EQ(nan_rows(problem.lse_teacher).size(), problem.kl.size());
  EXPECT_EQ(nan_rows(problem.dx).size(), problem.dx.size());
}

// One visible logit overflows to -inf (a hugely negative dot product) while the row's others are
// finite: still not a finite loss.
TEST_P(RelationKLCpuNonFinite, LogitOverflowingToMinusInfGivesNaN) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  s.self_relation = false;
  s.causal = false;
  RelationKLProblem problem(s);
  problem.set_input(true, false, 0, 0, 20, 0, relation_kl_huge(s.dtype));
  for (int64_t j = 0; j < s.seq_len; ++j) problem.set_input(true, true, 0, 0, j, 0, j == 9 ? -relation_kl_huge(s.dtype) : 1e-3);
  relation_kl_forward_cpu(problem.params());
  relation_kl_backward_cpu(problem.params());
  EXPECT_TRUE(std::isnan(problem.kl[20]));
  EXPECT_TRUE(std::isnan(problem.lse_teacher[20]));
  EXPECT_EQ(nan_count(problem.dx, 20 * size_t(s.dim_student), size_t(s.dim_student)), size_t(s.dim_student));
}

// Padding and causally hidden keys are never read: NaN there changes nothing for the rows that do
// not see them (a NaN query row is still NaN: it sees finite keys through its own NaN X).
TEST_P(RelationKLCpuNonFinite, HiddenKeysAreNotRead) {
  RelationKLProblemSpec s = nonfinite_spec(GetParam());
  s.causal = false;
  s.mask = KeyMaskKind::kRandom;
  RelationKLProblem problem(s);
  const uint8_t* mask = problem.params().key_mask;
  int64_t padded = 0;
  while (mask[padded] != 0) ++padded;
  for (int32_t h = 0; h < s.heads; ++h) {
    for (int32_t k = 0; k < s.dim_teacher; ++k) problem.set_input(true, false, 0, h, padded, k, kNaN);
  }
  expect_matches_reference(problem);
  EXPECT_EQ(nan_rows(problem.kl), (std::vector<size_t>{size_t(padded), size_t(s.seq_len + padded)}));

  RelationKLProblemSpec c = nonfinite_spec(GetParam());  // causal: key n - 1 is hidden from rows < n - 1
  RelationKLProblem causal(c);
  causal.set_input(true, false, 0, 0, c.seq_len - 1, 0, kNaN);
  expect_matches_reference(causal);
  EXPECT_EQ(nan_rows(causal.kl), std::vector<size_t>{size_t(c.seq_len - 1)});
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, RelationKLCpuNonFinite,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16, DType::kF64),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

// Shapes, layouts and options drawn fresh each run; the trace prints the seed of a failing draw.
TEST(RelationKLCpu, RandomProblemsMatchReference) {
  const uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                        uint64_t(std::random_device{}());
  std::mt19937_64 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  for (int draw = 0; draw < 48; ++draw) {
    RelationKLProblemSpec s;
    s.seed = rng();
    s.batch = pick({1, 2});
    s.heads = int32_t(pick({1, 2, 4, 8}));
    s.seq_len = pick({1, 2, 3, 31, 64, 65, 97, 130});
    s.dim_student = int32_t(pick({8, 64, 72, 128}));
    s.dim_teacher = pick({0, 1}) ? s.dim_student : int32_t(pick({8, 64, 72, 128}));
    s.dtype = DType(pick({0, 1, 2, 3}));
    s.causal = pick({0, 1});
    s.self_relation = pick({0, 1});
    s.heads_y_student = s.self_relation ? s.heads : int32_t(s.heads / pick({1, int64_t(s.heads)}));
    s.heads_y_teacher = s.self_relation ? s.heads : int32_t(s.heads / pick({1, int64_t(s.heads)}));
    s.strided = pick({0, 1});
    s.mask = KeyMaskKind(pick({0, 1, 2}));
    s.last_batch_masked = s.batch > 1 && pick({0, 1});
    s.logit_std = double(pick({1, 4, 20}));
    expect_matches_reference(s);
    if (HasFailure()) {
      ADD_FAILURE() << "RandomProblemsMatchReference: generator seed " << seed << ", draw " << draw;
      return;
    }
  }
}

// The backward's partial sums are reduced in a fixed order: repeated runs agree to the bit.
TEST(RelationKLCpu, BackwardIsDeterministic) {
  RelationKLProblemSpec s = base_spec(300, 64, DType::kF32);
  s.heads = 4;
  s.heads_y_student = s.heads_y_teacher = 1;
  s.self_relation = false;
  s.causal = true;
  RelationKLProblem problem(s);
  relation_kl_forward_cpu(problem.params());
  relation_kl_backward_cpu(problem.params());
  const std::vector<double> dx = problem.dx.values(), dy = problem.dy.values();
  for (int run = 0; run < 3; ++run) {
    relation_kl_backward_cpu(problem.params());
    EXPECT_EQ(problem.dx.values(), dx);
    EXPECT_EQ(problem.dy.values(), dy);
  }
}

// Identical teacher and student give KL 0 and zero gradient.
TEST(RelationKLCpu, IdenticalModelsGiveZero) {
  RelationKLProblemSpec s = base_spec(97, 64, DType::kF32);
  s.causal = true;
  RelationKLProblem problem(s);
  RelationKLParams p = problem.params();
  p.teacher = p.student;
  relation_kl_forward_cpu(p);
  relation_kl_backward_cpu(p);
  for (double kl : problem.kl.values()) EXPECT_NEAR(kl, 0.0, 1e-6);
  for (double g : problem.dx.values()) EXPECT_NEAR(g, 0.0, 1e-6);
}

}  // namespace
}  // namespace linear_ard
