// Bad arguments to relation_kl, relation_kl_backward and relation_loss: each is a c10::Error whose
// message names the offending argument, never a crash.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>
#include <limits>
#include <string>

#include "linear_ard/ops/relation_kl.h"    // defines: relation_kl, relation_kl_backward
#include "linear_ard/ops/relation_loss.h"  // defines: relation_loss

namespace linear_ard::ops::testing {
namespace {

void expect_error_naming(const std::function<void()>& call, const std::string& argument) {
  try {
    call();
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    EXPECT_NE(message.find(argument), std::string::npos)
        << "message does not name " << argument << ": " << message;
    return;
  }
  ADD_FAILURE() << "no error for bad " << argument;
}

at::Tensor relation(int64_t batch, int64_t heads, int64_t n, int64_t d,
                    at::ScalarType dtype = at::kFloat) {
  return at::randn({batch, heads, n, d}).to(dtype);
}

class RelationKLChecks : public ::testing::Test {
 protected:
  at::Tensor x_s = relation(2, 4, 7, 8);
  at::Tensor x_t = relation(2, 4, 7, 8);
  at::Tensor kl_of(const at::Tensor& xs, const std::optional<at::Tensor>& ys, const at::Tensor& xt,
                   const std::optional<at::Tensor>& yt,
                   const std::optional<at::Tensor>& mask = std::nullopt,
                   std::optional<double> scale_s = std::nullopt,
                   std::optional<double> scale_t = std::nullopt) {
    return std::get<0>(relation_kl(xs, ys, xt, yt, mask, false, scale_s, scale_t));
  }
};

TEST_F(RelationKLChecks, Ranks) {
  expect_error_naming([&] { kl_of(at::randn({2, 7, 8}), std::nullopt, x_t, std::nullopt); }, "x_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, at::randn({4, 7, 8}), std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, at::randn({2, 4, 7}), x_t, std::nullopt); }, "y_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, at::randn({1, 2, 4, 7, 8})); }, "y_t");
}

TEST_F(RelationKLChecks, MismatchedBatchAndSequence) {
  expect_error_naming([&] { kl_of(x_s, std::nullopt, relation(3, 4, 7, 8), std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, relation(2, 4, 6, 8), std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, relation(1, 4, 7, 8), x_t, std::nullopt); }, "y_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, relation(2, 4, 8, 8)); }, "y_t");
  expect_error_naming([&] { kl_of(x_s, relation(2, 4, 7, 6), x_t, std::nullopt); }, "y_s");
}

TEST_F(RelationKLChecks, Heads) {
  expect_error_naming([&] { kl_of(x_s, relation(2, 3, 7, 8), x_t, std::nullopt); }, "y_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, relation(2, 3, 7, 8)); }, "y_t");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, relation(2, 2, 7, 8), std::nullopt); }, "x_t");
}

TEST_F(RelationKLChecks, Scales) {
  const double inf = std::numeric_limits<double>::infinity();
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, std::nullopt, std::nullopt, 0.0); },
                      "scale_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, std::nullopt, std::nullopt, -1.0); },
                      "scale_s");
  expect_error_naming(
      [&] { kl_of(x_s, std::nullopt, x_t, std::nullopt, std::nullopt, std::nullopt, inf); },
      "scale_t");
  expect_error_naming(
      [&] {
        kl_of(x_s, std::nullopt, x_t, std::nullopt, std::nullopt, std::nullopt,
              std::numeric_limits<double>::quiet_NaN());
      },
      "scale_t");
}

TEST_F(RelationKLChecks, KeyMask) {
  auto with_mask = [&](const at::Tensor& mask) {
    return [&, mask] { kl_of(x_s, std::nullopt, x_t, std::nullopt, mask); };
  };
  expect_error_naming(with_mask(at::ones({2, 6}, at::kBool)), "key_mask");
  expect_error_naming(with_mask(at::ones({2, 7, 1}, at::kBool)), "key_mask");
  expect_error_naming(with_mask(at::ones({2, 7}, at::kFloat)), "key_mask");
  expect_error_naming(with_mask(at::ones({2, 7}, at::TensorOptions().dtype(at::kBool).device(at::kMeta))),
                      "key_mask");
}

TEST_F(RelationKLChecks, TeacherRequiringGrad) {
  const at::Tensor teacher = x_t.clone().requires_grad_();
  expect_error_naming([&] { kl_of(x_s, std::nullopt, teacher, std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, teacher); }, "y_t");
}

TEST_F(RelationKLChecks, EmptyTensors) {
  expect_error_naming([&] { kl_of(relation(0, 4, 7, 8), std::nullopt, relation(0, 4, 7, 8), std::nullopt); },
                      "x_s");
  expect_error_naming([&] { kl_of(relation(2, 4, 0, 8), std::nullopt, relation(2, 4, 0, 8), std::nullopt); },
                      "x_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, relation(2, 4, 7, 0), std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, relation(2, 0, 7, 8), x_t, std::nullopt); }, "y_s");
}

TEST_F(RelationKLChecks, DtypesAndDevices) {
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t.to(at::kDouble), std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, x_s.to(at::kHalf), x_t, std::nullopt); }, "y_s");
  expect_error_naming(
      [&] { kl_of(x_s.to(at::kInt), std::nullopt, x_t.to(at::kInt), std::nullopt); }, "x_s");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t.to(at::kMeta), std::nullopt); }, "x_t");
  expect_error_naming([&] { kl_of(x_s, std::nullopt, x_t, x_t.to(at::kMeta)); }, "y_t");
}

TEST_F(RelationKLChecks, BackwardRowTensors) {
  auto [kl, lse_s, lse_t] = relation_kl(x_s, std::nullopt, x_t, std::nullopt);
  auto backward = [&](const at::Tensor& grad, const at::Tensor& ls, const at::Tensor& lt) {
    return [&, grad, ls, lt] { relation_kl_backward(grad, x_s, std::nullopt, x_t, std::nullopt, ls, lt); };
  };
  expect_error_naming(backward(kl.slice(2, 0, 3), lse_s, lse_t), "grad_kl");
  expect_error_naming(backward(kl, lse_s.to(at::kDouble), lse_t), "lse_s");
  expect_error_naming(backward(kl, lse_s, lse_t.unsqueeze(0)), "lse_t");
}

TEST(RelationLossChecks, NamesTheRelationAndLambda) {
  const at::Tensor q = relation(1, 4, 5, 8);
  const at::Tensor kv = relation(1, 2, 5, 8);
  const RelationQKV student{q, kv, kv};
  expect_error_naming([&] { relation_loss(student, {q, kv, kv.to(at::kDouble)}); }, "v_t");
  expect_error_naming([&] { relation_loss(student, {q, relation(1, 4, 5, 8), kv}); }, "k_t");
  RelationLossOptions negative;
  negative.lambda_k = -1.0;
  expect_error_naming([&] { relation_loss(student, student, negative); }, "lambda_k");
}

}  // namespace
}  // namespace linear_ard::ops::testing
