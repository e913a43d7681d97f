// relation_loss against the paper's overall loss evaluated densely: per relation, the mean of
// per-row KL over valid rows (real query positions), heads and batch; lambda-weighted sum.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <array>
#include <random>
#include <string>

#include "linear_ard/ops/relation_loss.h"  // defines: relation_loss, RelationQKV
#include "relation_kl_reference.h"         // defines: relation_kl_dense, max_abs_diff

namespace linear_ard::ops::testing {
namespace {

struct Projections {
  RelationQKV student;
  RelationQKV teacher;
};

Projections projections_make(int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t n,
                             int64_t d) {
  auto make = [&](int64_t heads, bool requires_grad) {
    return at::randn({batch, heads, n, d}).requires_grad_(requires_grad);
  };
  return {{make(heads_q, true), make(heads_kv, true), make(heads_kv, true)},
          {make(heads_q, false), make(heads_kv, false), make(heads_kv, false)}};
}

// The dense loss of one relation and the student's gradient of lambda * loss, in fp64.
struct DenseTerm {
  double loss;
  at::Tensor grad;
};

DenseTerm dense_term(const at::Tensor& student, const at::Tensor& teacher,
                     const std::optional<at::Tensor>& key_mask, bool causal, double lambda) {
  const int64_t batch = student.size(0), heads = student.size(1), n = student.size(2);
  const at::Tensor valid = key_mask.has_value()
                               ? key_mask->to(at::kDouble).view({batch, 1, n}).expand({batch, heads, n})
                               : at::ones({batch, heads, n}, at::kDouble);
  const double rows = std::max(1.0, valid.sum().item<double>());
  const double scale = 1.0 / std::sqrt(double(student.size(3)));
  const DenseRelationKL dense = relation_kl_dense(student, std::nullopt, teacher, std::nullopt,
                                                  key_mask, causal, scale, scale,
                                                  lambda * valid / rows, at::kDouble);
  return {(dense.kl * valid).sum().item<double>() / rows, dense.dx_s};
}

uint64_t reseed() {
  const uint64_t seed = std::random_device()();
  at::manual_seed(seed);
  return seed;
}

TEST(RelationLoss, MatchesDenseLossAndGradients) {
  SCOPED_TRACE("seed " + std::to_string(reseed()));
  const int64_t batch = 3, n = 37;
  Projections p = projections_make(batch, 4, 2, n, 16);
  at::Tensor key_mask = at::rand({batch, n}) > 0.25;
  key_mask[0].slice(0, 0, 6).fill_(false);
  RelationLossOptions options;
  options.key_mask = key_mask;
  options.causal = true;
  options.lambda_q = 1.0;
  options.lambda_k = 0.5;
  options.lambda_v = 2.0;

  const RelationLoss loss = relation_loss(p.student, p.teacher, options);
  loss.total.backward();

  const std::array<at::Tensor, 3> students = {p.student.q, p.student.k, p.student.v};
  const std::array<at::Tensor, 3> teachers = {p.teacher.q, p.teacher.k, p.teacher.v};
  const std::array<double, 3> lambdas = {options.lambda_q, options.lambda_k, options.lambda_v};
  double total = 0.0;
  for (size_t r = 0; r < 3; ++r) {
    const DenseTerm term = dense_term(students[r], teachers[r], key_mask, true, lambdas[r]);
    total += lambdas[r] * term.loss;
    // fp32 inputs, fp32 accumulation over at most n = 37 keys: a few fp32 ulps of O(1) values.
    EXPECT_NEAR(loss.relation_losses[r].item<double>(), term.loss, 1e-5) << "relation " << r;
    EXPECT_LE(max_abs_diff(students[r].grad(), term.grad), 1e-5) << "relation " << r;
  }
  EXPECT_NEAR(loss.total.item<double>(), total, 1e-5);
}

// A relation with lambda = 0 is not computed: its tensors are not even looked at.
TEST(RelationLoss, SkipsZeroWeightRelations) {
  SCOPED_TRACE("seed " + std::to_string(reseed()));
  Projections p = projections_make(2, 4, 2, 9, 8);
  p.teacher.k = at::randn({2, 3, 9, 8});  // would fail validation if the K/K relation ran
  RelationLossOptions options;
  options.lambda_k = 0.0;
  const RelationLoss loss = relation_loss(p.student, p.teacher, options);
  loss.total.backward();
  EXPECT_EQ(loss.relation_losses[1].item<double>(), 0.0);
  EXPECT_FALSE(p.student.k.grad().defined());
  EXPECT_NEAR(loss.total.item<double>(),
              (loss.relation_losses[0] + loss.relation_losses[2]).item<double>(), 1e-6);
}

// Without a mask every row is valid; a batch that is all padding gives 0, not NaN.
TEST(RelationLoss, UnmaskedMeanAndAllPadding) {
  SCOPED_TRACE("seed " + std::to_string(reseed()));
  Projections p = projections_make(2, 2, 2, 11, 8);
  const at::Tensor kl = at::rand({2, 2, 11});
  EXPECT_NEAR(relation_kl_row_mean(kl, std::nullopt).item<double>(), kl.mean().item<double>(), 1e-7);

  RelationLossOptions options;
  options.key_mask = at::zeros({2, 11}, at::kBool);
  const RelationLoss loss = relation_loss(p.student, p.teacher, options);
  loss.total.backward();
  EXPECT_EQ(loss.total.item<double>(), 0.0);
  EXPECT_TRUE(at::all(p.student.q.grad() == 0).item<bool>());
}

}  // namespace
}  // namespace linear_ard::ops::testing
